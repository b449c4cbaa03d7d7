"""Command-line options made from the request models' own fields, so a command's options carry the
field's name, type, choices and description as the REST API documents them, and a field the
model drops or renames cannot be left behind in the CLI.

    @fields(BankCreate, "name", "mission", document_chunk_size="--chunk-size")
    def create(c, bank_id, **values):
        c.call("POST", "/v1/banks", json={"bank_id": bank_id, **body(values)})

A list field is a repeatable option (its option name given in the singular: `tags="--tag"`), a
bool field a flag, a Literal field a choice; every option defaults to unset, and `body` keeps
only what was given, so the server's defaults apply to the rest.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, TypeVar

import click
from pydantic import BaseModel

F = TypeVar("F", bound=Callable[..., Any])


def _kind(annotation: Any) -> tuple[Any, bool]:
    """The click type of a field's annotation, and whether it is a list (repeatable)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        if len(args) == 1:
            return _kind(args[0])
        if datetime in args:  # datetime | "unset": passed on as the text given
            return click.STRING, False
        return click.STRING, False
    if origin is list:
        inner, _ = _kind(args[0]) if args else (click.STRING, False)
        return inner, True
    if origin is Literal:
        return click.Choice([str(a) for a in typing.get_args(annotation)]), False
    if annotation is bool:
        return bool, False
    if annotation in (int, float):
        return annotation, False
    return click.STRING, False


def fields(model: type[BaseModel], *names: str, **renamed: str) -> Callable[[F], F]:
    """Options for the model's fields `names` (`--field-name`) and `renamed` (field name = option
    name), in that order; each passes the field's value under the field's own name."""

    def decorate(fn: F) -> F:
        wanted = [(n, "--" + n.replace("_", "-")) for n in names] + list(renamed.items())
        for name, flag in reversed(wanted):
            info = model.model_fields[name]
            kind, many = _kind(info.annotation)
            help_text = info.description or ""
            if kind is bool:
                fn = click.option(flag, name, is_flag=True, default=None, help=help_text)(fn)
            else:
                fn = click.option(flag, name, type=kind, multiple=many, default=None, help=help_text)(fn)
        return fn

    return decorate


def body(values: dict[str, Any]) -> dict[str, Any]:
    """The request body of what was given: unset options (None, no repeats) left out."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items() if v not in (None, ())}
