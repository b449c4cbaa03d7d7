"""The CLI's options are made from the request models' fields (cli/options.py): a field's type,
choices, repeatability and description come with it, and only what was given is sent."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from hindsight.cli.main import cli
from hindsight.cli.options import body, fields
from hindsight.engine.banks.schemas import BankCreate
from hindsight.engine.memory.curation import MemoryUpdate
from hindsight.engine.memory.schemas import RetainItem
from hindsight.engine.reflection.reflect import ReflectRequest
from hindsight.engine.search.schemas import RecallRequest


def test_options_carry_the_fields_type_choices_and_repeats_and_send_only_what_was_given():
    @click.command()
    @fields(ReflectRequest, "budget", "max_tokens", tags="--tag")
    def command(**values):
        click.echo(repr(sorted(body(values).items())))

    runner = CliRunner()
    given = runner.invoke(command, ["--budget", "mid", "--tag", "a", "--tag", "b", "--max-tokens", "100"])
    assert given.exit_code == 0, given.output
    assert given.output.strip() == repr([("budget", "mid"), ("max_tokens", 100), ("tags", ["a", "b"])])
    assert runner.invoke(command, []).output.strip() == "[]"  # nothing given: the server's defaults apply
    wrong = runner.invoke(command, ["--budget", "huge"])
    assert wrong.exit_code == 2 and "huge" in wrong.output
    assert runner.invoke(command, ["--max-tokens", "many"]).exit_code == 2


@pytest.mark.parametrize(
    "path, model",
    [
        (("retain",), RetainItem),
        (("recall",), RecallRequest),
        (("reflect",), ReflectRequest),
        (("banks", "create"), BankCreate),
        (("memories", "update"), MemoryUpdate),
    ],
)
def test_a_model_backed_commands_field_options_are_the_models_fields_with_their_help(path, model):
    command: click.Command = cli
    ctx = click.Context(cli)
    for name in path:
        found = command.get_command(ctx, name)  # type: ignore[attr-defined]
        assert found is not None, name
        command = found
    shared = [p for p in command.params if isinstance(p, click.Option) and p.name in model.model_fields]
    assert shared
    for option in shared:
        assert option.help == (model.model_fields[option.name].description or "")
