"""The rendered prompt read back as a model reads it: the offline model's only input.

``parse`` takes the messages ``colony.context.assembler`` renders and returns a ``Prompt``:

- the **boundary**, from the data policy the system message states (``Text between <<DATA
  {boundary} …>>``): only blocks opened with it are data blocks, so text that merely looks
  like a block (escaped by the assembler) is never read as one;
- the **data blocks** in every user, assistant and tool turn, each with its attributes
  (``source=entity name=contact``, ``source=kc domain=KC-08 title=…``, ``source=task``,
  ``source=<task field>``) and its text, escapes left as the model sees them;
- the **ICP description** and the **anti-ICP rules** from the system message's DOMAIN
  GROUNDING, the rules turned back from their condition text (``- AICP-01:
  enrichment.employee_count < 50``) into ``{id, field, op, value}``;
- the **task text**: the last user turn that is not the runner's repair request (``Your
  previous answer is not a valid …``), where trusted task fields are plain text.

Reading is strict where a model would be stuck: ``entity("contact")`` of a prompt without
that block raises ``ValidationFailed`` naming it (``the prompt has no contact entity``), so a
flow that stops sending a field the answer needs fails its test instead of getting an answer
built from nothing. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from colony.errors import ValidationFailed
from colony.ports import Message


class PromptLacks(ValidationFailed):
    """A value the answer needs is absent from the prompt's data (an entity's field empty or
    not there): the offline model answers ``missing_data`` naming it (CONST-004), as a
    grounded model would. A prompt missing a whole block is malformed instead, and stays a
    ``ValidationFailed``."""

    def __init__(self, field: str) -> None:
        super().__init__(f"{field} is missing")
        self.field = field

    def answer(self) -> dict[str, Any]:
        reason = f"the prompt's data has no value for {self.field}"
        return {"kind": "missing_data", "missing_fields": [self.field], "reason": reason}


_POLICY = re.compile(r"Text between <<DATA ([0-9A-Za-z]+) ")
_ATTRIBUTE = re.compile(r'\s([a-z_]+)=("[^"]*"|\S+)')
_ICP = re.compile(r"matching the following ICP: (.*)$", re.MULTILINE)
_RULES = re.compile(
    r"disqualify a prospect regardless of other signals:\n(.*?)(?:\n\n|\n\[|\Z)", re.DOTALL
)
# ``key=value`` pairs joined by ", "; a value may itself hold commas (a list of names).
_TAG = re.compile(r"([\w-]+)=(.*?)(?=, [\w-]+=|\Z)")
_REPAIR = "Your previous answer is not a valid"  # colony.llm.runner.repair_message
_RULE = re.compile(r"^- ([\w-]+): (\S+) (.+)$")
# The assembler's condition operators, longest first so ``not in`` is not read as ``in``.
_OPS = (
    ("not in", "not_in"),
    ("contains", "contains"),
    ("in", "in"),
    ("≠", "neq"),
    ("≤", "lte"),
    ("≥", "gte"),
    ("=", "eq"),
    ("<", "lt"),
    (">", "gt"),
)


@dataclass(frozen=True)
class Block:
    """One data block: where it came from (its attributes) and its text."""

    attributes: Mapping[str, str]
    text: str

    @property
    def source(self) -> str:
        return self.attributes.get("source", "")

    def get(self, name: str) -> str | None:
        return self.attributes.get(name)

    @property
    def tags(self) -> dict[str, str]:
        """A KC block's ``tags="angle=Signal, tier=T1"`` attribute as a mapping."""
        return {m.group(1): m.group(2).strip() for m in _TAG.finditer(self.get("tags") or "")}


