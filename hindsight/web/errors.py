"""Every HTTP error answer is JSON `{error, message, field?}` with its status (503 with Retry-After
while the database cannot be reached or the server is stopping; 502, 503 or 504 with `cause` when
the LLM failed), made in one place (`answer`) whichever layer found the error: a route, the
server shell, the MCP router, a stopping server. Nothing leaks a trace."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from starlette.responses import JSONResponse

from hindsight.engine.errors import RETRY_AFTER, HindsightError, InvalidArgument


class InvalidHeader(InvalidArgument):
    """A request header naming something invalid (X-Bank-Id): the request itself is malformed."""

    status = 400


class MethodNotAllowed(HindsightError):
    status = 405
    code = "method_not_allowed"

    def __init__(self, message: str, allow: str):
        super().__init__(message)
        self.allow = allow

    def http_headers(self) -> dict[str, str]:
        return {**super().http_headers(), "Allow": self.allow}


class Stopping(HindsightError):
    """The server is stopping (a drain, server/drain.py): the request was not run, or was rolled back."""

    status = 503
    code = "unavailable"
    retry_after = RETRY_AFTER

    def __init__(self) -> None:
        super().__init__("the server is stopping; send the request again shortly")

    def http_headers(self) -> dict[str, str]:
        return {**super().http_headers(), "Connection": "close"}


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
