"""Version and liveness probes where Hindsight's clients look for them. Readiness,
`/health/ready`, is the server's own (server/app.py), with the `status` field these clients read."""

from __future__ import annotations

import time

from fastapi import APIRouter

from hindsight import __version__
from hindsight.api.compat import schemas as M
from hindsight.api.deps import EngineDep

router = APIRouter(tags=["Hindsight-compatible: system"])


@router.get("/version", response_model=M.Version, summary="API version and features")
@router.get("/v1/version", response_model=M.Version, include_in_schema=False)
async def version(eng: EngineDep):
    return M.Version(
        api_version=__version__,
        features=M.Features(
            mcp=eng.settings.mcp_enabled,
            worker=eng.settings.worker_concurrency > 0,
            llm_trace=True,
        ),
    )


@router.get("/health/live", response_model=M.Liveness, summary="Liveness: the process answers (no database access)")
async def live(eng: EngineDep):
    return M.Liveness(version=__version__, uptime_seconds=round(time.time() - eng.lifecycle.started_at, 3))
