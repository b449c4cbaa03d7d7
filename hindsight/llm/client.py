"""Every LLM call goes through here: litellm, a concurrency limit, retries, JSON output validated
against a pydantic model (repaired or re-asked, never silently dropped), and the tokens and cost
of each call recorded per bank and operation.

An LLM misbehaves in a handful of ways, and each failed call is classified as one `cause`
(CAUSES): the provider rate-limits (`rate_limit`), does not answer in time (`timeout`), fails or
refuses (`provider_error`), or answers with something that cannot be used: not JSON or not the
schema (`malformed`), cut off at its token limit (`truncated`), nothing (`empty`), or more than
the caller's bound (`too_long`). Each failed call is one log line naming the operation, bank,
model and cause, and one count of `hindsight_llm_calls` with that cause as its outcome. What
finally fails is an LLMError carrying the cause, which every face reports as such
(engine/errors.LLMUnavailable) and the worker treats by cause (a rate limit waits, it does not
use up an attempt).

Waits: a provider's `Retry-After` (seconds or an HTTP date, or `retry-after-ms`) sets the next
wait; otherwise exponential backoff. All of it stays within a deadline: in an operation, its
wall-clock limit (the worker sets it with `deadline()`); in a request (reflect), one
`HINDSIGHT_API_LLM_TIMEOUT` for the whole call, retries included, and a request never sleeps
longer than REQUEST_WAIT_LIMIT for a rate limit: it answers 503 with Retry-After instead.

litellm is imported on first use only: it costs seconds and ~150 MB, which offline servers
should not pay.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import math
import os
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from hindsight.db.sql import Q
from hindsight.metrics import LLM_CALLS, LLM_COST, LLM_SECONDS, LLM_TOKENS

log = logging.getLogger("hindsight.llm")
M = TypeVar("M", bound=BaseModel)

Cause = Literal["rate_limit", "timeout", "provider_error", "malformed", "truncated", "empty", "too_long"]
CAUSES: tuple[str, ...] = get_args(Cause)
# What each cause means, in the words every face uses (REST bodies, JSON-RPC errors, logs).
CAUSE_WORDS = {
    "rate_limit": "the LLM provider is rate-limiting requests",
    "timeout": "the LLM did not answer in time",
    "provider_error": "the LLM provider failed",
    "malformed": "the LLM's answer was malformed",
    "truncated": "the LLM's answer was cut off at its token limit",
    "empty": "the LLM's answer was empty",
    "too_long": "the LLM's answer was too long",
}
# A request (not an operation) waits at most this long for a provider's Retry-After; a longer
# wait is the caller's to make (503 with Retry-After), not a connection held open meanwhile.
REQUEST_WAIT_LIMIT = 10.0
# A rate limit without Retry-After: the wait before trying again, in a request or an operation.
RATE_LIMIT_WAIT = 10.0
# No call is started with less time than this left before the deadline.
MIN_CALL_SECONDS = 1.0

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("llm_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """LLM calls made in this context (and in tasks it starts) finish, retries and waits
    included, within `seconds` from now: the worker wraps each operation attempt in its
    wall-clock limit, so a Retry-After that does not fit becomes a deferral, not a timeout."""
    token = _deadline.set(asyncio.get_running_loop().time() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


class LLMError(Exception):
    """The LLM could not produce a usable answer: `cause` is one of CAUSES, `retry_after` the
    seconds the provider asked to wait (rate limits), `message` the words for a client."""

    def __init__(self, cause: str, message: str, *, model: str = "", retry_after: float | None = None):
        super().__init__(message)
        self.cause = cause
        self.message = message
        self.model = model
        self.retry_after = retry_after


class Rejected(ValueError):
    """An answer that parses but cannot be used; `cause` is malformed, empty or too_long. The
    `check` functions of callers raise it (a plain ValueError counts as malformed)."""

    def __init__(self, cause: str, reason: str):
        super().__init__(reason)
        self.cause = cause
        self.reason = reason


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Call:
    """One call to the provider, as the request log records it."""

    purpose: str
    model: str
    bank_id: str | None
    operation: str
    operation_id: Any
    attempt: int
    duration_ms: int
    status: str  # "ok", or the failure's cause (CAUSES)
    error: str | None
    messages: list[dict]
    answer: str | None


@dataclass
class Failure:
    """One failed call: its cause, what a client may be told, what the log adds, whether trying
    again can help, and the wait the provider asked for."""

    cause: str
    reason: str  # for clients: our words, never the provider's text
    detail: str = ""  # for the log: the provider's text (the API key redacted)
    retryable: bool = True
    retry_after: float | None = None


def _litellm():
    # Never fetch the model price map from the internet at import; use the bundled copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.drop_params = True  # providers without response_format still answer
    # Its loggers come with a handler of their own (its format, INFO on stdout, where `hindsight
    # mcp` speaks the protocol): without it their records reach ours (hindsight/logs.py).
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).setLevel(logging.WARNING)
    return litellm


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def loads_object(text: str) -> Any:
    """The JSON in an answer, with light repair (code fences, prose around the object)."""
    text = (text or "").strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    cleaned = _FENCE.sub("", text).strip()
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start != -1 and end > start:
        cleaned = cleaned[start : end + 1]
    return json.loads(cleaned)


def parse_retry_after(headers: Any, now: datetime | None = None) -> float | None:
    """Seconds to wait from a response's headers: `retry-after-ms` (OpenAI, Azure), else
    `Retry-After` as seconds or as an HTTP date; None when absent or unreadable."""
    if not headers:
        return None
    get = headers.get if hasattr(headers, "get") else dict(headers).get
    ms = get("retry-after-ms") or get("Retry-After-Ms")
    if ms is not None:
        try:
            value = float(ms) / 1000
            if math.isfinite(value) and value >= 0:
                return value
        except ValueError:
            pass
    raw = get("retry-after") or get("Retry-After")
    if raw is None:
        return None
    raw = str(raw).strip()
    try:
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _response_headers(exc: BaseException) -> Any:
    """The provider's response headers, where litellm keeps them on its exceptions."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if headers:
            return headers
    return None


