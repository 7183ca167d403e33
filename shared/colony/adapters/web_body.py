"""What a fetched body is: its type, its bytes up to the cap, and its text.

- **Types.** ``PAGE_TYPES`` are what the research runner reads (HTML and XHTML, RSS / Atom /
  XML feeds, JSON job boards, PDF); anything else is ``bad_type`` and its body is not read.
  ``SUBRESOURCE_TYPES`` are what a rendered page's scripts are handed (scripts, JSON, text).
- **Bytes.** ``BodyReader`` takes the body as it streams, undoes gzip or deflate (a
  compressed body is capped on what it expands to, so a small bomb is cut like a big page),
  and stops at the cap: a 50 MB page costs its first ``max_bytes``, never 50 MB of memory.
- **Text.** ``decode`` picks the encoding as a browser would, in this order: a byte-order
  mark, the ``Content-Type`` charset, the document's own declaration (HTML ``<meta>``, the
  XML prolog), strict UTF-8, then detection (``charset-normalizer``; Latin script read as
  Windows-1252, ``_detected`` says why), so a Windows-1252 or
  Shift-JIS page served without a charset reads as written. ``iso-8859-1`` and ``ascii``
  labels mean Windows-1252, as the WHATWG Encoding Standard has browsers read them.
"""

from __future__ import annotations

import codecs
import re
import zlib

from charset_normalizer import from_bytes

FEED_TYPES = frozenset(
    {
        "application/rss+xml",
        "application/atom+xml",
        "application/rdf+xml",
        "application/xml",
        "text/xml",
        "application/feed+json",
    }
)
PAGE_TYPES = frozenset(
    {"text/html", "application/xhtml+xml", "application/json", "application/pdf"} | FEED_TYPES
)
BINARY_TYPES = frozenset({"application/pdf"})
# What a rendered page's scripts may be handed (colony.adapters.chromium): scripts, and what
# an XHR reads (JSON, text, markup); never a PDF, an image, a font or media.
SCRIPT_TYPES = frozenset(
    {
        "text/javascript",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "text/ecmascript",
    }
)
SUBRESOURCE_TYPES = (PAGE_TYPES - BINARY_TYPES) | SCRIPT_TYPES | {"text/plain"}
_ENCODINGS = {"gzip": 31, "x-gzip": 31, "deflate": 15}  # zlib window bits: gzip / zlib wrapper
_AS_WINDOWS_1252 = {"iso8859-1", "ascii", "latin-1"}
_META = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.I)
_XML_DECL = re.compile(rb"""^<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_.:-]{1,40})""")
_LATIN_BLOCKS = ("Latin", "Punctuation", "Currency", "Letterlike", "Number")
_SNIFF = 4096  # how far into a document its own declaration is looked for


def media_type(header: str | None) -> tuple[str | None, str | None]:
    """``Content-Type`` → (media type, charset label), both lower-case; (None, None) if none."""
    if not header:
        return None, None
    kind, *params = header.split(";")
    charset = None
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower() or None
    return kind.strip().lower() or None, charset


def _codec(label: str | bytes | None) -> str | None:
    """The Python codec for an encoding label, or None for an unknown one."""
    if label is None:
        return None
    text = label.decode("ascii", "replace") if isinstance(label, bytes) else label
    try:
        name = codecs.lookup(text.strip()).name
    except LookupError:
        return None
    return "cp1252" if name in _AS_WINDOWS_1252 else name


def _declared(content: bytes, kind: str | None) -> str | None:
    head = content[:_SNIFF]
    if kind in ("text/html", "application/xhtml+xml") and (meta := _META.search(head)):
        return _codec(meta.group(1))
    if xml := _XML_DECL.match(head.lstrip()):
        return _codec(xml.group(1))
    return None


def decode(content: bytes, kind: str | None, header_charset: str | None) -> tuple[str, str]:
    """``content`` as text, and the codec that read it (the module docstring's order)."""
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if content.startswith(bom):
            return content.decode(name, "replace"), name
    chosen = _codec(header_charset) or _declared(content, kind)
    if chosen is None:
        try:
            return content.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            chosen = _detected(content)
    return content.decode(chosen, "replace"), chosen


def _detected(content: bytes) -> str:
    """The encoding detection gives, except that text it reads as Latin script is read as
    Windows-1252 when that decodes it: on a few hundred bytes of French, detectors choose
    among the Latin code pages (1250, 1252, 1257) almost at random, and 1252 is what the
    web's undeclared Western pages are written in (the WHATWG fallback)."""
    best = from_bytes(content).best()
    if best is None:
        return "cp1252"
    latin = all(any(word in a for word in _LATIN_BLOCKS) for a in best.alphabets)
    if latin:
        try:
            content.decode("cp1252")
            return "cp1252"
        except UnicodeDecodeError:
            pass
    return _codec(best.encoding) or "cp1252"


class TooLarge(Exception):
    """The body passed its cap; ``kept`` is its first ``max_bytes``."""

    def __init__(self, kept: bytes) -> None:
        super().__init__(f"over {len(kept)} bytes")
        self.kept = kept


class BodyReader:
    """Collects a streamed body, decompressed, up to ``max_bytes`` (``TooLarge`` past it)."""

    def __init__(self, max_bytes: int, content_encoding: str | None) -> None:
        encoding = (content_encoding or "identity").strip().lower()
        if encoding not in _ENCODINGS and encoding != "identity":
            raise ValueError(f"content encoding {encoding!r}")
        self._inflate = zlib.decompressobj(_ENCODINGS[encoding]) if encoding in _ENCODINGS else None
        self._max = max_bytes
        self._kept = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Add the next chunk as received; raises ``zlib.error`` for a broken compression."""
        room = self._max - len(self._kept) + 1  # one byte more than fits proves it is over
        data = chunk if self._inflate is None else self._inflate.decompress(chunk, room)
        self._kept += data[:room]
        if len(self._kept) > self._max:
            raise TooLarge(bytes(self._kept[: self._max]))

    def finish(self) -> bytes:
        """The whole body, once the stream ended."""
        if self._inflate is not None:
            self.feed(b"")
            self._kept += self._inflate.flush()[: self._max + 1 - len(self._kept)]
            if len(self._kept) > self._max:
                raise TooLarge(bytes(self._kept[: self._max]))
        return bytes(self._kept)
