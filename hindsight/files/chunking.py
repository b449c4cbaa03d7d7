"""Blocks into chunks of about `size` characters that start at headings and never split a
paragraph unless it alone is too long (then at sentence boundaries). Each chunk keeps the heading
it falls under (its headline) and the pages it spans."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.files.readers import Block
from hindsight.text import split_units

HEADLINE_WORDS = 10


@dataclass
class Chunk:
    text: str
    headline: str
    page_start: int | None
    page_end: int | None


def _headline(heading: str | None, text: str) -> str:
    source = heading or text
    words = source.split()
    return " ".join(words[:HEADLINE_WORDS]) + ("…" if len(words) > HEADLINE_WORDS else "")


def chunk_blocks(blocks: list[Block], size: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    heading: str | None = None
    parts: list[str] = []
    pages: list[int] = []
    # The open chunk's length as joined: kept as parts are added, not summed again for each one
    # (summing would be quadratic in a chunk's parts: many one-character paragraphs).
    used = 0

    def flush():
        nonlocal used
        if parts:
            text = "\n\n".join(parts)
            chunks.append(
                Chunk(text, _headline(heading, text), min(pages) if pages else None, max(pages) if pages else None)
            )
        parts.clear()
        pages.clear()
        used = 0

    for b in blocks:
        if b.heading:
            flush()
            heading = b.text
            parts.append(b.text)
            used += len(b.text) + 2
            if b.page:
                pages.append(b.page)
            continue
        pieces = split_units(b.text, size) if len(b.text) > size else [b.text]
        for piece in pieces:
            if parts and used + len(piece) > size and not (len(parts) == 1 and parts[0] == heading):
                flush()
            parts.append(piece)
            used += len(piece) + 2
            if b.page:
                pages.append(b.page)
    flush()
    return chunks