@dataclass(frozen=True)
class Prompt:
    boundary: str
    system: str
    task: str
    blocks: tuple[Block, ...] = ()
    icp_description: str | None = None
    anti_icp_rules: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)

    def entity(self, name: str) -> Any:
        """The parsed JSON of the ``name`` entity block (raises when the prompt lacks it)."""
        found = self.optional_entity(name)
        if found is None:
            raise ValidationFailed(f"the prompt has no {name} entity")
        return found

    def optional_entity(self, name: str) -> Any:
        for b in self.blocks:
            if b.source == "entity" and b.get("name") == name:
                return _json(b.text, f"the {name} entity")
        return None

    def field_text(self, source: str) -> str | None:
        """The text of the task field rendered as a ``source=<field>`` block."""
        return next((b.text for b in self.blocks if b.source == source), None)

    def field_json(self, source: str) -> Any:
        """The parsed JSON of a ``source=<field>`` block, or None without one."""
        text = self.field_text(source)
        return None if text is None else _json(text, f"the {source} block")

    def value(self, name: str) -> Any:
        """A task value by name: its own ``source=<name>`` block (JSON when it parses, else
        its text), else the entry of the ``source=task`` block; None when neither has it."""
        text = self.field_text(name)
        if text is not None:
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                return text
        return self.task_json().get(name)

    def task_json(self) -> Mapping[str, Any]:
        """The ``source=task`` block (the template's ``task_json``), or ``{}``."""
        text = self.field_text("task")
        value = _json(text, "the task block") if text else {}
        if not isinstance(value, Mapping):
            raise ValidationFailed("the task block must be an object")
        return value

    def exemplars(self, domain: str | None = None) -> list[Block]:
        """The Knowledge Core blocks, best first (optionally of one domain)."""
        return [
            b
            for b in self.blocks
            if b.source == "kc" and (domain is None or b.get("domain") == domain)
        ]


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationFailed(f"{what} is not JSON ({exc.msg})") from exc


def _attributes(head: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip('"') for m in _ATTRIBUTE.finditer(head)}


def blocks_in(text: str, boundary: str) -> list[Block]:
    """The data blocks opened with ``boundary`` in one message's text."""
    pattern = re.compile(
        rf"<<DATA {re.escape(boundary)}((?:\s[a-z_]+=(?:\"[^\"]*\"|[^\s>]+))*)>>\n"
        rf"(.*?)\n<<END {re.escape(boundary)}>>",
        re.DOTALL,
    )
    return [Block(_attributes(m.group(1)), m.group(2)) for m in pattern.finditer(text)]


def _rule(line: str) -> dict[str, Any]:
    match = _RULE.match(line.strip())
    if not match:
        raise ValidationFailed(f"cannot read the anti-ICP condition {line.strip()!r}")
    rule_id, field_name, rest = match.groups()
    if rest == "is missing":
        return {"id": rule_id, "field": field_name, "op": "missing"}
    for text, op in _OPS:
        if rest.startswith(text + " "):
            value = _json(rest[len(text) + 1 :], f"the value of anti-ICP rule {rule_id}")
            return {"id": rule_id, "field": field_name, "op": op, "value": value}
    raise ValidationFailed(f"anti-ICP rule {rule_id} has an unknown operator")


def _anti_icp(system: str) -> tuple[dict[str, Any], ...]:
    match = _RULES.search(system)
    if not match:
        return ()
    lines = [line for line in match.group(1).splitlines() if line.startswith("- ")]
    return tuple(_rule(line) for line in lines if line.strip() != "- (none on record)")


def parse(messages: Sequence[Message]) -> Prompt:
    """The prompt ``messages`` carry, read as the assembler rendered it."""
    system = next((m.content for m in messages if m.role == "system"), "")
    policy = _POLICY.search(system)
    if not policy:
        raise ValidationFailed("the system message states no data policy (no boundary)")
    boundary = policy.group(1)
    blocks = [b for m in messages if m.role != "system" for b in blocks_in(m.content, boundary)]
    users = [m.content for m in messages if m.role == "user" and not m.content.startswith(_REPAIR)]
    icp = _ICP.search(system)
    description = icp.group(1).strip() if icp else None
    return Prompt(
        boundary=boundary,
        system=system,
        task=users[-1] if users else "",
        blocks=tuple(blocks),
        icp_description=None if description == "(no ICP definition on record)" else description,
        anti_icp_rules=_anti_icp(system),
    )
