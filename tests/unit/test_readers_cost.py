"""The document readers do work in proportion to the file, not to what a small hostile file can ask
for: deep HTML nesting, a DOCX with many styles, PDF pages sharing one content stream. Each test
counts the work (calls into the libraries) rather than timing it, and checks that ordinary
documents still read the same."""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from typing import Any

import bs4
import docx
import pytest
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml.styles import CT_Styles
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ContentStream

from hindsight.files import readers
from hindsight.files.chunking import chunk_blocks
from hindsight.files.readers import Block, UnreadableFile, read_docx, read_html, read_pdf


def _counting(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> list[int]:
    """Replace `owner.name` by a wrapper that counts its calls (in the returned one-item list)."""
    calls = [0]
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


# ---- HTML ----------------------------------------------------------------------------------------


@pytest.fixture
def no_ancestor_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking each element for a block ancestor made reading quadratic in nesting depth."""

    def refused(*_: Any, **__: Any) -> None:
        raise AssertionError("read_html walked up to an element's ancestors")

    monkeypatch.setattr(bs4.Tag, "find_parent", refused)


@pytest.mark.usefixtures("no_ancestor_walks")
def test_html_deep_nesting_is_walked_once_without_recursion() -> None:
    depth = 3_000  # beyond Python's recursion limit: the walk must not recurse
    blocks, _ = read_html(("<html><body>" + "<div><p>a</p>" * depth + "</body></html>").encode())
    assert blocks == [Block("a")] * depth


@pytest.mark.usefixtures("no_ancestor_walks")
def test_html_ordinary_page_reads_the_same() -> None:
    page = b"""<html><head><title> The Title </title><style>p {}</style></head><body>
    <nav><p>menu</p></nav><script>var x = 1;</script>
    <h1>Main   heading</h1>
    <p>First
       paragraph, <b>bold</b> words.</p>
    <ul><li>one</li><li><p>two, nested</p></li></ul>
    <blockquote><p>quoted</p></blockquote>
    <h2>Sub <blockquote>inside a heading</blockquote></h2>
    <table><tr><td>cell <p>text</p></td><td>b</td></tr></table>
    <pre>code   here</pre>
    </body></html>"""
    blocks, title = read_html(page)
    assert title == "The Title"
    assert blocks == [
        Block("Main heading", heading=True),
        Block("First paragraph, bold words."),
        Block("one"),
        Block("two, nested"),
        Block("quoted"),
        Block("Sub inside a heading", heading=True),
        Block("cell text"),
        Block("b"),
        Block("code here"),
    ]
    blocks, title = read_html(b"<html><body><div>plain</div><div>\n\nmore text</div></body></html>")
    assert title is None
    assert [b.text for b in blocks] == ["plain", "more text"]


# ---- DOCX ----------------------------------------------------------------------------------------


def _docx_bytes(doc: Any) -> bytes:
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def _read_docx_counting_scans(monkeypatch: pytest.MonkeyPatch, data: bytes) -> tuple[list[Block], int]:
    """The file's blocks, and how many times reading it searched through the document's styles
    (python-docx's Paragraph.style does it once per paragraph: by id, or for the default style)."""
    by_id = _counting(monkeypatch, CT_Styles, "get_by_id")
    default = _counting(monkeypatch, CT_Styles, "default_for")
    return read_docx(data), by_id[0] + default[0]


def test_docx_styles_are_scanned_once_not_per_paragraph(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = docx.Document()
    for k in range(300):
        doc.styles.element.add_style_of_type(f"extra {k}", WD_STYLE_TYPE.CHARACTER, False)
    for k in range(200):
        doc.add_paragraph(f"paragraph {k}")
    blocks, scans = _read_docx_counting_scans(monkeypatch, _docx_bytes(doc))
    assert blocks == [Block(f"paragraph {k}") for k in range(200)]
    assert scans <= 1


def test_docx_ordinary_document_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = docx.Document()
    doc.add_paragraph("The Title", style="Title")
    doc.add_heading("Chapter one", level=1)
    doc.add_paragraph("Plain body text.")
    doc.add_paragraph("A quotation.", style="Quote")
    doc.add_paragraph("   ")
    unknown = doc.add_paragraph("Unknown style id: the default style")
    unknown._p.style = "NoSuchStyle"
    wrong_type = doc.add_paragraph("A character style's id: the default style")
    wrong_type._p.style = doc.styles["Heading 1 Char"].style_id
    doc.add_heading("Section", level=2)
    table = doc.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "name", "value"
    table.cell(1, 0).text = "alone"
    blocks, scans = _read_docx_counting_scans(monkeypatch, _docx_bytes(doc))
    assert blocks == [
        Block("The Title", heading=True),
        Block("Chapter one", heading=True),
        Block("Plain body text."),
        Block("A quotation."),
        Block("Unknown style id: the default style"),
        Block("A character style's id: the default style"),
        Block("Section", heading=True),
        Block("name | value"),
        Block("alone"),
    ]
    assert scans <= 1


# ---- PDF -----------------------------------------------------------------------------------------


def _pdf(streams: list[bytes], contents: list[str]) -> bytes:
    """A PDF whose content streams are objects 4, 5, ... and whose pages have these /Contents."""
    first_page = 4 + len(streams)
    kids = " ".join(f"{first_page + i} 0 R" for i in range(len(contents)))
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(contents)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for s in streams:
        packed = zlib.compress(s)
        objs.append(f"<< /Length {len(packed)} /Filter /FlateDecode >>\nstream\n".encode() + packed + b"\nendstream")
    for c in contents:
        objs.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            + f"/Contents {c} >>".encode()
        )
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, o in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n".encode() + o + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode())
    out.write(b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets))
    out.write(f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def _text(words: str) -> bytes:
    return f"BT /F1 12 Tf 72 700 Td ({words}) Tj ET\n".encode()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Content streams pypdf parses (one ContentStream a page's text extraction)."""
    return _counting(monkeypatch, ContentStream, "__init__")


def test_pdf_pages_sharing_a_content_stream_parse_it_once(parses: list[int]) -> None:
    blocks, pages = read_pdf(_pdf([_text("Shared words")], ["4 0 R"] * 40))
    assert pages == 40
    assert blocks == [Block("Shared words", page=1)]
    assert parses[0] == 1


def test_pdf_page_repeating_a_stream_in_its_array_reads_it_once(parses: list[int]) -> None:
    data = _pdf([_text("Once"), _text("Twice")], ["[4 0 R 4 0 R 4 0 R 4 0 R]", "4 0 R", "[4 0 R 5 0 R 4 0 R]"])
    blocks, pages = read_pdf(data)
    assert pages == 3
    text = " ".join(b.text for b in blocks)
    assert text.count("Once") == 2 and text.count("Twice") == 1  # page 3 has a new stream: read whole
    assert [b.page for b in blocks] == [1, 3]
    assert parses[0] == 2


def test_pdf_text_past_the_cap_fails_the_file(monkeypatch: pytest.MonkeyPatch, parses: list[int]) -> None:
    monkeypatch.setattr(readers, "MAX_PDF_TEXT_CHARS", 50)
    streams = [_text(f"page {n} has twenty") for n in range(1, 6)]
    with pytest.raises(UnreadableFile, match="exceeds 50 characters"):
        read_pdf(_pdf(streams, [f"{4 + i} 0 R" for i in range(5)]))
    assert parses[0] == 3  # stopped at the page that went past the cap


def test_pdf_ordinary_document_reads_every_page_and_skips_a_repeated_one(parses: list[int]) -> None:
    made = FPDF()
    for words in ("First page text.", "Second page text.", "Third page text."):
        made.add_page()
        made.set_font("Helvetica", size=12)
        made.cell(text=words)
    original = PdfReader(io.BytesIO(bytes(made.output())))
    writer = PdfWriter()
    for page in [*original.pages, original.pages[1]]:  # page 4 shows page 2's content again
        writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    blocks, pages = read_pdf(out.getvalue())
    assert pages == 4
    assert blocks == [
        Block("First page text.", page=1),
        Block("Second page text.", page=2),
        Block("Third page text.", page=3),
    ]
    assert parses[0] == 3


def test_pdf_text_many_times_the_files_size_fails_the_file(monkeypatch: pytest.MonkeyPatch, parses: list[int]) -> None:
    # Flate packs repeated drawing ~650x, where a real PDF's text is a few times its size. Past a
    # first allowance (1M characters; 1,000 here to keep the test small), at most 20 characters a
    # byte of the file: the first page past that fails the file.
    monkeypatch.setattr(readers, "PDF_TEXT_FREE", 1_000)
    streams = [b"BT /F1 12 Tf " + b"(a) Tj " * 20_000 + b" " * n + b"ET\n" for n in range(5)]
    data = _pdf(streams, [f"{4 + i} 0 R" for i in range(5)])
    limit = 20 * len(data)
    assert 2 * 20_000 < limit < 3 * 20_000
    with pytest.raises(UnreadableFile, match=rf"exceeds {limit:,} characters \(at page 3 of 5; at most 20 a byte"):
        read_pdf(data)
    assert parses[0] == 3


def test_pdf_pages_sharing_a_stream_with_resources_of_their_own_are_all_read() -> None:
    # `q /Fm0 Do Q` on every page, each page's /Fm0 its own form: one stream once pypdf's
    # compress_identical_objects (or another optimiser) merged the identical ones, three texts.
    from pypdf import PdfWriter
    from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject

    w = PdfWriter()
    font = w._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
    )
    for text in ("Alpha page text", "Beta page text", "Gamma page text"):
        form = DecodedStreamObject()
        form.set_data(f"BT /F1 12 Tf 72 700 Td ({text}) Tj ET".encode())
        form.update(
            {
                NameObject("/Type"): NameObject("/XObject"),
                NameObject("/Subtype"): NameObject("/Form"),
                NameObject("/BBox"): ArrayObject([NumberObject(x) for x in (0, 0, 612, 792)]),
                NameObject("/Resources"): DictionaryObject(
                    {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
                ),
            }
        )
        draw = DecodedStreamObject()
        draw.set_data(b"q /Fm0 Do Q")
        page = w.add_blank_page(612, 792)
        page[NameObject("/Contents")] = w._add_object(draw)
        xobjects = DictionaryObject({NameObject("/Fm0"): w._add_object(form)})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/XObject"): xobjects})
    w.compress_identical_objects()
    out = io.BytesIO()
    w.write(out)
    blocks, pages = read_pdf(out.getvalue())
    assert [(b.text, b.page) for b in blocks] == [("Alpha page text", 1), ("Beta page text", 2), ("Gamma page text", 3)]


def test_html_heading_holding_the_page_is_read_as_paragraphs() -> None:
    # `<h1>Title<div><p>...` nests the page in the heading: read as a heading it would be one chunk
    # (chunking never cuts a heading); past HEADING_MAX_CHARS it is a paragraph, cut to size.
    body = "".join(f"<p>{i} {'This is a sentence of body text. ' * 15}</p>" for i in range(40))
    blocks, _ = read_html(f"<h1>Annual report<div>{body}</div></h1><h2>Short heading</h2>".encode())
    assert [b.heading for b in blocks] == [False, True] and blocks[0].text.startswith("Annual report 0 This")
    assert max(len(c.text) for c in chunk_blocks(blocks, 2_000)) <= 2_000
