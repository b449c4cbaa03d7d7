"""Every REST error is JSON `{error, message, field?}` with a 4xx status (503 with Retry-After
while the database cannot be reached); nothing leaks a trace."""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from ..engine.errors import HindsightError, InvalidArgument, unavailable
from ..engine.validation import describe

log = logging.getLogger("hindsight.api")


class ErrorBody(BaseModel):
    """Every error answer's body."""

    error: str = Field(description="What kind of error: invalid_argument, not_found, forbidden, ...")
    message: str = Field(description="What is wrong, naming the argument at fault first.")
    field: str | None = Field(None, description="The argument at fault, when there is one.")
    detail: str | None = Field(
        None, description="The message again, on /v1/default routes (Hindsight's clients read it)."
    )


# Documented on every route, so the OpenAPI document says what each answer may be.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": what}
    for status, what in (
        (400, "Malformed request (e.g. JSON that does not parse)"),
        (401, "Missing or invalid API key"),
        (403, "The key may not do this, or the request came from a refused origin or host"),
        (404, "Not found in this bank"),
        (409, "Conflicts with what exists"),
        (413, "Too large"),
        (422, "Invalid argument (the message names it)"),
        (503, "Stopping, or the database is unavailable: retry after Retry-After seconds"),
    )
}


def _json(request: Request, body: dict, status: int, headers: dict | None = None) -> JSONResponse:
    """Hindsight's clients read an error's text from `detail` (FastAPI's own field): the
    `/v1/default` routes carry it beside ours."""
    if request.url.path.startswith("/v1/default/"):
        body = {**body, "detail": body["message"]}
    return JSONResponse(body, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(HindsightError)
    async def _hindsight(request: Request, exc: HindsightError):
        return _json(request, exc.to_dict(), exc.status, exc.http_headers() or None)

    async def _database(request: Request, exc: Exception):
        """The errors that may mean the database cannot be reached, registered by class so
        that Starlette answers them without re-raising (no traceback for an outage)."""
        error = unavailable(exc)
        if error is None:
            return _internal(exc)
        return await _hindsight(request, error)

    for kind in (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError):
        app.add_exception_handler(kind, _database)

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
        return _internal(exc)


def _internal(exc: Exception) -> JSONResponse:
    log.error("unexpected error", exc_info=exc)
    return JSONResponse({"error": "internal", "message": "internal error; see the server log"}, status_code=500)