def classify(exc: BaseException, lib: Any, secret: str | None = None) -> Failure:
    """What a call's exception means (see the module docstring)."""
    detail = f"{type(exc).__name__}: {str(exc)[:300]}"
    if secret:
        detail = detail.replace(secret, "***")
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    if isinstance(exc, lib.RateLimitError) or status == 429:
        wait = parse_retry_after(_response_headers(exc))
        return Failure("rate_limit", "HTTP 429", detail, True, wait)
    if isinstance(exc, (lib.Timeout, TimeoutError)) or status == 408:
        return Failure("timeout", "no answer in time", detail)
    if isinstance(exc, lib.APIConnectionError):
        return Failure("provider_error", "the provider could not be reached", detail)
    if status is not None and 400 <= status < 500:
        # Authentication, an unknown model, a context window exceeded: asking again cannot help.
        return Failure("provider_error", f"HTTP {status}, the request was refused", detail, retryable=False)
    if status is not None:
        wait = parse_retry_after(_response_headers(exc)) if status == 503 else None
        return Failure("provider_error", f"HTTP {status}", detail, True, wait)
    return Failure("provider_error", type(exc).__name__, detail)


def rejection(exc: ValueError | ValidationError) -> Failure:
    """What an answer `parse` refused means: our own words, no copy of the answer."""
    if isinstance(exc, Rejected):
        return Failure(exc.cause, exc.reason, exc.reason)
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_input=False)
        where = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in errors[:3])
        long = any(e["type"] in ("string_too_long", "too_long") for e in errors)
        return Failure("too_long" if long else "malformed", f"not the expected schema ({where})"[:500])
    if isinstance(exc, json.JSONDecodeError):
        return Failure("malformed", f"not JSON ({exc.msg} at character {exc.pos})")
    return Failure("malformed", str(exc)[:500])


