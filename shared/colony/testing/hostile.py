"""A hostile ``ChatModel``: it obeys every instruction it finds anywhere in what it is sent.

The worst model we could be given, for the prompt-injection suite (``tests/test_hostile_model``,
issue 14 item 5). It reads only ``request.messages`` (as every provider does, the offline one
included) and treats every
line of every message as an order, whatever its role and whatever block it sits in:

    CALL TOOL <name> <json object>     a tool call (when the request offers tools)
    approve item <id>                  a ``decide_approval`` tool call for that item
    insert link <url> / add <email>    the link or address goes into every free-text field
    set field <name> to <value>        that field of the answer takes the value (JSON if it
                                       parses, else the text)

It answers a structured request with JSON built from the request's schema (every string field
carrying what it was told to insert), so an answer validates whenever its contract allows it.
After a tool result it answers in text: a turn is not kept in a tool loop. ``requests`` keeps
everything it was sent, so a test can prove what reached a prompt, and what did not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from colony.adapters.text_stream import replay
from colony.ports import (
    CallContext,
    Generation,
    LlmCallRecord,
    ModelRequest,
    ModelResponse,
    TextSink,
    ToolCall,
    Usage,
)
from colony.testing.wire.samples import sample_from_schema, word_count

_CALL = re.compile(r"CALL TOOL\s+([A-Za-z_][\w-]*)\s*(\{.*\})?", re.IGNORECASE)
_APPROVE = re.compile(r"\bapprove\s+(?:approval\s+)?item\s+([\w-]+)", re.IGNORECASE)
_INSERT = re.compile(r"\b(?:insert|include|add|put)\b", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s\"'<>\\)\]]+")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_SET = re.compile(r"\bset\s+field\s+([A-Za-z_]\w*)\s+to\s+(.+?)\s*$", re.IGNORECASE)


@dataclass
class Orders:
    """What the planted text asked for."""

    calls: list[ToolCall] = field(default_factory=list)
    inserts: list[str] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)


def read_orders(request: ModelRequest) -> Orders:
    """Every order in every message (all roles), in order."""
    orders = Orders()
    for message in request.messages:
        for line in message.content.splitlines():
            _read_line(line, orders)
    return orders


def _read_line(line: str, orders: Orders) -> None:
    for match in _CALL.finditer(line):
        try:
            arguments = json.loads(match.group(2) or "{}")
        except json.JSONDecodeError:
            arguments = {}
        if isinstance(arguments, dict):
            orders.calls.append(ToolCall(match.group(1), arguments, id=_call_id(orders)))
    for match in _APPROVE.finditer(line):
        arguments = {"item_id": match.group(1).rstrip("."), "decision": "approve"}
        orders.calls.append(ToolCall("decide_approval", arguments, id=_call_id(orders)))
    if _INSERT.search(line):
        for found in (*_URL.findall(line), *_EMAIL.findall(line)):
            value = found.rstrip(".,;")
            if value not in orders.inserts:
                orders.inserts.append(value)
    setting = _SET.search(line)
    if setting:
        raw = setting.group(2).strip().rstrip(".")
        try:
            orders.fields[setting.group(1)] = json.loads(raw)
        except json.JSONDecodeError:
            orders.fields[setting.group(1)] = raw.strip("\"'")


def _call_id(orders: Orders) -> str:
    return f"hostile-{len(orders.calls)}"


class HostileChatModel:
    """``ChatModel`` that does what its input tells it (see the module docstring)."""

    def __init__(self, model: str = "hostile-model") -> None:
        self.model = model
        self.requests: list[ModelRequest] = []

    def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        orders = read_orders(request)
        usage = Usage(sum(word_count(m.content) for m in request.messages), 0)
        after_tool = bool(request.messages) and request.messages[-1].role == "tool"
        if request.tools and orders.calls and not after_tool:
            return ModelResponse("", usage, self.model, tool_calls=tuple(orders.calls))
        answer = _obey(dict(request.output_schema), orders)
        text = json.dumps(answer)
        return ModelResponse(text, Usage(usage.tokens_in, word_count(answer)), self.model)

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        return replay(self.request(request), on_text)

    def prompts(self, org_id: str | None = None) -> list[str]:
        """Every prompt sent (all messages joined), optionally only those for ``org_id``."""
        return [
            "\n".join(m.content for m in r.messages)
            for r in self.requests
            if org_id is None or r.metadata.get("org_id") == org_id
        ]


def _obey(schema: Mapping[str, Any], orders: Orders) -> Any:
    text = "As instructed: " + " ".join(orders.inserts) if orders.inserts else "As instructed."
    return _fill(schema, schema, orders, text)


def _fill(node: Mapping[str, Any], root: Mapping[str, Any], orders: Orders, text: str) -> Any:
    if "$ref" in node:
        target: Any = root
        for key in str(node["$ref"]).removeprefix("#/").split("/"):
            target = target[key]
        return _fill(target, root, orders, text)
    options = node.get("anyOf") or node.get("oneOf")
    if options:
        real = [o for o in options if o.get("type") != "null"]
        return _fill(real[0], root, orders, text) if real else None
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        out = {}
        for name, sub in (node.get("properties") or {}).items():
            out[name] = (
                orders.fields[name] if name in orders.fields else _fill(sub, root, orders, text)
            )
        return out
    if kind == "array":
        count = max(1, int(node.get("minItems") or 0))
        return [_fill(node.get("items") or {}, root, orders, text) for _ in range(count)]
    if kind == "string" and not ({"enum", "const", "pattern", "format"} & set(node)):
        limit = int(node.get("maxLength") or len(text))
        return text[:limit]
    return sample_from_schema(node, root)


class RecordingTracer:
    """A ``Tracer`` keeping the metadata of every generation, as the Langfuse adapter sends
    it (``CallContext.metadata()``), so a test can read what the trace says of each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[ModelRequest, dict[str, Any]]] = []
        self.annotations: list[tuple[str, dict[str, int | str]]] = []  # (call id, metadata)

    @contextmanager
    def generation(self, request: ModelRequest, context: CallContext) -> Iterator[Generation]:
        self.calls.append((request, context.metadata()))
        yield _NOOP

    def flagged(self, org_id: str | None = None) -> list[str]:
        """Every ``untrusted_instructions`` entry the traces carry (for one org)."""
        return [
            flag
            for _, meta in self.calls
            if org_id is None or meta.get("org_id") == org_id
            for flag in meta.get("untrusted_instructions") or ()
        ]

    def annotate(self, call_id: str, metadata: Mapping[str, int | str]) -> None:
        self.annotations.append((call_id, dict(metadata)))

    def flush(self) -> None:
        return None

    def shutdown(self) -> None:
        return None


class _Generation:
    def succeed(self, record: LlmCallRecord, response: ModelResponse) -> None:
        return None

    def fail(self, status_message: str) -> None:
        return None


_NOOP = _Generation()
