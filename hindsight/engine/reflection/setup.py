"""A bank's setup as one document: its profile, the settings kept for it, its mental models and
its directives, without its memories (Hindsight's bank templates: `GET/POST /v1/default/banks/{bank}/export` and
`/import`). Read from one bank, applied to another to set it up the same way: the bank is created
if needed, settings merge into its own, models are matched by id (created, or updated where they
differ), directives by name (created, or updated where they differ). A model may bring its content (ours, for a bank moved from elsewhere: `hindsight
migrate`): a new model then starts with it, ready, instead of waiting for a refresh."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.engine.banks import registry
from hindsight.engine.banks.schemas import Bank, BankCreate, BankUpdate
from hindsight.engine.banks.settings import BankSettingsChange, settings_update
from hindsight.engine.directives import store as directives
from hindsight.engine.directives.schemas import MAX_DIRECTIVES, DirectiveCreate, DirectiveQuery, DirectiveUpdate
from hindsight.engine.errors import NotFound
from hindsight.engine.reflection import mental_models
from hindsight.engine.reflection.mental_models import (
    MODEL_ID_PATTERN,
    MentalModelCreate,
    MentalModelQuery,
    MentalModelUpdate,
)
from hindsight.engine.rules.fields import clean_tags
from hindsight.engine.rules.text import Strict
from hindsight.engine.rules.validation import parse

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

MAX_MODELS = 1000


class SetupModel(Strict):
    model_config = ConfigDict(extra="forbid")

    mental_model_id: str = Field(pattern=MODEL_ID_PATTERN, description="1-64 lowercase letters, digits and hyphens.")
    name: str = Field(min_length=1, max_length=200)
    source_query: str = Field(min_length=1, max_length=4_000)
    tags: list[str] = Field(default_factory=list)
    max_tokens: int = Field(2048, ge=64, le=32_768)
    content: str | None = Field(
        None, max_length=200_000, description="Content already written: a new model starts with it, ready."
    )

    _tags = field_validator("tags", mode="before")(clean_tags)


class BankSetup(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=200)
    mission: str | None = Field(None, max_length=4_000)
    settings: dict[str, Any] | None = Field(
        None, max_length=100, description="Settings by Hindsight's names (engine/banks/settings.py), merged in."
    )
    mental_models: list[SetupModel] | None = Field(None, max_length=MAX_MODELS)
    directives: list[DirectiveCreate] | None = Field(None, max_length=MAX_DIRECTIVES)

    @field_validator("directives")
    @classmethod
    def _unique_names(cls, v: list[DirectiveCreate] | None) -> list[DirectiveCreate] | None:
        names = [d.name for d in v or []]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"the same directive name more than once: {', '.join(twice)}")
        return v

    @field_validator("mental_models")
    @classmethod
    def _unique(cls, v: list[SetupModel] | None) -> list[SetupModel] | None:
        ids = [m.mental_model_id for m in v or []]
        if twice := sorted({i for i in ids if ids.count(i) > 1}):
            raise ValueError(f"the same mental_model_id more than once: {', '.join(twice)}")
        return v


class SetupApplied(BaseModel):
    bank_id: str
    created_bank: bool
    settings_applied: bool
    mental_models_created: list[str] = Field(default_factory=list)
    mental_models_updated: list[str] = Field(default_factory=list)
    mental_models_unchanged: list[str] = Field(default_factory=list)
    directives_created: list[str] = Field(default_factory=list, description="Names of the directives created.")
    directives_updated: list[str] = Field(default_factory=list, description="Names of the directives changed.")
    operation_ids: list[str] = Field(default_factory=list, description="Refreshes queued for models without content.")
    dry_run: bool = False


async def read_setup(rt: Runtime, bank_id: str) -> tuple[Bank, BankSetup]:
    bank = await registry.get_bank(rt, bank_id)
    found = await mental_models.list_mental_models(rt, bank_id, MentalModelQuery())
    models = [
        SetupModel(
            mental_model_id=m.mental_model_id,
            name=m.name,
            source_query=m.source_query,
            tags=m.tags,
            max_tokens=m.max_tokens,
            content=m.content,
        )
        for m in found.mental_models
    ]
    rules = await directives.list_directives(rt, bank_id, DirectiveQuery(active_only=False, limit=MAX_DIRECTIVES))
    kept = [
        DirectiveCreate(name=d.name, content=d.content, priority=d.priority, is_active=d.is_active, tags=d.tags)
        for d in rules.directives
    ]
    return bank, BankSetup(
        name=bank.name,
        mission=bank.mission,
        settings=dict(bank.client_settings),
        mental_models=models,
        directives=kept,
    )


def _directive_fields(d: DirectiveCreate) -> tuple:
    return d.content, d.priority, d.is_active, sorted(d.tags)


async def apply_setup(rt: Runtime, bank_id: str, setup: BankSetup, dry_run: bool = False) -> SetupApplied:
    """Apply `setup` to the bank (see the module docstring); with `dry_run`, say what would be
    done and change nothing. Each step commits on its own: a failure part-way leaves what was done
    done, and applying the same setup again finishes it (models already as asked are unchanged)."""
    try:
        bank: Bank | None = await registry.get_bank(rt, bank_id)
    except NotFound:
        bank = None
    out = SetupApplied(bank_id=bank_id, created_bank=bank is None, settings_applied=False, dry_run=dry_run)
    change = BankSettingsChange(name=setup.name, mission=setup.mission, config_updates=setup.settings)
    # the settings are checked before anything is written (a bad one fails the whole setup)
    planned = settings_update(change, bank or Bank(bank_id=bank_id), "settings")
    parse(BankUpdate, planned)
    out.settings_applied = bool(planned)
    existing = {}
    if bank is not None:
        ids = [m.mental_model_id for m in setup.mental_models or []]
        found = await mental_models.list_mental_models(rt, bank_id, MentalModelQuery(ids=ids)) if ids else None
        existing = {m.mental_model_id: m for m in (found.mental_models if found else [])}
    for m in setup.mental_models or []:
        have = existing.get(m.mental_model_id)
        if have is None:
            out.mental_models_created.append(m.mental_model_id)
        elif (have.name, have.source_query, sorted(have.tags), have.max_tokens) != (
            m.name,
            m.source_query,
            sorted(m.tags),
            m.max_tokens,
        ):
            out.mental_models_updated.append(m.mental_model_id)
        else:
            out.mental_models_unchanged.append(m.mental_model_id)
    have_rules: dict[str, Any] = {}
    if bank is not None and setup.directives:
        found_rules = await directives.list_directives(
            rt, bank_id, DirectiveQuery(active_only=False, limit=MAX_DIRECTIVES)
        )
        have_rules = {d.name: d for d in found_rules.directives}
    for d in setup.directives or []:
        had = have_rules.get(d.name)
        if had is None:
            out.directives_created.append(d.name)
        elif (had.content, had.priority, had.is_active, sorted(had.tags)) != _directive_fields(d):
            out.directives_updated.append(d.name)
    if dry_run:
        return out
    if bank is None:
        await registry.create_bank(rt, BankCreate(bank_id=bank_id))
    if planned:
        await registry.change_bank(rt, bank_id, lambda now: parse(BankUpdate, settings_update(change, now, "settings")))
    updated = set(out.mental_models_updated)
    for m in setup.mental_models or []:
        if m.mental_model_id in out.mental_models_created:
            create = MentalModelCreate(
                name=m.name,
                source_query=m.source_query,
                mental_model_id=m.mental_model_id,
                tags=m.tags,
                max_tokens=m.max_tokens,
            )
            if m.content:
                await mental_models.create_with_content(rt, bank_id, create, m.content)
            else:
                op = await mental_models.create_mental_model(rt, bank_id, create)
                out.operation_ids.append(op.operation_id)
        elif m.mental_model_id in updated:
            change_model = MentalModelUpdate(
                name=m.name, source_query=m.source_query, tags=m.tags, max_tokens=m.max_tokens
            )
            model = await mental_models.update_mental_model(rt, bank_id, m.mental_model_id, change_model)
            if model.pending_operation_id:
                out.operation_ids.append(model.pending_operation_id)
    for d in setup.directives or []:
        if d.name in out.directives_created:
            await directives.create_directive(rt, bank_id, d)
        elif d.name in out.directives_updated:
            change_rule = DirectiveUpdate(content=d.content, priority=d.priority, is_active=d.is_active, tags=d.tags)
            await directives.update_directive(rt, bank_id, have_rules[d.name].directive_id, change_rule)
    return out
