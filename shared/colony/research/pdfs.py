"""A PDF, read with ``pypdf``: the text of its first pages, its title and date.

    read_pdf(url, content, today)
      open         pypdf, not strict, under ``LIMITS`` (pypdf's own resource limits,
                   tightened for one function instance reading many files)
      encrypted    opened with the empty user password if it has one (owner-only
                   protection), else ``encrypted_pdf``
      pages        the first ``MAX_PAGES``, until ``MAX_TEXT`` characters or ``SECONDS``
      damaged      what pages were read, ``broken_pdf``; a file pypdf cannot open at all
                   (cut off: no cross-reference table, no trailer; the fetcher's first
                   5 MB of a bigger file, ``too_large``, is one) is salvaged (``salvage``)
                   for the strings its content streams show, as far as they go

**Bounds.** A hostile PDF must not take minutes or gigabytes: the fetcher caps a file at
5 MB; ``LIMITS`` caps what one stream may inflate to (a Flate bomb stops at 10 MB), the
work spent parsing one content stream, the page tree, and the form XObjects one page may
draw; pages past ``MAX_PAGES`` are not read, nor any page once ``SECONDS`` have passed.
The clock is looked at between pages; within a page the parsing budget is what bounds it.

**Title and date.** The document information's ``/Title`` and ``/CreationDate`` when present
(``date_source`` ``pdf``); else the first line of text, and a press release's dateline
("FOR IMMEDIATE RELEASE - November 2, 2026") in its first lines (``text``).
"""

from __future__ import annotations

import io
import re
import time
import zlib
from dataclasses import replace
from datetime import date
from itertools import islice
from typing import TYPE_CHECKING, Any

from colony.research import dates
from colony.research.document import MAX_TEXT, MAX_TITLE, Document, one_line, paragraphs

if TYPE_CHECKING:
    import pypdf

MAX_PAGES = 30
SECONDS = 5.0
DATELINE_CHARS = 1_000  # where a press release's dateline sits
LIMITS: dict[str, Any] = {
    "zlib_maximum_output_length": 10_000_000,
    "lzw_maximum_output_length": 10_000_000,
    "run_length_maximum_output_length": 10_000_000,
    "brotli_maximum_output_length": 10_000_000,
    "array_based_stream_maximum_output_length": 10_000_000,
    "maximum_declared_stream_length": 10_000_000,
    "stream_decoding_work_maximum_length": 40_000_000,
    "stream_parsing_work_maximum_count": 200_000,  # a dense page of text uses ~5,000
    "page_tree_maximum_entries": 10_000,
    "page_tree_maximum_page_entries": 100_000,
    "xform_maximum_invocations_per_extraction": 200,
    "outline_maximum_entries": 1_000,
    "jbig2dec_binary": None,  # images are never decoded here; never run a program for one
}
SALVAGED_BYTES = 20_000_000  # what a damaged file's streams may inflate to, all together
SALVAGED_STREAMS = 1_000
# One pass over the file finds where each stream starts and ends. The text patterns stop at
# the next delimiter they exclude (a string at the next parenthesis, even an escaped one;
# an array at the next bracket), so no start is scanned past the next one's: a stream of
# ten million unclosed brackets costs one scan, not n². A string with escaped parentheses
# is lost; the rest of its page is not.
_MARKS = re.compile(rb"(?<!end)stream\r?\n|endstream")
_STRING = rb"\(((?:[^()\\]|\\[^()])*)\)"
_SHOWN = re.compile(_STRING + rb"\s*(?:Tj|')|\[([^\[\]]*)\]\s*TJ")
_LITERAL = re.compile(_STRING)
_ESCAPE = re.compile(rb"\\([0-7]{1,3}|.)", re.S)
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}


def _unescape(literal: bytes) -> str:
    def one(found: re.Match[bytes]) -> bytes:
        code = found.group(1)
        if code[:1].isdigit():
            return bytes([int(code, 8) & 0xFF])
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, literal).decode("cp1252", "replace")


