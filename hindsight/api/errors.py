"""Every REST error is JSON `{error, message, field?}` with a 4xx status; nothing leaks a trace."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..engine.errors import HindsightError, InvalidArgument
from ..engine.validation import describe

log = logging.getLogger("hindsight.api")


def _json(request: Request, body: dict, status: int, headers: dict | None = None) -> JSONResponse:
    """Hindsight's clients read an error's text from `detail` (FastAPI's own field): the
    `/v1/default` routes carry it beside ours."""
    if request.url.path.startswith("/v1/default/"):
        body = {**body, "detail": body["message"]}
    return JSONResponse(body, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(HindsightError)
    async def _hindsight(request: Request, exc: HindsightError):
        headers = {"WWW-Authenticate": 'Bearer realm="hindsight"'} if exc.status == 401 else None
        return _json(request, exc.to_dict(), exc.status, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        errors = exc.errors()
        status = 400 if any(e.get("type") == "json_invalid" for e in errors) else 422
        return _json(request, InvalidArgument(*describe(errors, http=True)).to_dict(), status)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _json(request, {"error": code, "message": str(exc.detail)}, exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception):
        log.exception("unexpected error")
        return JSONResponse({"error": "internal", "message": "internal error; see the server log"}, status_code=500)
