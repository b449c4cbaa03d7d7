"""The pure rules of forgetting and of the audit log: when a mental model's content quotes what was
forgotten, a bank's retention policy, the audit record's outcome and request id, and the tables
the VACUUM after an erasure names."""

from __future__ import annotations

import re

import pglast
import pytest

from hindsight.db.sql import Q
from hindsight.db.vacuum import ERASED_TABLES
from hindsight.engine.forgetting.retention import Policy, policy_of
from hindsight.engine.reflection.mental_models import QUOTE_MIN_CHARS, quotes
from hindsight.server.audit_trail import outcome_of, plain
from hindsight.server.request_id import request_id

TEXT = "Ulrike keeps a green violin in Tromso. She plays it on Sundays."


@pytest.mark.parametrize(
    "content, words, vanished, quoted",
    [
        # verbatim, in other case and spacing
        ("Answer: ulrike keeps a GREEN violin   in Tromso. More.", set(), set(), True),
        # one sentence of it is enough
        ("Known: She plays it on Sundays.", set(), set(), True),
        # a word no memory holds any more, however it is said
        ("Her instrument is from Zorblax.", {"zorblax", "instrument"}, {"zorblax"}, True),
        # said otherwise, with words other memories still hold: not a quote (the model is only stale)
        ("Ulrike owns a violin.", {"ulrik", "own", "violin"}, {"zorblax"}, False),
        ("", set(), set(), False),
    ],
)
def test_quotes(content, words, vanished, quoted):
    assert quotes(content, words, [TEXT], vanished) is quoted


def test_short_texts_are_not_quotes_of_everything():
    short = "Yes."
    assert len(short) < QUOTE_MIN_CHARS
    assert quotes("Yes. The answer is yes.", set(), [short], set()) is False


@pytest.mark.parametrize(
    "config, policy, shortest",
    [
        ({}, Policy(None, {}), None),
        ({"retention_days": 30}, Policy(30, {}), 30),
        ({"retention_days": None, "retention_by_tag": {"chat": 7}}, Policy(None, {"chat": 7}), 7),
        ({"retention_days": 365, "retention_by_tag": {"b": 10, "a": 400}}, Policy(365, {"a": 400, "b": 10}), 10),
        # what an older or hand-edited config holds that is not a number of days is no policy
        ({"retention_days": "30", "retention_by_tag": {"x": -1, "y": True}}, Policy(None, {}), None),
        ({"retention_by_tag": ["chat"]}, Policy(None, {}), None),
    ],
)
def test_policy_of(config, policy, shortest):
    got = policy_of(config)
    assert got == policy and got.shortest == shortest


def test_outcome_of_status():
    assert outcome_of(200) == outcome_of(204) == "ok"
    assert [outcome_of(s) for s in (401, 403, 404, 422, 503)] == [
        "unauthorized",
        "forbidden",
        "not_found",
        "invalid_argument",
        "unavailable",
    ]
    assert outcome_of(418) == "http_418"


def test_request_ids_from_clients_are_plain_or_replaced():
    assert request_id("client-req-42") == "client-req-42"
    assert request_id("7f3c1a2b-1111-4c3d-9e8f-000000000001") == "7f3c1a2b-1111-4c3d-9e8f-000000000001"
    for bad in (None, "", "with space", "x" * 129, "new\nline", "é", "a\x00b"):
        made = request_id(bad)
        assert re.fullmatch(r"[0-9a-f]{32}", made), bad


def test_plain_values_for_the_log():
    assert plain("jwt:alice") == "jwt:alice"
    assert plain("a\x00b\ud800c") == "ab?c"
    assert len(plain("x" * 1000) or "") == 300
    assert plain(None) is None


def test_the_vacuum_names_every_erased_table():
    for name in ("vacuum_after_erasure", "vacuum_full_after_erasure"):
        stmt = pglast.parse_sql(getattr(Q, name))[0].stmt
        named = [r.relation.relname for r in stmt.rels]
        assert named == list(ERASED_TABLES), name
