"""Every REST error is JSON `{error, message, field?}` with a 4xx status (503 with Retry-After
while the database cannot be reached; 502, 503 or 504 with `cause` when the LLM failed); nothing
leaks a trace."""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from hindsight.engine.errors import (
    BadRequest,
    HindsightError,
    InvalidArgument,
    MethodNotAllowed,
    NotFound,
    known,
    unavailable,
)
from hindsight.engine.rules.validation import describe
from hindsight.llm import LLMError

log = logging.getLogger("hindsight.api")


class ErrorBody(BaseModel):
    """Every error answer's body."""

    error: str = Field(description="What kind of error: invalid_argument, not_found, forbidden, ...")
    message: str = Field(description="What is wrong, naming the argument at fault first.")
    field: str | None = Field(None, description="The argument at fault, when there is one.")
    cause: str | None = Field(
        None,
        description="llm_unavailable only: how the LLM failed (rate_limit, timeout, provider_error, malformed, "
        "truncated, empty, too_long).",
    )
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
        (503, "Stopping, the database is unavailable, or the LLM is rate-limiting: retry after Retry-After seconds"),
    )
}
# Routes that call the LLM in the request (reflect) add these.
LLM_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": what}
    for status, what in (
        (
            502,
            "The LLM failed or its answer was unusable (`cause`: provider_error, malformed, truncated, empty, too_long)",
        ),
        (504, "The LLM did not answer in time (`cause`: timeout)"),
    )
}


def answer(exc: HindsightError, path: str) -> JSONResponse:
    """The one HTTP answer for an error, whichever layer found it (a route, the edge, the MCP
    router, a stopping server). Hindsight's clients read an error's text from `detail`
    (FastAPI's own field): the `/v1/default` routes carry it beside ours."""
    body = exc.to_dict()
    if path.startswith("/v1/default/"):
        body["detail"] = body["message"]
    return JSONResponse(body, status_code=exc.status, headers=exc.http_headers() or None)


async def send_error(exc: HindsightError, scope, receive, send) -> None:
    """`answer`, sent from plain ASGI code (no FastAPI request around it)."""
    await answer(exc, scope.get("path", ""))(scope, receive, send)


def install(app: FastAPI) -> None:
    @app.exception_handler(HindsightError)
    async def _hindsight(request: Request, exc: HindsightError):
        return answer(exc, request.url.path)

    async def _database(request: Request, exc: Exception):
        """The errors that may mean the database cannot be reached, registered by class so
        that Starlette answers them without re-raising (no traceback for an outage)."""
        error = unavailable(exc)
        if error is None:
            return _internal(exc)
        return answer(error, request.url.path)

    for kind in (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError):
        app.add_exception_handler(kind, _database)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        errors = exc.errors()
        message, field = describe(errors, http=True)
        malformed = any(e.get("type") == "json_invalid" for e in errors)
        error = BadRequest(message, field) if malformed else InvalidArgument(message, field)
        return answer(error, request.url.path)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException):
        if isinstance(exc.__cause__, HindsightError):  # FastAPI wraps what reading the body raised
            return answer(exc.__cause__, request.url.path)
        error = {404: NotFound, 405: MethodNotAllowed}.get(exc.status_code)
        if error is NotFound:
            return answer(NotFound(str(exc.detail)), request.url.path)
        if error is MethodNotAllowed:
            allow = (exc.headers or {}).get("Allow", "")
            return answer(MethodNotAllowed(str(exc.detail), allow), request.url.path)
        body = {"error": "http_error", "message": str(exc.detail)}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(LLMError)
    async def _llm(request: Request, exc: LLMError):
        """An LLM failure that no engine function named (reflect raises LLMUnavailable itself)."""
        error = known(exc)
        assert error is not None
        return answer(error, request.url.path)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception):
        return _internal(exc)


def _internal(exc: Exception) -> JSONResponse:
    log.error("unexpected error", exc_info=exc)
    return JSONResponse({"error": "internal", "message": "internal error; see the server log"}, status_code=500)
