"""PDFs (``colony.research.pdfs``): text, title and date; password-protected, damaged and
hostile files, each answered quickly with what could be read and its problem."""

from __future__ import annotations

import io
import time
from datetime import date

import pypdf

from colony.research import Document, read
from colony.research.pdfs import MAX_PAGES
from colony.testing.web import pdf

TODAY = date(2026, 12, 3)
URL = "https://acme.example/files/report.pdf"


def pages(count: int, *, flate: bool = False, info: bytes | None = None) -> bytes:
    texts = [pdf.content_stream(f"Page {n}", [f"Body of page {n}."]) for n in range(count)]
    return pdf.document(texts, flate=flate, info=info)


def read_pdf(content: bytes) -> tuple[Document, float]:
    started = time.monotonic()
    document = read(URL, "application/pdf", content, None, today=TODAY)
    return document, time.monotonic() - started


def test_metadata_gives_the_title_and_date() -> None:
    info = b"/Title (Annual report 2026) /CreationDate (D:20261028090000Z)"
    document = read(URL, "application/pdf", pages(2, flate=True, info=info), None, today=TODAY)
    assert document.kind == "pdf" and document.problem is None
    assert document.title == "Annual report 2026"
    assert (document.published_at, document.date_source) == (date(2026, 10, 28), "pdf")
    assert "Body of page 0." in document.text and "Body of page 1." in document.text


def test_a_pdf_is_read_by_its_bytes_whatever_its_type_said() -> None:
    document = read(URL, "application/octet-stream", pages(1), None, today=TODAY)
    assert document.kind == "pdf" and "Body of page 0." in document.text


def test_a_future_creation_date_is_no_publication_date() -> None:
    info = b"/CreationDate (D:20300101000000Z)"
    document = read(URL, "application/pdf", pages(1, info=info), None, today=TODAY)
    assert document.published_at is None and document.date_source is None


def test_only_the_first_pages_are_read() -> None:
    document = read(URL, "application/pdf", pages(300), None, today=TODAY)
    assert document.problem is None
    assert f"Page {MAX_PAGES - 1}" in document.text and f"Page {MAX_PAGES}\n" not in document.text


def test_owner_only_protection_opens_with_the_empty_password() -> None:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pages(1))))
    writer.encrypt(user_password="", owner_password="owner-secret", algorithm="RC4-128")
    sealed = io.BytesIO()
    writer.write(sealed)
    document = read(URL, "application/pdf", sealed.getvalue(), None, today=TODAY)
    assert document.problem is None and "Body of page 0." in document.text


def test_a_user_password_is_encrypted_pdf() -> None:
    sealed = pdf.encrypted_press_release("Sealed", ["Secret text."])
    document = read(URL, "application/pdf", sealed, None, today=TODAY)
    assert (document.problem, document.text, document.title) == ("encrypted_pdf", "", None)


def test_a_cut_off_file_gives_the_text_it_still_holds() -> None:
    whole = pages(3, flate=True)
    cut = whole[: whole.rindex(b"endstream") - 30]  # inside the last page's stream
    document, took = read_pdf(cut)
    assert document.problem == "broken_pdf"
    text = document.text
    assert "Body of page 0.\nPage 1\nBody of page 1." in text and "Page 2" in text
    assert document.title == "Page 0" and took < 2


def test_garbage_after_the_header_is_broken_pdf() -> None:
    document, _ = read_pdf(b"%PDF-1.7\n" + bytes(range(256)) * 40)
    assert (document.problem, document.text) == ("broken_pdf", "")


def test_hostile_pdfs_are_cut_short_quickly() -> None:
    flate_bomb = pdf.document([b"0 0 m\n" * 12_000_000], flate=True)  # 72 MB inflated
    busy_page = pdf.document([b"(x) Tj\n" * 700_000])  # 700,000 operators on one page
    head = b"%PDF-1.4\n1 0 obj\n<< /Length 5000000 >>\nstream\n"
    for hostile in (
        flate_bomb,
        busy_page,
        head + b"[" * 4_000_000,  # unclosed arrays: no scan may restart at each one
        head + b"(\\" * 2_000_000,  # unclosed strings of escaped parentheses
        b"%PDF-1.4\n" + b"stream\n" * 500_000,
    ):
        document, took = read_pdf(hostile)
        assert document.problem == "broken_pdf", hostile[:60]
        assert took < 5, (hostile[:60], took)
    assert len(flate_bomb) < 200_000
