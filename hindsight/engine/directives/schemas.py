"""The shapes of directives and of the requests that make, change and list them."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.engine.rules.fields import Offset, clean_tags, not_blank
from hindsight.engine.rules.tags import TagsMatch
from hindsight.engine.rules.text import Strict

# A bank holds at most this many directives, each at most CONTENT_CHARS long: every active one
# that applies is in every reflect's prompt, so together they stay a bounded part of it.
MAX_DIRECTIVES = 100
CONTENT_CHARS = 4_000
PRIORITY = Field(0, ge=-1_000_000, le=1_000_000, description="Higher goes first in the prompt.")


class DirectiveCreate(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="A short name, shown with the rule in the prompt.")
    content: str = Field(
        min_length=1, max_length=CONTENT_CHARS, description="The instruction itself, as reflect should follow it."
    )
    priority: int = PRIORITY
    is_active: bool = Field(True, description="Inactive directives are kept but not applied.")
    tags: list[str] = Field(
        default_factory=list,
        description="Empty: applies to every reflect. Tagged: only to reflects (and mental models) whose tags match.",
    )

    _tags = field_validator("tags", mode="before")(clean_tags)
    _blank = field_validator("name", "content")(lambda v, info: not_blank(v, info.field_name))


class DirectiveUpdate(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=200)
    content: str | None = Field(None, min_length=1, max_length=CONTENT_CHARS)
    priority: int | None = Field(None, ge=-1_000_000, le=1_000_000)
    is_active: bool | None = None
    tags: list[str] | None = None

    _tags = field_validator("tags", mode="before")(clean_tags)
    _blank = field_validator("name", "content")(lambda v, info: v if v is None else not_blank(v, info.field_name))


class DirectiveRef(Strict):
    model_config = ConfigDict(extra="forbid")

    directive_id: str = Field(description="The directive's id (a UUID), from list_directives or create_directive.")


class DirectiveChange(DirectiveUpdate, DirectiveRef):
    """update_directive's arguments: the directive, then what changes."""

    def changes(self) -> DirectiveUpdate:
        """What changes, already validated (no second validation)."""
        return DirectiveUpdate.model_construct(
            self.model_fields_set - {"directive_id"}, **{k: getattr(self, k) for k in DirectiveUpdate.model_fields}
        )


class DirectiveQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    tags: list[str] | None = Field(None, description="Only directives with these tags (matched as tags_match says).")
    tags_match: TagsMatch = Field(
        "any", description="any / all also list untagged directives; any_strict, all_strict or exact only tagged ones."
    )
    active_only: bool = Field(True, description="Leave out inactive directives.")
    limit: int = Field(100, ge=1, le=1000, description="At most this many, highest priority first.")
    offset: int = Offset

    _tags = field_validator("tags", mode="before")(clean_tags)


class Directive(BaseModel):
    directive_id: str
    bank_id: str
    name: str
    content: str
    priority: int
    is_active: bool
    tags: list[str]
    created_at: datetime
    updated_at: datetime


class DirectiveList(BaseModel):
    directives: list[Directive]
    total: int = Field(description="Directives matching the query in all (the page is `directives`).")
    limit: int
    offset: int


class DirectiveDeleted(BaseModel):
    deleted: bool
    directive_id: str


class AppliedDirective(BaseModel):
    """A directive as a prompt carries it."""

    directive_id: str
    name: str
    content: str
