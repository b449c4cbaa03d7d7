"""The named statements of hindsight/sql/: each has a reason, every name the code uses exists,
none is left unused, and fragments go in only where a statement says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hindsight.db.sql import FOLDER, Q, fill, parse

CODE = Path(__file__).resolve().parents[2] / "hindsight"


def _used_names() -> set[str]:
    text = "\n".join(p.read_text() for p in CODE.rglob("*.py"))
    return set(re.findall(r"\bQ\.([a-z][a-z0-9_]*)", text))


def test_every_statement_has_a_reason_and_is_used():
    names = set(Q.names())
    assert len(names) > 100
    assert all(Q.reasons[n].strip() for n in names)
    used = _used_names() - {"names", "reasons"}
    assert used <= names, f"the code names statements that do not exist: {sorted(used - names)}"
    assert names <= used, f"statements nothing uses: {sorted(names - used)}"


def test_fill_puts_fragments_only_in_their_slots():
    sql = "SELECT id FROM memories m WHERE m.bank_id = $1 /*filter*/ LIMIT $2"
    assert (
        fill(sql, filter="AND m.kind = $3") == "SELECT id FROM memories m WHERE m.bank_id = $1 AND m.kind = $3 LIMIT $2"
    )
    assert fill(sql, filter="") == "SELECT id FROM memories m WHERE m.bank_id = $1  LIMIT $2"
    with pytest.raises(KeyError):
        fill(sql)  # a slot left empty by mistake
    with pytest.raises(KeyError):
        fill(sql, filter="", other="x")  # a fragment with nowhere to go


def test_parse_rejects_a_statement_without_reason_or_twice_named():
    with pytest.raises(ValueError, match="needs a reason"):
        parse("-- lonely --\nSELECT 1;\n")
    with pytest.raises(ValueError, match="twice"):
        parse("-- a --\n-- why\nSELECT 1;\n-- a --\n-- why\nSELECT 2;\n")
    got = parse("-- file header\n\n-- a --\n-- why it exists,\n-- on two lines\nSELECT 1\nFROM x;\n")
    assert got == {"a": ("why it exists, on two lines", "SELECT 1\nFROM x")}


def test_files_hold_only_statements():
    """A line outside any statement would be silently ignored; only the file header may be."""
    for path in FOLDER.glob("*.sql"):
        before_first = path.read_text().split("\n-- ", 1)[0]
        assert all(not line or line.startswith("--") for line in before_first.splitlines()), path.name
