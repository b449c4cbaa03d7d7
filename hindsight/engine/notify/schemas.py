"""The shapes of webhooks, their deliveries and the requests that make and change them."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.engine.rules.text import Strict

MAX_WEBHOOKS = 20  # a bank's webhooks, at most
MAX_HEADERS = 20
# Headers a delivery sets itself; a webhook's own headers may not replace them.
RESERVED_HEADERS = frozenset(
    {"content-type", "content-length", "host", "transfer-encoding", "connection", "user-agent", "te", "upgrade"}
)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
EventType = Literal[
    "retain.completed",
    "extraction.completed",
    "consolidation.completed",
    "mental_model.refreshed",
    "operation.failed",
    "memory_defense.triggered",
]


class HttpConfig(Strict):
    """How a delivery is sent. Header values are stored as given and shown to whoever may read the
    bank: put no secret in them; the signature is what proves a delivery came from this server."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["POST"] = Field("POST", description="Deliveries are POSTed with the event as their JSON body.")
    timeout_seconds: int = Field(10, ge=1, le=60, description="Seconds the receiver has to answer.")
    headers: dict[str, str] = Field(default_factory=dict, description="Headers added to every delivery.")
    params: dict[str, str] = Field(default_factory=dict, description="Query parameters added to the URL.")

    @field_validator("headers")
    @classmethod
    def _headers(cls, v: dict[str, str]) -> dict[str, str]:
        if len(v) > MAX_HEADERS:
            raise ValueError(f"at most {MAX_HEADERS} headers")
        for name, value in v.items():
            if not _TOKEN.match(name):
                raise ValueError(f"{name[:40]!r} is not a header name")
            if name.lower() in RESERVED_HEADERS or name.lower().startswith("x-hindsight-"):
                raise ValueError(f"{name!r} is set by the server itself")
            if len(value) > 2_000 or any(ord(c) < 32 or ord(c) == 127 for c in value):
                raise ValueError(f"the value of {name!r} must be at most 2,000 characters without control characters")
        return v

    @field_validator("params")
    @classmethod
    def _params(cls, v: dict[str, str]) -> dict[str, str]:
        if len(v) > MAX_HEADERS:
            raise ValueError(f"at most {MAX_HEADERS} parameters")
        if any(len(k) > 100 or len(x) > 2_000 for k, x in v.items()):
            raise ValueError("a parameter's name is at most 100 characters and its value at most 2,000")
        return v


def _retain_only() -> list[EventType]:
    return ["retain.completed"]


SECRET = Field(
    None,
    min_length=8,
    max_length=256,
    description="The HMAC-SHA256 signing secret; default: one the server makes and shows once, in this answer.",
)


class WebhookCreate(Strict):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2048, description="The http(s) URL events are POSTed to.")
    event_types: list[EventType] = Field(
        default_factory=_retain_only, min_length=1, description="The events to deliver."
    )
    enabled: bool = Field(True, description="Disabled webhooks get no deliveries (queued ones are cancelled).")
    secret: str | None = SECRET
    http_config: HttpConfig = Field(default_factory=HttpConfig)

    _events = field_validator("event_types")(lambda v: sorted(set(v)))


class WebhookUpdate(Strict):
    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(None, min_length=1, max_length=2048)
    event_types: list[EventType] | None = Field(None, min_length=1)
    enabled: bool | None = None
    http_config: HttpConfig | None = None
    secret: str | None = Field(None, min_length=8, max_length=256, description="A new signing secret of yours.")
    new_secret: bool = Field(False, description="The server makes a new signing secret and shows it once.")

    _events = field_validator("event_types")(lambda v: v if v is None else sorted(set(v)))


class Webhook(BaseModel):
    webhook_id: str
    bank_id: str
    url: str
    event_types: list[str]
    enabled: bool
    http_config: HttpConfig
    created_at: datetime
    updated_at: datetime
    secret: str | None = Field(
        None, description="The signing secret, in the answer that made it (the server's own) only; never again."
    )


class WebhookList(BaseModel):
    webhooks: list[Webhook]


class WebhookDeleted(BaseModel):
    deleted: bool
    webhook_id: str


class DeliveryQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(50, ge=1, le=200, description="At most this many, newest first.")
    cursor: str | None = Field(None, max_length=200, description="`next_cursor` of the previous page.")


class Delivery(BaseModel):
    delivery_id: str = Field(description="Its operation's id, also the X-Hindsight-Delivery header.")
    event_type: str
    status: Literal["pending", "delivering", "delivered", "failed", "cancelled"]
    attempts: int
    max_attempts: int
    next_attempt_at: datetime | None = None
    last_attempt_at: datetime | None = None
    last_status_code: int | None = Field(None, description="The receiver's last HTTP status.")
    last_error: str | None = None
    url: str | None = Field(None, description="Where the last attempt went.")
    event: dict[str, Any] | None = Field(None, description="The event's body as delivered (without its delivery id).")
    created_at: datetime
    updated_at: datetime


class DeliveryList(BaseModel):
    deliveries: list[Delivery]
    next_cursor: str | None = None


class TestQueued(BaseModel):
    delivery_id: str
