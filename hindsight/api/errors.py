"""The REST face's exception handlers: whatever a route, FastAPI's validation or the database
raises is answered by web/errors.answer (JSON, a 4xx, or a 503 for an outage); a bug is a 500
that says to read the server log, its traceback logged once, never sent."""

from __future__ import annotations

import logging

import asyncpg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from hindsight.engine.errors import BadRequest, HindsightError, InvalidArgument, NotFound, known, unavailable
from hindsight.engine.rules.validation import describe
from hindsight.llm import LLMError
from hindsight.web.errors import MethodNotAllowed, answer

log = logging.getLogger("hindsight.api")


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
