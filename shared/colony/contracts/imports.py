"""What the admin API accepts to open an import: what the file holds, its format, its name
and its size in bytes (declared before the upload, so an oversized file is refused before a
byte of it is sent; the stored object's size is checked again before it is read)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from colony.contracts.common import Strict

ImportKind = Literal["prospects", "deals"]
ImportFormat = Literal["csv", "jsonl"]
FileName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class ImportCreate(Strict):
    kind: ImportKind
    format: ImportFormat = "csv"
    filename: FileName
    size_bytes: int = Field(gt=0)
