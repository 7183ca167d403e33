"""A fake ``PageRenderer``: the text each page would show once its scripts ran is told to it.

``StaticRenderer({url: text})`` answers a page it was told of as ``rendered``: a DOM holding
that text in a ``<main>``, the text, and a small real PNG; any other page is ``failed``. It
records what it was asked to render (``rendered``: URL and the bytes' length). It never
touches a network or a browser; the conformance suite
(``tests/conformance/test_page_renderer.py``) holds it and ``ChromiumRenderer`` to one contract.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from html import escape

from colony.ports.render import Rendered


def png(width: int = 4, height: int = 3) -> bytes:
    """A valid white RGB PNG of ``width`` x ``height``."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff" * 3 * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class StaticRenderer:
    """``PageRenderer`` over a table of what each URL shows (module docstring)."""

    def __init__(self, shows: Mapping[str, str]) -> None:
        self.shows = dict(shows)
        self.rendered: list[tuple[str, int]] = []

    def render(self, url: str, html: bytes, *, charset: str | None = None) -> Rendered:
        self.rendered.append((url, len(html)))
        text = self.shows.get(url)
        if text is None:
            return Rendered("failed", detail="the fake was told nothing of this page")
        paragraphs = "".join(f"<p>{escape(p)}</p>" for p in text.split("\n\n"))
        dom = f"<html><head></head><body><main>{paragraphs}</main></body></html>"
        return Rendered(
            "rendered", html=dom, text=text, screenshot_png=png(), detail="0 fetched, 0 not"
        )
