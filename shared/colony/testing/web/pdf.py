"""One-page PDFs written by hand (no PDF package is a dependency): a press release whose text
any PDF reader extracts (Helvetica, WinAnsi, one ``Tj`` per line), the same encrypted with a
user password (the standard security handler, revision 2: RC4 with a 40-bit key, PDF 1.7
§7.6.3), and a broken one (cut off mid-stream, no cross-reference table).
"""

from __future__ import annotations

import hashlib
import textwrap
import zlib

# PDF 1.7 §7.6.3.3, algorithm 2: the padding a password is completed with.
PAD = bytes.fromhex("28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a")
PERMISSIONS = -44  # print and copy refused; the P entry, as a signed 32-bit integer
USER_PASSWORD = b"press-only"  # what opens the encrypted one (a test may decrypt with it)
FILE_ID = hashlib.md5(b"colony stand-in press release").digest()


def rc4(key: bytes, data: bytes) -> bytes:
    state, j = list(range(256)), 0
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) % 256
        state[i], state[j] = state[j], state[i]
    out, i, j = bytearray(), 0, 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + state[i]) % 256
        state[i], state[j] = state[j], state[i]
        out.append(byte ^ state[(state[i] + state[j]) % 256])
    return bytes(out)


def _escape(line: str) -> bytes:
    raw = line.encode("cp1252", "replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def content_stream(title: str, paragraphs: list[str]) -> bytes:
    """The page's text operators: the title in 16 pt, then the wrapped paragraphs."""
    ops = [b"BT", b"/F1 16 Tf", b"18 TL", b"72 740 Td", b"(" + _escape(title) + b") Tj", b"T*"]
    ops += [b"/F1 11 Tf", b"14 TL"]
    for paragraph in paragraphs:
        for line in textwrap.wrap(paragraph, 88) or [""]:
            ops += [b"T*", b"(" + _escape(line) + b") Tj"]
        ops.append(b"T*")
    ops.append(b"ET")
    return b"\n".join(ops)


def _assemble(objects: list[bytes], trailer: bytes) -> bytes:
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n" + trailer + b"\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _objects(stream: bytes) -> list[bytes]:
    return [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]


def press_release(title: str, paragraphs: list[str]) -> bytes:
    """A valid one-page PDF whose text is ``title`` and ``paragraphs``."""
    return _assemble(_objects(content_stream(title, paragraphs)), b"<< /Size 6 /Root 1 0 R >>")


def file_key(user_password: bytes, owner_entry: bytes) -> bytes:
    """Algorithm 2 (revision 2): the 5-byte file key."""
    seed = (user_password + PAD)[:32] + owner_entry
    seed += (PERMISSIONS & 0xFFFFFFFF).to_bytes(4, "little") + FILE_ID
    return hashlib.md5(seed).digest()[:5]


def object_key(key: bytes, number: int) -> bytes:
    """Algorithm 1: the RC4 key of object ``number`` (generation 0)."""
    return hashlib.md5(key + number.to_bytes(3, "little") + b"\x00\x00").digest()[:10]


def encrypted_press_release(title: str, paragraphs: list[str]) -> bytes:
    """The press release, its content stream encrypted; opening it needs ``USER_PASSWORD``."""
    owner_key = hashlib.md5((b"owner-secret" + PAD)[:32]).digest()[:5]
    owner_entry = rc4(owner_key, (USER_PASSWORD + PAD)[:32])  # algorithm 3
    key = file_key(USER_PASSWORD, owner_entry)
    objects = _objects(rc4(object_key(key, 5), content_stream(title, paragraphs)))
    objects.append(
        b"<< /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P %d >>"
        % (owner_entry.hex().encode(), rc4(key, PAD).hex().encode(), PERMISSIONS)
    )
    ident = FILE_ID.hex().encode()
    trailer = b"<< /Size 7 /Root 1 0 R /Encrypt 6 0 R /ID [<%s> <%s>] >>" % (ident, ident)
    return _assemble(objects, trailer)


def broken_press_release(title: str, paragraphs: list[str]) -> bytes:
    """A PDF cut off inside its content stream: no xref, no trailer, no ``%%EOF``."""
    whole = press_release(title, paragraphs)
    return whole[: whole.index(b"stream\n") + 40]


def document(streams: list[bytes], *, flate: bool = False, info: bytes | None = None) -> bytes:
    """A PDF of one page per content stream (Helvetica as ``/F1``), each stream compressed
    with ``/FlateDecode`` if ``flate``; ``info`` is the document information dictionary's
    entries (e.g. ``b"/Title (Annual report)"``). For the reader's tests: many pages, big
    or hostile streams, metadata."""
    count = len(streams)
    font = 3 + 2 * count
    kids = b" ".join(b"%d 0 R" % (3 + i) for i in range(count))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>"]
    objects[1] %= (kids, count)
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font, 3 + count + i)
        for i in range(count)
    ]
    for stream in streams:
        data = zlib.compress(stream) if flate else stream
        extra = b" /Filter /FlateDecode" if flate else b""
        objects.append(b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream")
    objects.append(_objects(b"")[3])  # the font
    trailer = b"<< /Size %d /Root 1 0 R" % (len(objects) + 2 if info else len(objects) + 1)
    if info is not None:
        objects.append(b"<< " + info + b" >>")
        trailer += b" /Info %d 0 R" % len(objects)
    return _assemble(objects, trailer + b" >>")
