"""One string field of a JSON answer, read while the answer is still streaming in.

A structured answer streams as JSON text (``{"answer": "Good mor``…); what a person should
see as it arrives is the decoded value of one top-level string field. ``FieldText.feed``
takes the raw fragments in order and returns the field's newly decoded characters each time
(escapes decoded, a ``\\uXXXX`` or a surrogate pair held back until it is whole), and nothing
for any other part of the document. It reads no further than it must and never fails: an
answer that is not the JSON it hoped for just yields nothing, and the runner judges the whole
answer afterwards as it always does.
"""

from __future__ import annotations

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class FieldText:
    """The decoded value of the top-level string field ``name``, fragment by fragment."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._unicode: str | None = None  # the hex digits of a \u escape so far
        self._high: int | None = None  # a high surrogate waiting for its pair
        self._expect_key = False
        self._key: list[str] | None = None  # the top-level key being read
        self._last_key: str | None = None
        self._value_of: str | None = None  # the key whose value comes next
        self._capturing = False
        self._done = False

    def feed(self, fragment: str) -> str:
        """The field's characters decoded from ``fragment`` (empty if none)."""
        out: list[str] = []
        for char in fragment:
            if self._done:
                break
            if self._in_string:
                self._string_char(char, out)
            else:
                self._structural(char)
        return "".join(out)

    def _structural(self, char: str) -> None:
        if char in "{[":
            self._depth += 1
            self._expect_key = char == "{" and self._depth == 1
            self._value_of = None
        elif char in "}]":
            self._depth -= 1
        elif self._depth == 1 and char == ",":
            self._expect_key = True
        elif self._depth == 1 and char == ":":
            self._value_of = self._last_key
        elif char == '"':
            self._in_string = True
            if self._depth == 1 and self._expect_key:
                self._key, self._expect_key = [], False
            elif self._depth == 1 and self._value_of == self.name:
                self._capturing = True
        elif not char.isspace():
            self._value_of = None  # a number, true, false or null: not our string

    def _string_char(self, char: str, out: list[str]) -> None:
        if self._unicode is not None:
            self._unicode += char
            if len(self._unicode) == 4:
                self._emit(chr(int(self._unicode, 16)) if _hex(self._unicode) else "", out)
                self._unicode = None
            return
        if self._escape:
            self._escape = False
            if char == "u":
                self._unicode = ""
            else:
                self._emit(_ESCAPES.get(char, char), out)
            return
        if char == "\\":
            self._escape = True
        elif char == '"':
            self._in_string = False
            if self._key is not None:
                self._last_key, self._key = "".join(self._key), None
            elif self._capturing:
                self._capturing, self._done = False, True
            self._value_of = None
        else:
            self._emit(char, out)

    def _emit(self, text: str, out: list[str]) -> None:
        if self._key is not None:
            self._key.append(text)
            return
        if not self._capturing or not text:
            return
        code = ord(text) if len(text) == 1 else 0
        if 0xD800 <= code < 0xDC00:  # a high surrogate: wait for its low half
            self._high = code
            return
        if 0xDC00 <= code < 0xE000 and self._high is not None:
            text = chr(0x10000 + ((self._high - 0xD800) << 10) + (code - 0xDC00))
        self._high = None
        out.append(text)


def _hex(digits: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in digits)
