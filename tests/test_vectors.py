"""The vector forms pgvector reads (pure): validation and the text literal."""

from __future__ import annotations

import math
import struct

import pytest

from colony.errors import DimensionMismatch, ValidationFailed
from colony.vectors import checked, sql_text


@pytest.mark.parametrize(
    "bad",
    [
        [math.nan, 0.0, 0.0],
        [math.inf, 0.0, 0.0],
        [0.0, -math.inf, 0.0],
        [math.inf, -math.inf, 0.0],  # their sum is NaN, not a number that looks fine
        [1e39, 0.0, 0.0],  # finite as float64, inf as float32
    ],
)
def test_a_vector_with_nan_or_infinity_is_refused(bad: list[float]) -> None:
    with pytest.raises(ValidationFailed, match="NaN or infinite"):
        checked(bad, 3, "the query vector")


def test_the_largest_float32_values_are_accepted_and_the_wrong_size_is_not() -> None:
    big = struct.unpack("f", struct.pack("f", 3.4e38))[0]
    assert checked([big] * 1536, 1536, "v") == [big] * 1536
    with pytest.raises(DimensionMismatch, match="has 2 floats; expected 3"):
        checked([1.0, 2.0], 3, "v")


def test_the_text_literal_round_trips_every_float32_exactly() -> None:
    values = checked([1 / 3, -2.5e-7, 1e-45, 123456.789, 0.0], 5, "v")
    text = sql_text(values)
    assert text.startswith("[") and text.endswith("]")
    assert checked([float(x) for x in text[1:-1].split(",")], 5, "v") == values
    assert sql_text(values[:2]) == "[0.333333343,-2.49999999e-07]"
