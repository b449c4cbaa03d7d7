"""A body's JSON is weighed by its structure outside strings, however it is cut into chunks
(server/body_weight.py)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight.server.body_weight import FREE, PER_BYTE, UNWEIGHED, JsonWeight

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12) | st.sampled_from(
    ['"', "\\", '\\"', "[{,:}]", '"\\\\"', "\\\\", '{"a": [1, 2]}']
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(TEXT, inner, max_size=6),
    max_leaves=40,
)


def expected(value) -> int:
    """The weight from the parsed value: each container's bracket, each comma and colon between
    its members, two quotes for every string, key or value."""
    if isinstance(value, str):
        return 50
    if isinstance(value, list):
        return 80 + 32 * max(0, len(value) - 1) + sum(expected(v) for v in value)
    if isinstance(value, dict):
        members = 32 * len(value) + 32 * max(0, len(value) - 1)
        return 200 + members + sum(expected(k) + expected(v) for k, v in value.items())
    return 0


def weigh(body: bytes, cuts: list[int]) -> JsonWeight:
    w = JsonWeight()
    start = 0
    for cut in sorted(set(cuts)):
        w.feed(body[start:cut])
        start = cut
    w.feed(body[start:])
    return w


@settings(max_examples=300, deadline=None)
@given(JSON, st.booleans(), st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_the_weight_is_the_structure_outside_strings_wherever_the_chunks_end(value, ascii_only, cuts):
    body = json.dumps(value, ensure_ascii=ascii_only).encode()
    w = weigh(body, [c % (len(body) + 1) for c in cuts])
    assert w.size == len(body)
    # under four bytes a body is not weighed: its encoding is told by its first four
    assert w.objects == (expected(json.loads(body)) if len(body) >= 4 else 0)


def test_a_string_full_of_brackets_weighs_nothing_but_its_quotes():
    text = '{"k": [1, 2, {"x": "y"}], "z": "\\"q\\""} ' * 1000
    body = json.dumps({"text": text}).encode()
    for size in (1, 2, 3, 7, 64, 4096):
        w = weigh(body, list(range(size, len(body), size)))
        assert w.objects == 200 + 32 + 4 * 25  # one object, one colon, two strings


def test_a_backslash_at_the_end_of_a_chunk_escapes_the_next_chunks_first_byte():
    body = b'["a\\\\\\"b", "c"]'  # the string a\"b holds an escaped backslash and an escaped quote
    for cut in range(len(body) + 1):
        assert weigh(body, [cut]).objects == 80 + 32 + 2 * 50


def test_dense_structure_is_too_heavy_and_text_is_not():
    lists = b"[" + b"[]," * 2_000_000 + b"[]]"
    w = weigh(lists, list(range(65536, len(lists), 65536)))
    assert w.objects > FREE and w.too_heavy()
    prose = json.dumps({"content": "lorem ipsum, dolor: sit [amet] {x} " * 300_000}).encode()
    w = weigh(prose, list(range(65536, len(prose), 65536)))
    assert w.objects < 1000 and not w.too_heavy()
    # past FREE, a body is judged by its weight a byte
    w = JsonWeight()
    w.size, w.objects = FREE, FREE + 1
    assert not w.too_heavy()
    w.objects = PER_BYTE * FREE + 1
    assert w.too_heavy()


@settings(max_examples=100, deadline=None)
@given(
    JSON, st.sampled_from(["utf-16-le", "utf-16-be", "utf-16", "utf-32-le", "utf-32"]), st.lists(st.integers(0, 400))
)
def test_a_utf16_or_utf32_body_weighs_at_least_its_structure(value, encoding, cuts):
    """Python's json reads these too; a character's bytes may look like a quote, so every
    structural byte counts."""
    body = json.dumps(value, ensure_ascii=False).encode(encoding)
    if len(body) < 4:
        return
    assert json.loads(body) == json.loads(json.dumps(value))
    assert weigh(body, [c % (len(body) + 1) for c in cuts]).objects >= expected(json.loads(body))


def test_no_string_hides_structure_in_utf16():
    # U+2200 is the bytes 00 22 in UTF-16-LE: read byte by byte, a quote that opens a string
    # around everything after it
    body = ('["\u2200", ' + "[], " * 1_000_000 + "[]]").encode("utf-16-le")
    assert len(json.loads(body)) == 1_000_002
    for cut in (1, 2, 3, 5, 65536):
        w = weigh(body, list(range(cut, len(body), cut)) if cut > 5 else [cut])
        assert w.too_heavy() and w.objects > 80 * 1_000_000


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=-(10**1200), max_value=10**1200) | st.floats(allow_nan=False), max_size=30),
    st.lists(st.integers(0, 20_000), max_size=8),
)
def test_long_numbers_weigh_the_square_of_their_digits_wherever_the_chunks_end(numbers, cuts):
    body = json.dumps(numbers).encode()
    w = weigh(body, [c % (len(body) + 1) for c in cuts])
    runs = [len(r) for r in re.findall(rb"[0-9]+", body)]
    assert w.weight() - w.objects - w.chars - w.string_chars == sum(n * n // 512 for n in runs)


def test_text_weighs_its_characters_at_the_width_of_the_widest():
    """json.loads decodes the body to one str and makes a str of each string; a str takes 1, 2
    or 4 bytes a character by its widest: one emoji makes 4 of every ASCII character."""
    ascii_text = json.dumps({"t": "a" * 200_000}).encode()
    emoji = json.dumps({"t": "a" * 200_000 + "\U0001f600"}, ensure_ascii=False).encode()
    escaped = json.dumps({"t": "a" * 200_000 + "\U0001f600"}).encode()  # \ud83d\ude00
    korean = json.dumps({"t": "a" * 200_000 + "한"}).encode()  # \ud55c: U+D55C, two bytes wide
    accents = json.dumps({"t": "a" * 200_000 + "é"}, ensure_ascii=False).encode()  # Latin-1: one
    for body, width in ((ascii_text, 1), (emoji, 4), (escaped, 4), (korean, 2), (accents, 1)):
        for back in range(1, 20):  # a cut at every place of the last character or escape
            w = weigh(body, [*range(65536, len(body), 65536), len(body) - back])
            assert w.width == width, (body[-20:], back)
            assert 2 * 200_000 <= w.chars + w.string_chars <= 2 * 200_000 + 40
            assert w.weight() >= width * 400_000


@pytest.mark.parametrize(
    "body",
    [
        b"{" * UNWEIGHED,
        b"[" * (UNWEIGHED // 2) + b"," * (UNWEIGHED // 2),
        b"1" * UNWEIGHED,
        b"[" + b"9" * (UNWEIGHED - 1),
        ('"' + "\U0001f600" * ((UNWEIGHED - 2) // 4) + '"').encode(),
        '{"a": ['.encode("utf-16-le") + "{".encode("utf-16-le") * (UNWEIGHED // 2 - 7),
        "[".encode("utf-32-le") + "{".encode("utf-32-le") * (UNWEIGHED // 4 - 1),
    ],
    ids=["braces", "brackets-commas", "digits", "one-number", "emoji", "utf16", "utf32"],
)
def test_no_body_of_unweighed_bytes_can_weigh_enough_to_be_refused(body):
    """BodyLimit never weighs a body of UNWEIGHED bytes or fewer: the heaviest ones, however cut,
    weigh less than FREE (and a byte more of them could not be refused either)."""
    assert len(body) <= UNWEIGHED
    for cuts in ([], [1, 2, 3], list(range(0, len(body), 4096))):
        w = weigh(body, cuts)
        assert w.weight() < FREE / 4 and not w.too_heavy()
