"""The error report of an import: one CSV line per rejected record (its number, the line it
starts on, the field and the reason, and the offending value), safe to open in a spreadsheet.

A cell that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return: OWASP's "CSV injection" list) is written with a leading ``'``,
so ``=HYPERLINK(...)`` from an uploaded file is shown as text, never executed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

HEADER = ("row", "line", "field", "reason", "value")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> str:
    """``value`` as a CSV cell no spreadsheet evaluates."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def error_report(errors: Iterable[Mapping[str, Any]]) -> str:
    """The report as CSV text (with a header line) from ``import_errors`` rows."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(HEADER)
    for row in errors:
        writer.writerow([safe_cell(row.get(column)) for column in HEADER])
    return out.getvalue()
