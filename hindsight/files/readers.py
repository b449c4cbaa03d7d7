"""Text out of files, with well-kept libraries: pypdf (PDF, per page), python-docx (DOCX),
BeautifulSoup (HTML); TXT and Markdown are decoded as text. Each reader yields blocks (a heading
or a paragraph, with its page) so that chunking can cut at structure boundaries."""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bs4 import Tag

TYPES = {
    "txt": "txt",
    "text": "txt",
    "md": "md",
    "markdown": "md",
    "html": "html",
    "htm": "html",
    "pdf": "pdf",
    "docx": "docx",
    "doc": "doc",
}
MIME = {
    "text/plain": "txt",
    "text/markdown": "md",
    "text/html": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/msword": "doc",
}
_MD_HEADING = re.compile(r"^#{1,6}\s+\S")
# HTML elements that carry a block of text; the outermost one takes the text of those inside it.
_HTML_BLOCKS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "blockquote", "td"})
# A heading element's text longer than this is read as a paragraph: a heading holding the page's
# blocks (`<h1>Title<div><p>...`, which the parser nests) would be one chunk of the whole page, as
# chunking never cuts a heading.
HEADING_MAX_CHARS = 300
# Most text one PDF may give. pypdf's text extraction is pure Python (~10 us a character of
# repetitive content) and Flate inflates such content ~650x (pypdf caps one stream at 75 MB decoded,
# not a file's sum), so a small upload can ask for minutes of CPU. 20M characters is ~7,000 dense
# pages, beyond a real document, and under the 50M a plain-text file of the default largest upload
# (max_document_bytes, config.py) gives, so a PDF can't cost more chunks and embeddings than that;
# past it the file fails with a clear outcome rather than being imported cut short without a word.
MAX_PDF_TEXT_CHARS = 20_000_000
# And at most this many characters a byte of the file, past the first PDF_TEXT_FREE: a real PDF's
# text is a few times its size at most (Flate on prose ~3x), where pages drawing one shared form
# gave 370x (53 KB, 158 s of CPU to reach the cap above; now 9 s).
MAX_PDF_TEXT_PER_BYTE = 20
PDF_TEXT_FREE = 1_000_000


@dataclass
class Block:
    text: str
    heading: bool = False
    page: int | None = None


class UnreadableFile(Exception):
    """The file's type is unsupported or its content could not be read. An import reports it as
    that file's outcome (engine/knowledge/documents.py); it never ends a request."""

    def __init__(self, message: str, field: str = "files"):
        super().__init__(message)
        self.message = message
        self.field = field


def detect_type(name: str, content_type: str | None = None, data: bytes = b"") -> str:
    ext = PurePosixPath(name.split("?")[0]).suffix.lower().lstrip(".")
    if ext in TYPES:
        return TYPES[ext]
    if content_type:
        t = MIME.get(content_type.split(";")[0].strip().lower())
        if t:
            return t
    if data.startswith(b"%PDF"):
        return "pdf"
    if data[:2] == b"PK":
        return "docx"
    head = data[:512].lower()
    if b"<html" in head or b"<!doctype html" in head:
        return "html"
    try:
        data[:4096].decode("utf-8")
        return "txt"
    except UnicodeDecodeError:
        raise UnreadableFile(f"{name}: unsupported file type (supported: txt, md, html, pdf, docx)", "files") from None


def _decode(data: bytes) -> str:
    for enc in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            return data.decode(enc)
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", "replace")


def _paragraphs(text: str, page: int | None = None, markdown: bool = False) -> list[Block]:
    blocks = []
    for para in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
        para = para.strip()
        if not para:
            continue
        lines = para.split("\n")
        if markdown and _MD_HEADING.match(lines[0]):
            blocks.append(Block(lines[0].lstrip("#").strip(), heading=True, page=page))
            rest = "\n".join(lines[1:]).strip()
            if rest:
                blocks.append(Block(rest, page=page))
        else:
            blocks.append(Block(re.sub(r"[ \t]+", " ", para), page=page))
    return blocks


