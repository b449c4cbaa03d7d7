"""The shapes of API keys as clients create and read them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.engine.rules.fields import _bank_id
from hindsight.engine.rules.text import Strict


class ApiKeyCreate(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    role: Literal["admin", "bank"] = "bank"
    banks: list[str] = Field(default_factory=list)
    access: Literal["read", "read_write"] = "read_write"

    @field_validator("banks")
    @classmethod
    def _banks(cls, v: list[str]) -> list[str]:
        return sorted({_bank_id(b) for b in v})


class ApiKey(BaseModel):
    key_id: str
    name: str
    role: str
    banks: list[str]
    access: str
    created_at: datetime | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    key: str | None = Field(None, description="The secret; shown once, at creation.")


class ApiKeyList(BaseModel):
    keys: list[ApiKey]
