"""Text out of files, with well-kept libraries: pypdf (PDF, per page), python-docx (DOCX),
BeautifulSoup (HTML); TXT and Markdown are decoded as text. Each reader yields blocks (a heading
or a paragraph, with its page) so that chunking can cut at structure boundaries."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

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


@dataclass
class Block:
    text: str
    heading: bool = False
    page: int | None = None


class UnreadableFile(Exception):
    """The file's type is unsupported or its content could not be read. An import reports it as
    that file's outcome (engine/documents.py); it never ends a request."""

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


def read_pdf(data: bytes) -> tuple[list[Block], int]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        raise UnreadableFile("the PDF is encrypted", "files")
    blocks = []
    for n, page in enumerate(reader.pages, start=1):
        blocks += _paragraphs(page.extract_text() or "", page=n)
    return blocks, len(reader.pages)


def read_docx(data: bytes) -> list[Block]:
    import docx

    doc = docx.Document(io.BytesIO(data))
    blocks = []
    for p in doc.paragraphs:
        text = p.text.strip()
        if text:
            style = (p.style.name or "").lower() if p.style is not None else ""
            blocks.append(Block(text, heading=style.startswith("heading") or style == "title"))
    for table in doc.tables:
        for row in table.rows:
            cells = [c.text.strip() for c in row.cells if c.text.strip()]
            if cells:
                blocks.append(Block(" | ".join(cells)))
    return blocks


def read_html(data: bytes) -> tuple[list[Block], str | None]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "lxml")
    for tag in soup(["script", "style", "noscript", "nav", "footer", "header", "form"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else None
    blocks = []
    for el in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "blockquote", "td"]):
        if el.find_parent(["p", "li", "pre", "blockquote", "td"]) is not None:
            continue  # nested: the outer element carries the text
        text = re.sub(r"\s+", " ", el.get_text(" ", strip=True)).strip()
        if text:
            blocks.append(Block(text, heading=el.name[0] == "h" and len(el.name) == 2))
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