def _content_refs(page: Any) -> list[Any] | None:
    """The references of a page's content streams (/Contents: one reference, an array of them, or a
    reference to such an array), or None if one is not a reference (then the page can't be matched
    against others and is always read)."""
    from pypdf.generic import ArrayObject, IndirectObject

    raw = page.raw_get("/Contents") if "/Contents" in page else None
    if raw is None:
        return []
    if isinstance(raw, IndirectObject):
        target = raw.get_object()
        if not isinstance(target, ArrayObject):
            return [raw]
        raw = target
    items = list(raw) if isinstance(raw, ArrayObject) else [raw]
    return items if all(isinstance(r, IndirectObject) for r in items) else None


def _resources(page: Any) -> tuple[Any, ...] | None:
    """Which /Resources the page draws with (its own or inherited from its page tree): the same
    content stream shows different text with different resources (`/Fm0 Do` draws each page's own
    form; pypdf's compress_identical_objects merges such streams). An indirect object by its
    number; a direct dictionary by a digest of what it holds (its references unresolved). None
    when it can't be told."""
    from pypdf.generic import IndirectObject

    node = page
    for _ in range(64):  # a page tree deeper than this, or a cycle: not matched
        if "/Resources" in node:
            raw = node.raw_get("/Resources")
            if isinstance(raw, IndirectObject):
                return (raw.idnum, raw.generation)
            return ("direct", hashlib.sha256(repr(raw).encode()).digest())
        parent = node.get("/Parent")
        if parent is None:
            return ()
        node = parent.get_object()
    return None


def _new_content(page: Any, seen: set[tuple[Any, ...]]) -> bool:
    """Whether the page has a content stream no earlier page had with the same resources; records
    what it shows in `seen`.

    pypdf parses a page's content streams anew for each page, so a small file whose many pages (or
    one page's /Contents array, many times over) point to one inflated stream would cost that
    stream's parse every time and repeat its text. A page showing only streams already read, with
    the resources they were read with, adds nothing; a page repeating a stream in its array keeps
    its first occurrence (the page object is this reader's own, dropped after reading)."""
    from pypdf.generic import ArrayObject, NameObject

    refs, resources = _content_refs(page), _resources(page)
    if refs is None or resources is None:
        return True
    unique = list({(r.idnum, r.generation): r for r in refs}.items())
    if len(unique) < len(refs):
        page[NameObject("/Contents")] = ArrayObject(r for _, r in unique)
    new = [(key, resources) for key, _ in unique if (key, resources) not in seen]
    seen.update(new)
    return bool(new)


