"""Embedding vectors as plain Python floats, and the two forms pgvector reads them in.

Deployed code does not use numpy: a function that embeds a handful of texts per request gains
nothing from it, and it was 68 MB of every bundle (issue 12). A vector is a list of floats
already rounded to float32, the precision pgvector stores. It goes to PostgreSQL as pgvector's
text literal (``sql_text``, bound as ``%s::vector``) or as pgvector's binary form
(``copy_binary``: for binary COPY, and bound as a query's ``VectorParam``); a vector read back
stays the server's text and is passed on as is.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Iterable, Sequence
from functools import lru_cache

from colony.errors import DimensionMismatch, ValidationFailed

Vector = list[float]


def float32(values: Iterable[float]) -> Vector:
    """``values`` rounded to float32, as Python floats."""
    return array("f", values).tolist()


def unit_rows(rows: Sequence[Sequence[float]], dim: int) -> list[Vector]:
    """Each row scaled to length 1 (an all-zero row stays zero), checked to be ``dim`` long."""
    out = []
    for i, row in enumerate(rows):
        if len(row) != dim:
            raise DimensionMismatch(f"embedding #{i} has {len(row)} dimensions, expected {dim}")
        norm = math.sqrt(math.fsum(x * x for x in row)) or 1.0
        out.append(float32(x / norm for x in row))
    return out


def checked(vector: Sequence[float], dim: int, what: str) -> Vector:
    """``vector`` as float32 floats, refused unless it is ``dim`` finite numbers."""
    try:
        values = float32(vector)
    except TypeError as error:  # a string, a number, or rows instead of one vector
        raise DimensionMismatch(f"{what} must be one vector of {dim} floats") from error
    if len(values) != dim:
        raise DimensionMismatch(f"{what} has {len(values)} floats; expected {dim}")
    # float32 turns a float64 overflow into inf. One C-level sum finds any NaN or inf: float32
    # magnitudes (< 3.5e38) cannot add up to a float64 overflow, and inf + -inf is NaN.
    if not math.isfinite(sum(values)):
        raise ValidationFailed(f"{what} contains NaN or infinite values")
    return values


@lru_cache(maxsize=8)
def _literal_format(dim: int) -> str:
    return "[" + ",".join(["%.9g"] * dim) + "]"


def sql_text(vector: Sequence[float]) -> str:
    """pgvector's text literal; 9 significant digits round-trip a float32 exactly.

    One ``%`` format over the whole vector: half the time of formatting each float on its
    own (~0.5 of ~1 ms for 1536-d, on every retrieval's query vector; bench/kc_tenants.py).
    """
    return _literal_format(len(vector)) % tuple(vector)


def copy_binary(vector: Sequence[float]) -> bytes:
    """pgvector's binary form: int16 dim, int16 unused, then big-endian float4s."""
    return struct.pack(f">hh{len(vector)}f", len(vector), 0, *vector)


class VectorParam:
    """A vector bound as ``%s::vector`` in binary format (``copy_binary``'s bytes, read by
    pgvector's ``vector_recv``) by ``colony.store.wire``'s cursor, which sends any value with a
    ``pg_binary`` attribute that way: ~0.03 ms to pack a 1536-d vector where its text literal
    takes ~0.45 ms to format (and the server longer to parse). Any other cursor sends
    ``str(value)``, the text literal, which means the same vector."""

    __slots__ = ("_vector", "pg_binary")

    def __init__(self, vector: Sequence[float]) -> None:
        self._vector = vector
        self.pg_binary = copy_binary(vector)

    def __str__(self) -> str:
        return sql_text(self._vector)
