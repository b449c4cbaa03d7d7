"""Document chunking (documents/chunking.py) and memory units (engine/text.py): chunks of about
the requested size that start at headings and keep paragraphs whole; units cut at paragraph,
then sentence boundaries."""

from __future__ import annotations

from hindsight.files.chunking import chunk_blocks
from hindsight.files.readers import Block
from hindsight.text import estimate_tokens, split_units


def test_chunks_start_at_headings_and_keep_their_pages():
    blocks = [
        Block("Intro", heading=True, page=1),
        Block("The ferry leaves at noon. " * 8, page=1),
        Block("Setup", heading=True, page=2),
        Block("Plug the router in. " * 8, page=2),
        Block("Then press reset. " * 8, page=3),
    ]
    chunks = chunk_blocks(blocks, 400)
    assert [c.headline for c in chunks] == ["Intro", "Setup"]  # a heading starts a new chunk
    assert [(c.page_start, c.page_end) for c in chunks] == [(1, 1), (2, 3)]  # two paragraphs fit in one
    smaller = chunk_blocks(blocks, 200)  # the first paragraph alone is too long: cut at sentences
    assert [(c.headline, c.page_start, c.page_end) for c in smaller] == [
        ("Intro", 1, 1),
        ("Intro", 1, 1),
        ("Setup", 2, 2),
        ("Setup", 3, 3),
    ]
    assert all(len(c.text) <= 200 for c in smaller) and smaller[2].text.startswith("Setup\n\n")


def test_paragraphs_stay_whole_when_they_fit():
    paragraphs = [f"Paragraph {i} has a few words in it." for i in range(20)]
    chunks = chunk_blocks([Block(p, page=None) for p in paragraphs], 200)
    assert len(chunks) > 1
    for p in paragraphs:  # each whole, in exactly one chunk
        assert sum(p in c.text for c in chunks) == 1


def test_units_cut_at_sentence_boundaries_within_the_limit():
    text = " ".join(f"Sentence {i} talks about topic {i % 7} in some detail." for i in range(200))
    units = split_units(text, 1200)
    assert len(units) > 5 and all(len(u) <= 1200 for u in units)
    assert all(u.rstrip().endswith(".") for u in units)
    assert " ".join(units).split() == text.split()  # nothing lost or repeated
    assert split_units("  short  ", 1200) == ["short"]


def test_token_estimate_is_four_characters_a_token():
    assert estimate_tokens("x" * 400) == 100


def test_many_small_paragraphs_fill_chunks_to_the_size():
    # The open chunk's length is kept as paragraphs are added (it was summed again for each one:
    # 27 s for 1 MB of one-character paragraphs at chunk_size 20,000). Chunks still end where the
    # next paragraph would pass the size, under their heading.
    blocks = [Block("Title", heading=True)] + [Block("a" * (1 + i % 3)) for i in range(3_000)]
    chunks = chunk_blocks(blocks, 500)
    assert all(len(c.text) <= 500 for c in chunks) and all(c.headline == "Title" for c in chunks)
    assert "\n\n".join(c.text for c in chunks).count("a") == sum(1 + i % 3 for i in range(3_000))
    for c, after in zip(chunks, chunks[1:]):  # full: the next chunk's first paragraph did not fit
        assert len(c.text) + 2 + len(after.text.split("\n\n")[0]) > 500