def read_pdf(data: bytes) -> tuple[list[Block], int]:
    """Blocks of each page and the page count. A page's content streams are read once in the file
    (_new_content), and past MAX_PDF_TEXT_CHARS (or MAX_PDF_TEXT_PER_BYTE) the file fails, so a
    small PDF can't make its text extraction arbitrarily long."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        raise UnreadableFile("the PDF is encrypted", "files")
    blocks: list[Block] = []
    seen: set[tuple[Any, ...]] = set()
    total = 0
    limit = min(MAX_PDF_TEXT_CHARS, max(PDF_TEXT_FREE, MAX_PDF_TEXT_PER_BYTE * len(data)))
    for n, page in enumerate(reader.pages, start=1):
        if not _new_content(page, seen):
            continue
        text = page.extract_text() or ""
        total += len(text)
        if total > limit:
            raise UnreadableFile(
                f"the PDF's text exceeds {limit:,} characters (at page {n} of {len(reader.pages)}; at most "
                f"{MAX_PDF_TEXT_PER_BYTE} a byte of the file past the first {PDF_TEXT_FREE:,}, {MAX_PDF_TEXT_CHARS:,} in "
                "all); split it into smaller files",
                "files",
            )
        blocks += _paragraphs(text, page=n)
    return blocks, len(reader.pages)


def _paragraph_style_names(doc: Any) -> tuple[dict[str, str], str]:
    """Lowercased names of the document's paragraph styles by style id, and the default paragraph
    style's (what a paragraph without a known paragraph style id has), read once.

    python-docx's Paragraph.style looks the id up (or, for a paragraph without one, the default)
    with a scan of every style, per paragraph: paragraphs x styles, both cheap to put in a small
    compressed file."""
    from docx.enum.style import WD_STYLE_TYPE

    names: dict[str, str] = {}
    for el in doc.styles.element.style_lst:
        if el.type == WD_STYLE_TYPE.PARAGRAPH and el.styleId is not None:
            names.setdefault(el.styleId, (el.name_val or "").lower())
    default = doc.styles.default(WD_STYLE_TYPE.PARAGRAPH)
    default_name = (default.name or "").lower() if default is not None else ""
    return names, default_name


def read_docx(data: bytes) -> list[Block]:
    import docx

    doc = docx.Document(io.BytesIO(data))
    names, default = _paragraph_style_names(doc)
    blocks = []
    for p in doc.paragraphs:
        text = p.text.strip()
        if text:
            style = names.get(p._p.style or "", default)
            blocks.append(Block(text, heading=style.startswith("heading") or style == "title"))
    for table in doc.tables:
        for row in table.rows:
            cells = [c.text.strip() for c in row.cells if c.text.strip()]
            if cells:
                blocks.append(Block(" | ".join(cells)))
    return blocks


def _html_blocks(root: Tag) -> Iterator[Tag]:
    """The outermost block elements (_HTML_BLOCKS) under `root`, in document order, without going
    into them: the outer one carries the text of any inside it, so no text is read twice and reading
    the yielded (disjoint) subtrees is linear. One walk with a stack of child iterators: asking each
    element for a block parent (find_parent) was quadratic in nesting depth, and recursion would not
    survive thousands of levels."""
    from bs4 import Tag

    stack = [iter(root.children)]
    while stack:
        for node in stack[-1]:
            if isinstance(node, Tag):
                if node.name in _HTML_BLOCKS:
                    yield node
                else:
                    stack.append(iter(node.children))
                    break
        else:
            stack.pop()


def read_html(data: bytes) -> tuple[list[Block], str | None]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "lxml")
    for tag in soup(["script", "style", "noscript", "nav", "footer", "header", "form"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else None
    blocks = []
    for el in _html_blocks(soup):
        text = re.sub(r"\s+", " ", el.get_text(" ", strip=True)).strip()
        if text:
            heading = el.name[0] == "h" and len(el.name) == 2 and len(text) <= HEADING_MAX_CHARS
            blocks.append(Block(text, heading=heading))
    if not blocks:
        blocks = _paragraphs(soup.get_text("\n"))
    return blocks, title


def read(name: str, source_type: str, data: bytes) -> tuple[list[Block], int | None]:
    """Blocks of the file and its page count (PDF only); clear errors for what can't be read."""
    try:
        if source_type in ("txt", "md"):
            return _paragraphs(_decode(data), markdown=source_type == "md"), None
        if source_type == "html":
            return read_html(data)[0], None
        if source_type == "pdf":
            return read_pdf(data)
        if source_type == "docx":
            return read_docx(data), None
    except UnreadableFile:
        raise
    except Exception as exc:
        raise UnreadableFile(
            f"{name}: cannot read this {source_type.upper()} file ({type(exc).__name__}: {exc})"[:500], "files"
        ) from None
    if source_type == "doc":
        raise UnreadableFile(
            f"{name}: legacy Word .doc files are unsupported (no maintained Python reader); save it as .docx or PDF",
            "files",
        )
    raise UnreadableFile(f"{name}: unsupported file type {source_type!r}", "files")