class LLM:
    def __init__(self, settings, pool):
        self.settings = settings
        self.pool = pool
        self.slots = asyncio.Semaphore(settings.llm_max_concurrent)
        self._lib = None

    def configured(self, purpose: str) -> bool:
        return self.settings.llm_for(purpose) is not None

    @property
    def enabled(self) -> bool:
        """Any LLM at all (retain or reflect); false means offline mode."""
        return self.configured("retain") or self.configured("reflect")

    def model_name(self, purpose: str) -> str | None:
        cfg = self.settings.llm_for(purpose)
        return cfg[0] if cfg else None

    async def warm(self) -> None:
        """Import litellm at start-up (in a thread) rather than on the first request."""
        if self.enabled:
            self._lib = await asyncio.to_thread(_litellm)

    async def json(
        self,
        purpose: str,
        messages: list[dict],
        schema: type[M],
        *,
        bank_id: str | None,
        operation: str,
        operation_id=None,
        max_tokens: int | None = None,
        check=None,
        usage: Usage | None = None,
    ) -> M:
        """Ask for JSON matching `schema`; `check(parsed)` may raise ValueError (or Rejected, to
        name the cause) for answers that parse but are wrong (an unknown item index, an empty or
        overlong answer): both are re-asked with the reason."""

        def parse(text: str) -> M:
            parsed = schema.model_validate(loads_object(text))
            if check is not None:
                check(parsed)
            return parsed

        return await self._ask(
            purpose,
            messages,
            schema.__name__,
            schema.model_json_schema(),
            parse,
            bank_id=bank_id,
            operation=operation,
            operation_id=operation_id,
            max_tokens=max_tokens,
            usage=usage,
        )

    async def json_schema(
        self,
        purpose: str,
        messages: list[dict],
        name: str,
        schema: dict,
        *,
        bank_id: str | None,
        operation: str,
        operation_id=None,
        max_tokens: int | None = None,
        usage: Usage | None = None,
    ) -> Any:
        """Ask for JSON valid against a caller's JSON Schema (reflect's `response_schema`)."""
        import jsonschema

        validator = jsonschema.validators.validator_for(schema)(schema)

        def parse(text: str) -> Any:
            value = loads_object(text)
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path) or "the top level"
                raise ValueError(f"not valid against the schema at {where}: {error.message}"[:500])
            return value

        return await self._ask(
            purpose,
            messages,
            name,
            schema,
            parse,
            bank_id=bank_id,
            operation=operation,
            operation_id=operation_id,
            max_tokens=max_tokens,
            usage=usage,
        )

    async def _ask(
        self,
        purpose: str,
        messages: list[dict],
        name: str,
        schema: dict,
        parse,
        *,
        bank_id: str | None,
        operation: str,
        operation_id,
        max_tokens: int | None,
        usage: Usage | None,
    ) -> Any:
        """The one retry loop: failed calls are retried after a wait (the provider's Retry-After,
        else backoff) while attempts and the deadline allow; answers that cannot be used are
        re-asked with the reason."""
        model, api_key, base_url = self.settings.llm_for(purpose)
        lib = self._lib or await asyncio.to_thread(_litellm)
        self._lib = lib
        loop = asyncio.get_running_loop()
        in_operation = _deadline.get() is not None
        until = _deadline.get() or loop.time() + self.settings.llm_timeout
        base = list(messages)
        response_format = {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
        attempts = self.settings.llm_max_retries + 1
        where = {"operation": operation, "operation_id": operation_id, "bank_id": bank_id, "model": model}
        failure = Failure("timeout", "no time left for a call")
        for attempt in range(1, attempts + 1):
            call_timeout = max(MIN_CALL_SECONDS, min(self.settings.llm_timeout, until - loop.time()))
            started = loop.time()
            text, parsed, resp, ok = None, None, None, False
            try:
                async with self.slots:
                    with LLM_SECONDS.labels(operation).time():
                        resp = await lib.acompletion(
                            model=model,
                            messages=messages,
                            api_key=api_key,
                            api_base=base_url,
                            response_format=response_format,
                            timeout=call_timeout,
                            max_tokens=max_tokens,
                            num_retries=0,
                            temperature=0,
                        )
            except Exception as exc:  # provider errors, timeouts, connection failures
                failure = classify(exc, lib, api_key)
                if failure.cause == "timeout":
                    failure.reason = f"no answer within {call_timeout:.0f} s"
            else:
                choice = resp.choices[0]
                text = choice.message.content or ""
                try:
                    if getattr(choice, "finish_reason", None) == "length":
                        raise Rejected("truncated", "finish_reason 'length'")
                    if not text.strip():
                        raise Rejected("empty", "no content")
                    parsed = parse(text)
                    ok = True
                except (ValueError, ValidationError) as exc:
                    failure = rejection(exc)
            call = Call(
                purpose=purpose,
                model=model,
                bank_id=bank_id,
                operation=operation,
                operation_id=operation_id,
                attempt=attempt,
                duration_ms=round((loop.time() - started) * 1000),
                status="ok" if ok else failure.cause,
                error=None if ok else failure.reason,
                messages=messages,
                answer=text,
            )
            await self._record(lib, resp, call, usage)
            if ok:
                LLM_CALLS.labels(operation, model, "ok").inc()
                return parsed
            if text is not None:  # an answer that cannot be used: asked again with the reason
                messages = base + [
                    {"role": "assistant", "content": text[:4000]},
                    {
                        "role": "user",
                        "content": f"That answer was rejected: {failure.reason}. "
                        + ("Answer more briefly. " if failure.cause in ("truncated", "too_long") else "")
                        + "Reply with only a JSON object that follows the schema.",
                    },
                ]
            LLM_CALLS.labels(operation, model, failure.cause).inc()
            wait = self._next_wait(failure, attempt, attempts, until - loop.time(), in_operation)
            self._log_failure(failure, where, attempt, attempts, wait)
            if wait is None:
                break
            await asyncio.sleep(wait)
        words = CAUSE_WORDS[failure.cause]
        retry_after = (failure.retry_after or RATE_LIMIT_WAIT) if failure.cause == "rate_limit" else None
        raise LLMError(
            failure.cause,
            f"{words} ({failure.reason}; model {model}, {attempt} attempt{'s' if attempt > 1 else ''})",
            model=model,
            retry_after=retry_after,
        )

    def _next_wait(self, f: Failure, attempt: int, attempts: int, left: float, in_operation: bool) -> float | None:
        """Seconds before the next attempt, or None to stop: out of attempts, a refusal that
        asking again cannot change, a wait past the deadline, or (in a request) a rate limit
        longer than REQUEST_WAIT_LIMIT."""
        if attempt >= attempts or not f.retryable:
            return None
        if f.retry_after is not None:
            wait = f.retry_after
            if not in_operation and f.cause == "rate_limit" and wait > REQUEST_WAIT_LIMIT:
                return None
        elif f.cause == "rate_limit":
            wait = min(RATE_LIMIT_WAIT, left / 4)
        elif f.cause in ("malformed", "truncated", "empty", "too_long"):
            wait = 0.0  # re-asked with the reason at once: the provider is answering
        else:
            wait = min(20.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + random.random())
        if wait + MIN_CALL_SECONDS > left:
            return None
        return wait

    def _log_failure(self, f: Failure, where: dict, attempt: int, attempts: int, wait: float | None) -> None:
        """The one line a failed call writes: which operation (id and bank), model and cause."""
        op = where["operation"] + (f" {where['operation_id']}" if where["operation_id"] else " (a request)")
        then = "gave up" if wait is None else f"retrying in {wait:.1f} s"
        log.warning(
            "LLM call failed: %s (%s); operation %s, bank %s, model %s, attempt %d of %d, %s%s",
            f.cause,
            f.reason,
            op,
            where["bank_id"],
            where["model"],
            attempt,
            attempts,
            then,
            f"; {f.detail}" if f.detail and f.detail != f.reason else "",
            extra={
                "operation": where["operation"],
                "operation_id": str(where["operation_id"]) if where["operation_id"] else None,
                "bank_id": where["bank_id"],
                "model": where["model"],
                "cause": f.cause,
                "attempt": attempt,
                "retry_in_s": wait,
            },
        )

    async def _record(self, lib, resp, call: Call, usage: Usage | None) -> None:
        """One row of the LLM request log for every call, answered or not (its tokens and cost
        when the provider answered); the prompt and the answer only when
        HINDSIGHT_API_LLM_LOG_CONTENT is on."""
        u = getattr(resp, "usage", None)
        prompt = int(getattr(u, "prompt_tokens", 0) or 0)
        completion = int(getattr(u, "completion_tokens", 0) or 0)
        cost = None
        if resp is not None:
            try:
                cost = float(lib.completion_cost(completion_response=resp))
            except Exception:  # models without a known price (local, self-hosted)
                cost = None
            if usage is not None:
                usage.calls += 1
                usage.prompt_tokens += prompt
                usage.completion_tokens += completion
        LLM_TOKENS.labels(call.operation, call.model, "prompt").inc(prompt)
        LLM_TOKENS.labels(call.operation, call.model, "completion").inc(completion)
        if cost:
            LLM_COST.labels(call.operation, call.model).inc(cost)
        request = response = None
        if self.settings.llm_log_content:
            request = json.dumps([_clipped_message(m) for m in call.messages])
            response = call.answer[:LOGGED_CHARS] if call.answer is not None else None
        async with self.pool.acquire() as conn:
            await conn.execute(
                Q.usage_record,
                call.bank_id,
                call.operation,
                call.operation_id,
                call.model,
                prompt,
                completion,
                cost,
                call.status,
                call.error,
                call.purpose,
                call.duration_ms,
                call.attempt,
                request,
                response,
            )


# The most characters of one message or answer kept in the request log (when content is kept).
LOGGED_CHARS = 32_768


def _clipped_message(m: dict) -> dict:
    content = m.get("content")
    if isinstance(content, str) and len(content) > LOGGED_CHARS:
        content = content[:LOGGED_CHARS] + f" [... {len(content) - LOGGED_CHARS} more characters]"
    return {"role": m.get("role"), "content": content}
