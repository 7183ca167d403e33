"""Reading an uploaded import file into records, one at a time: the encoding (a BOM, strict
UTF-8, else detected by ``charset-normalizer``), the CSV dialect (``,``, ``;`` or tab, sniffed
from the header line), quoted newlines, and JSON lines. Pure: bytes in, records out.

What cannot be read at all is a ``FileRejected`` (one per file, naming the line): a binary
file, an encoding nobody can detect, a quoted field that never ends (a "CSV bomb": the field
would swallow the rest of the file, so fields are capped at ``MAX_FIELD_CHARS``), a header
naming one field twice. A record that is merely wrong is the caller's per-row business
(``colony.imports.rows``). Decoding is incremental (``io.TextIOWrapper`` over the bytes), so
memory holds the file's bytes once and one record at a time.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from colony.errors import Unprocessable

MAX_FIELD_CHARS = 10_000  # a notes cell may span lines; a field past this is a runaway quote
MAX_ROWS = 100_000
MAX_COLUMNS = 200
_SAMPLE = 64 * 1024  # bytes charset-normalizer looks at when the file is not UTF-8
_DELIMITERS = (",", ";", "\t")
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


class FileRejected(Unprocessable):
    """The file as a whole cannot be imported; nothing of it is stored."""

    code = "import_file_rejected"


@dataclass(frozen=True, slots=True)
class Record:
    """One data record: its number (1 = the first after the header), the physical line it
    starts on, and its cells by header (raw text, untrimmed); ``problem`` when the record
    itself is unreadable (a JSON line that is not an object)."""

    number: int
    line: int
    cells: Mapping[str, str]
    problem: str | None = None


def detect_encoding(data: bytes) -> str:
    """The file's text encoding: a BOM's, else UTF-8 if it all decodes, else what
    ``charset-normalizer`` finds most likely; ``FileRejected`` for a binary file."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name
    if b"\x00" in data[:_SAMPLE]:
        raise FileRejected("the file is binary (it contains NUL bytes), not CSV or JSON lines")
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for start in range(0, len(data), 1 << 20):  # validate in slices: no decoded copy
            decoder.decode(data[start : start + (1 << 20)], final=False)
        decoder.decode(b"", final=True)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes  # lazy: only for files that are not UTF-8

    best = from_bytes(data[:_SAMPLE]).best()
    if best is None:
        raise FileRejected("the file's text encoding could not be detected; save it as UTF-8")
    name = codecs.lookup(best.encoding).name
    try:
        codecs.decode(data, name)  # the sample's guess must hold for the whole file
    except UnicodeDecodeError:
        raise FileRejected(f"the file is not valid {name} throughout; save it as UTF-8") from None
    return name


def _text(data: bytes, encoding: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(data), encoding=encoding, newline="")


def sniff_delimiter(header_line: str) -> str:
    """``,``, ``;`` or tab: whichever the header line (outside quotes) holds most of."""
    unquoted = re.sub(r'"[^"]*"', "", header_line)
    counts = {d: unquoted.count(d) for d in _DELIMITERS}
    best = max(_DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else ","


def _reader(data: bytes, encoding: str) -> Any:
    stream = _text(data, encoding)
    first = stream.readline()
    if not first.strip():
        raise FileRejected("the file is empty: a header line is required")
    stream.seek(0)
    return csv.reader(stream, delimiter=sniff_delimiter(first), strict=True)


def _header(reader: Any) -> list[str]:
    header = [h.strip() for h in next(reader)]
    if len(header) > MAX_COLUMNS:
        raise FileRejected(f"the header has {len(header)} columns; at most {MAX_COLUMNS}")
    check_header(header)
    return header


def csv_header(data: bytes, encoding: str) -> list[str]:
    """The header line's column names (``FileRejected`` as ``csv_records`` would be)."""
    reader = _reader(data, encoding)
    try:
        return _header(reader)
    except csv.Error as error:
        raise FileRejected(f"line 1: the CSV is malformed ({_csv_reason(error)})") from None
    except UnicodeDecodeError:
        raise FileRejected(f"the file is not valid {encoding}; save it as UTF-8") from None


def csv_records(data: bytes, encoding: str) -> Iterator[Record]:
    """The records of a CSV file, the first line its header. Cells are keyed by the header
    as written; a header naming one column twice is ``FileRejected``."""
    reader = _reader(data, encoding)
    try:
        header = _header(reader)
        number = 0
        line = reader.line_num + 1
        for cells in reader:
            if not any(cells) or not "".join(cells).strip():
                line = reader.line_num + 1
                continue  # blank lines are not records
            number += 1
            if number > MAX_ROWS:
                raise FileRejected(f"the file has more than {MAX_ROWS:,} records")
            for cell in cells:
                if len(cell) > MAX_FIELD_CHARS:
                    raise FileRejected(
                        f"line {line}: a field is longer than {MAX_FIELD_CHARS:,} characters"
                        " (a quote that is never closed?)"
                    )
            problem = None
            if len(cells) > len(header) and any(c.strip() for c in cells[len(header) :]):
                problem = f"it has {len(cells)} cells but the header has {len(header)} columns"
            yield Record(number, line, dict(zip(header, cells, strict=False)), problem)
            line = reader.line_num + 1
    except csv.Error as error:
        raise FileRejected(
            f"line {reader.line_num}: the CSV is malformed ({_csv_reason(error)})"
        ) from None
    except UnicodeDecodeError:
        raise FileRejected(f"the file is not valid {encoding}; save it as UTF-8") from None


def _csv_reason(error: csv.Error) -> str:
    text = str(error)
    if "field larger than field limit" in text or "unexpected end of data" in text:
        return "a quoted field never ends"
    return text if len(text) < 80 else "unreadable quoting"


def check_header(header: list[str]) -> None:
    """``FileRejected`` for an empty header or one naming a column twice."""
    if not any(header):
        raise FileRejected("the header line names no columns")
    seen: dict[str, int] = {}
    for position, name in enumerate(header, start=1):
        key = name.casefold()
        if key and key in seen:
            raise FileRejected(
                f"the header names column {name[:60]!r} twice (columns {seen[key]} and"
                f" {position}); rename one"
            )
        seen[key] = position


def jsonl_records(data: bytes, encoding: str) -> Iterator[Record]:
    """The records of a JSON-lines file: one object per line; a line that is not one is a
    record with a ``problem`` (the others still import)."""
    stream = _text(data, encoding)
    number = 0
    for line_number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        number += 1
        if number > MAX_ROWS:
            raise FileRejected(f"the file has more than {MAX_ROWS:,} records")
        if len(line) > MAX_FIELD_CHARS * 4:
            yield Record(number, line_number, {}, "the line is too long")
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            yield Record(number, line_number, {}, "the line is not valid JSON")
            continue
        if not isinstance(value, dict):
            yield Record(number, line_number, {}, "the line is not a JSON object")
            continue
        cells = {str(k): _cell(v) for k, v in value.items()}
        yield Record(number, line_number, cells)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value)  # a nested value is kept as its JSON text, validated as text


def records(data: bytes, fmt: str, encoding: str) -> Iterator[Record]:
    return csv_records(data, encoding) if fmt == "csv" else jsonl_records(data, encoding)
