"""The system routes: liveness, readiness and metrics (no key needed, but for metrics when
HINDSIGHT_API_METRICS_ADMIN_ONLY is set), and the console's front door."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse

from hindsight import __version__
from hindsight.api.deps import EngineDep
from hindsight.engine.errors import RETRY_AFTER
from hindsight.metrics import exposition

router = APIRouter(tags=["system"])


@router.get("/health", summary="Liveness and configuration summary (no key needed)")
async def health(eng: EngineDep) -> dict:
    """Never touches the database: a live process with a dead database is still live (and
    restarts an embedded one by itself); /health/ready says whether requests can be served."""
    s = eng.settings
    rt = eng.rt if eng.started else None
    return {
        "status": "ok",
        "version": __version__,
        "role": s.role,
        "database": "external" if s.database_url else "embedded",
        "read_replicas": len(s.read_database_urls),
        "embedding_model": rt.embedder.name if rt else None,
        "mcp": s.mcp_enabled,
        "auth": s.auth_enabled,
        # how MCP clients without a key sign in: our own authorization server, an external issuer's, or not at all
        "oauth": ("external" if s.oauth_issuer else "built-in") if s.oauth_resource else None,
        "llm": {p: rt.llm.model_name(p) for p in ("retain", "reflect")} if rt else None,
        "mode": "llm" if rt and rt.llm.enabled else "offline (no LLM configured)",
        "worker": {"concurrency": s.worker_concurrency, "running": len(eng.worker.running) if rt else 0},
    }


@router.get(
    "/metrics",
    summary="Prometheus metrics (open, or admin key with HINDSIGHT_API_METRICS_ADMIN_ONLY)",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request, eng: EngineDep):
    if eng.settings.metrics_admin_only:
        (await eng.authenticate(request.headers.get("authorization"))).require_admin()
    await eng.lifecycle.observe()
    body, content_type = exposition()
    return Response(body, media_type=content_type)


@router.get("/", include_in_schema=False)
async def home():
    return RedirectResponse("/ui/")


@router.get("/health/ready", summary="Readiness: the database answers a ping (no key needed)")
@router.get("/ready", include_in_schema=False)
async def ready(eng: EngineDep):
    """200 only while requests can be served; 503 with the reason otherwise (starting, the
    embedded PostgreSQL restarting, the database not answering within PING_TIMEOUT). The
    `status` field is what Hindsight's clients read."""
    problem = await eng.lifecycle.database_problem()
    database = "external" if eng.settings.database_url else "embedded"
    if problem is None:
        return {"ready": True, "status": "ready", "database": database}
    return JSONResponse(
        {"ready": False, "status": "unavailable", "database": database, "reason": problem},
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER)},
    )
