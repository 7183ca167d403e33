"""Deterministic answers the protocol responders build from a request: ``fake_vector``
(embeddings, deliberately not unit length), ``sample_from_schema`` (JSON valid for a schema,
not meaningful) and ``word_count`` (a predictable stand-in for a token count).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from typing import Any


def fake_vector(text: str, dim: int) -> list[float]:
    """``dim`` deterministic components in [-2, 2) derived from SHA-256 of ``text``.

    Not unit length (the expected norm is about ``sqrt(dim * 4 / 3)``).
    """
    values: list[float] = []
    block = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{block}\x00{text}".encode()).digest()
        values += [word / 2**30 - 2.0 for (word,) in struct.iter_unpack("<I", digest)]
        block += 1
    return values[:dim]


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    node: Any = root
    for key in ref.removeprefix("#/").split("/"):
        node = node[key]
    return node


def sample_from_schema(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A small deterministic value valid for ``schema`` (JSON Schema or Gemini's OpenAPI kind).

    Objects get every property (null where null is allowed), arrays ``minItems`` items,
    strings ``"x"`` repeated to ``minLength``, numbers their ``minimum`` (or 0), enums their
    first value. Enough for answers that parse and validate; not meant to be meaningful.
    """
    root = schema if root is None else root
    if "$ref" in schema:
        return sample_from_schema(_resolve_ref(schema["$ref"], root), root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    options = schema.get("anyOf") or schema.get("oneOf") or schema.get("any_of")
    if options:
        for option in options:
            if str(option.get("type", "")).lower() == "null":
                return None
        return sample_from_schema(options[0], root)
    kind = schema.get("type")
    if isinstance(kind, list):
        if "null" in kind or schema.get("nullable"):
            return None
        kind = kind[0] if kind else None
    if schema.get("nullable"):
        return None
    kind = str(kind).lower() if kind is not None else ("object" if "properties" in schema else "")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: sample_from_schema(sub, root) for name, sub in properties.items()}
    if kind == "array":
        items = schema.get("items") or {}
        return [sample_from_schema(items, root) for _ in range(int(schema.get("minItems") or 0))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if schema.get("format") == "date":
        return "2024-01-01"
    if schema.get("format") == "date-time":
        return "2024-01-01T00:00:00Z"
    return "x" * max(1, int(schema.get("minLength") or 1))


def word_count(value: Any) -> int:
    """A deterministic stand-in for a token count: whitespace-separated words."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(word_count(v) for v in value.values())
    if isinstance(value, list):
        return sum(word_count(v) for v in value)
    return 0