def _streams(content: bytes) -> list[bytes]:
    """Every content stream's bytes, inflated where they inflate (a cut stream inflates as
    far as it goes): the first ``SALVAGED_STREAMS``, at most ``SALVAGED_BYTES`` in all."""
    found: list[bytes] = []
    budget = SALVAGED_BYTES

    def take(raw: bytes) -> None:
        nonlocal budget
        try:
            data = zlib.decompressobj().decompress(raw, budget)
        except zlib.error:
            data = raw[:budget]
        budget -= len(data)
        found.append(data)

    opened: int | None = None  # where the stream being read began
    for mark in islice(_MARKS.finditer(content), 2 * SALVAGED_STREAMS):
        if opened is not None and budget > 0:
            take(content[opened : mark.start()])
        opened = None if mark.group(0) == b"endstream" else mark.end()
    if opened is not None and budget > 0:
        take(content[opened:])
    return found


def salvage(content: bytes) -> str:
    """The text a damaged PDF's complete ``Tj``/``TJ``/``'`` strings show, one line each
    (WinAnsi read as Windows-1252): what is left when pypdf cannot open the file."""
    lines: list[str] = []
    size = 0
    for stream in _streams(content):
        for shown in _SHOWN.finditer(stream):
            if shown.group(1) is not None:
                line = _unescape(shown.group(1))
            else:
                line = "".join(_unescape(part) for part in _LITERAL.findall(shown.group(2)))
            lines.append(line)
            size += len(line)
            if size >= MAX_TEXT:
                return paragraphs("\n".join(lines), MAX_TEXT)
    return paragraphs("\n".join(lines), MAX_TEXT)


def _information(reader: pypdf.PdfReader, today: date) -> tuple[str | None, date | None]:
    try:
        info = reader.metadata
        if info is None:
            return None, None
        title = one_line(info.title, MAX_TITLE) or None
        created = info.creation_date
    except Exception:  # a damaged /Info dictionary: read on without it
        return None, None
    return title, dates.published(created.date() if created else None, today)


def _described(url: str, text: str, title: str | None, day: date | None, today: date) -> Document:
    source = "pdf" if day else None
    if day is None and (day := dates.published(dates.dateline(text[:DATELINE_CHARS]), today)):
        source = "text"
    first = one_line(text.split("\n", 1)[0], MAX_TITLE) if text else ""
    return Document(
        "pdf", url, title=title or first or None, text=text, published_at=day, date_source=source
    )


def _pages(reader: pypdf.PdfReader, deadline: float) -> tuple[str, bool]:
    """The text of the first pages, and whether a page could not be read."""
    texts: list[str] = []
    size, damaged = 0, False
    try:
        pages = reader.pages
        for number in range(min(len(pages), MAX_PAGES)):
            if size >= MAX_TEXT or time.monotonic() > deadline:
                break
            try:
                text = pages[number].extract_text() or ""
            except Exception:  # pypdf on a damaged or hostile page raises anything: skip it
                damaged = True
                continue
            texts.append(text)
            size += len(text)
    except Exception:  # the page tree itself is damaged or over its limits
        damaged = True
    return paragraphs("\n\n".join(texts), MAX_TEXT), damaged


def read_pdf(url: str, content: bytes, today: date) -> Document:
    """The PDF at ``url`` whose bytes are ``content``."""
    # lazy: pypdf (the research function's costliest import) loads with the first PDF a
    # pass reads, not on every request: a pass reads one only where an article links it
    import pypdf

    with pypdf.apply_configuration(**LIMITS):
        try:
            reader = pypdf.PdfReader(io.BytesIO(content), strict=False)
        except Exception:  # not a PDF pypdf can open (cut off, garbage): salvage the text
            found = _described(url, salvage(content), None, None, today)
            return replace(found, problem="broken_pdf")
        if reader.is_encrypted:
            try:
                opened = bool(reader.decrypt(""))
            except Exception:  # an encryption pypdf cannot handle is as closed as a password
                opened = False
            if not opened:
                return Document("pdf", url, problem="encrypted_pdf")
        title, day = _information(reader, today)
        text, damaged = _pages(reader, time.monotonic() + SECONDS)
    found = _described(url, text, title, day, today)
    return replace(found, problem="broken_pdf") if damaged else found
