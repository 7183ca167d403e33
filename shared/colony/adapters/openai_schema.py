"""The JSON schema OpenAI's strict structured output accepts, made from a pydantic contract's.

Strict mode enforces a subset of JSON Schema (OpenAI's "Supported schemas": ``type``,
``properties``, ``required``, ``additionalProperties: false`` on every object, ``items``,
``anyOf``, ``enum``, ``$ref``/``$defs``, ``description``; for strings ``pattern`` and a
``format`` among ``OPENAI_FORMATS``; for numbers ``minimum``, ``maximum``, their exclusive
forms and ``multipleOf``; for arrays ``minItems`` and ``maxItems``). A string's ``minLength``
and ``maxLength`` are not on that list, so they are not sent to OpenAI: each is said in words in
the node's description instead (``colony.adapters.schema_words``), which the model reads. An
OpenAI-compatible server that turns the schema into a grammar (llama.cpp's ``llama-server``)
enforces lengths as well, and may not show the model the descriptions at all: for it
(``lengths=True``) they are kept as keywords too.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from colony.adapters.schema_words import describe

# What OpenAI's strict mode accepts in a schema node. Everything else (default, minLength,
# maxLength, title, examples, uniqueItems, ...) is dropped, its limit said in the description;
# the runner validates the answer against the full pydantic contract anyway.
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "$ref",
        "$defs",
        "description",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
OPENAI_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
LENGTHS = frozenset({"minLength", "maxLength"})
_SCHEMA_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_NULL = {"type": "null"}


def strict_json_schema(schema: Mapping[str, Any], *, lengths: bool = False) -> dict[str, Any]:
    """A copy of a pydantic JSON schema that OpenAI's ``strict: true`` accepts.

    * every object gets ``additionalProperties: false`` and lists every property in
      ``required``;
    * a property that was optional with a ``None`` default (or that already admits null)
      becomes required-and-nullable; one that was optional with a non-null default (a
      ``default_factory=list``, a ``Literal`` tag) becomes required without null, since
      null is not a valid value for it;
    * ``const`` becomes a one-value ``enum``, ``oneOf`` becomes ``anyOf``, a one-item
      ``allOf`` is inlined, ``$ref`` loses its siblings, ``$defs`` are kept (and converted);
    * keywords outside ``STRICT_KEYWORDS`` (and a ``format`` outside ``OPENAI_FORMATS``) are
      dropped, each limit among them said in the node's description; with ``lengths``, a
      string's ``minLength`` and ``maxLength`` are kept as keywords as well.

    The input is not modified.
    """
    kept = STRICT_KEYWORDS | LENGTHS if lengths else STRICT_KEYWORDS
    return _strict_node(copy.deepcopy(dict(schema)), kept)


def _strict_node(node: Any, kept: frozenset[str]) -> Any:
    if not isinstance(node, dict):
        return node
    if "$ref" in node:  # OpenAI allows no siblings next to a $ref
        return {"$ref": node["$ref"]}
    if "allOf" in node and len(node["allOf"]) == 1:
        merged = {k: v for k, v in node.items() if k != "allOf"}
        return _strict_node({**node["allOf"][0], **merged}, kept)
    if "oneOf" in node and "anyOf" not in node:
        node["anyOf"] = node.pop("oneOf")
    if "const" in node and "enum" not in node:
        node["enum"] = [node["const"]]
    # this node's own keywords: a format OpenAI does not know is said in words only
    here = kept if node.get("format") in OPENAI_FORMATS else kept - {"format"}

    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in here:
            continue
        if key == "$defs":
            out[key] = {name: _strict_node(sub, kept) for name, sub in value.items()}
        elif key == "items":
            out[key] = _strict_node(value, kept)
        elif key == "anyOf":
            out[key] = [_strict_node(sub, kept) for sub in value]
        elif key in ("properties", "required", "additionalProperties", "description"):
            continue  # rebuilt below
        else:
            out[key] = value
    description = describe(node, here)
    if description:
        out["description"] = description

    is_object = node.get("type") == "object" or "properties" in node
    if is_object:
        properties: dict[str, Any] = node.get("properties") or {}
        required = set(node.get("required") or ())
        converted: dict[str, Any] = {}
        for name, sub in properties.items():
            strict_sub = _strict_node(sub, kept)
            if name not in required and _defaults_to_null(sub):
                strict_sub = _nullable(strict_sub)
            converted[name] = strict_sub
        out["type"] = "object"
        out["properties"] = converted
        out["required"] = list(converted)
        out["additionalProperties"] = False
    return out


def _defaults_to_null(schema: Any) -> bool:
    """Optional with a ``None`` default, or no default at all and null already allowed."""
    if not isinstance(schema, dict):
        return False
    if "default" in schema:
        return schema["default"] is None
    return _admits_null(schema)


def _admits_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(s, dict) and _admits_null(s) for s in schema.get("anyOf") or ())


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if _admits_null(schema):
        return schema
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], dict(_NULL)]}
    kind = schema.get("type")
    if "$ref" in schema or kind is None:
        return {"anyOf": [schema, dict(_NULL)]}
    out = dict(schema)
    out["type"] = [*kind, "null"] if isinstance(kind, list) else [kind, "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def schema_name(output_name: str) -> str:
    """``json_schema.name`` must match ``^[a-zA-Z0-9_-]{1,64}$``."""
    return _SCHEMA_NAME_BAD_CHARS.sub("_", output_name)[:64] or "output"
