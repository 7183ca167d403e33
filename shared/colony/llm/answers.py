"""What a structured call's answer may be: its contract, or CONST-004's ``missing_data``.

The system prompt asks every agent for a ``missing_data`` object when a required field is
absent. A provider that enforces the schema it is sent (OpenAI's strict mode, Gemini, a
grammar-constrained local server) can produce only what that schema allows, and the
contract's own schema has no room for it: CONST-004's path was open to the offline model
alone (issue 37 item 6). OpenAI's strict mode also refuses an ``anyOf`` at a schema's root,
so the schema sent (``answer_schema``) is one object with one property, ``answer``, that is
either the contract or a ``MissingData``::

    {"answer": {"total_score": 72, ...}}
    {"answer": {"kind": "missing_data", "missing_fields": ["icp_rubric"], "reason": "..."}}

``unwrap`` takes the ``answer`` back out, so the runner reads either exactly as it reads the
offline model's bare answer (which it still accepts, as it does any provider's that ignores
the schema). The chat's reply (``orchestrator_reply``) is sent as it is: it answers a person
in words, which can say what is missing, and its ``answer`` streams live as a top-level field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.contracts.outputs import MissingData

ANSWER = "answer"
# Contracts sent as they are (see the module docstring).
UNWRAPPED = frozenset({"orchestrator_reply", "missing_data"})
_WHY = (
    "Your answer, following its schema; or, when the data lacks a field the answer needs, "
    "a missing_data object naming it (never a guessed value)."
)


def wrapped(output_name: str) -> bool:
    """Whether ``output_name``'s answer is sent inside the ``answer`` wrapper."""
    return output_name not in UNWRAPPED


def answer_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The wrapper around a contract's JSON ``schema``: ``{"answer": contract | missing}``.

    Both sides are inlined under ``answer``'s ``anyOf``; their ``$defs`` (what their ``$ref``s
    point at) move to the root, where those references resolve."""
    contract = dict(schema)
    missing = MissingData.model_json_schema()
    defs = {**missing.pop("$defs", {}), **contract.pop("$defs", {})}
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {ANSWER: {"anyOf": [contract, missing], "description": _WHY}},
        "required": [ANSWER],
        "additionalProperties": False,
    }
    if defs:
        wrapper["$defs"] = defs
    return wrapper


def unwrap(data: Any) -> Any:
    """The answer inside a wrapper; anything else (a bare answer) as it is."""
    if isinstance(data, dict) and set(data) == {ANSWER} and isinstance(data[ANSWER], dict):
        return data[ANSWER]
    return data
