"""A `worker` process (HINDSIGHT_API_ROLE=worker) runs the queue and the scheduler and answers
only its probes and metrics: liveness, readiness and /metrics. Any other request is a 404 that
says so (raised to error_answers.py), so a load balancer or a person who sends it a memory
request by mistake is told where it went rather than served by a process not sized for it."""

from __future__ import annotations

from hindsight.engine.errors import NotFound

WORKER_PATHS = frozenset({"/health", "/health/live", "/health/ready", "/ready", "/metrics"})


class WorkerPaths:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] not in WORKER_PATHS:
            raise NotFound(
                "this server process runs the worker role (HINDSIGHT_API_ROLE=worker): it serves only "
                + ", ".join(sorted(WORKER_PATHS))
            )
        await self.app(scope, receive, send)
