"""An eval case and the sets of them: what goes in, and what a good answer must have.

A set is a JSON Lines file per agent under ``sets/``: ``sets/generated/<agent>.jsonl`` is
written by the generator (``python -m colony.evals.generate``: deterministic, from the inputs'
own rules), ``sets/hand/<agent>.jsonl`` holds the hard cases written by hand. One line is one
case::

    {"id": "AGT-004/anti-icp/AICP-01-at-49", "agent": "AGT-004", "title": "...",
     "tags": ["anti_icp_edge"], "outcome": "answer",
     "inputs": {"contact": {...}, "signals": [...], "today": "2026-12-01"},
     "expect": [{"check": "disqualifiers", "equal": ["AICP-01"]}, ...]}

``outcome`` is what the call must end in: ``answer`` (a valid contract), ``missing_data``
(CONST-004: never a guess), ``rejected`` (the flow refuses the input before any model call,
as an empty transcript is) or ``tool`` (AGT-001 calls a tool). ``expect`` lists the
properties (``colony.evals.checks``, and ``rubric`` for the judge), each derived from the
inputs when the case was written, never from running a model.

Inputs every agent may carry: ``icp`` (``"demo"``, the demo org's ICP definition; an object;
or null for none), ``org_name``, ``kc`` (the Knowledge Core documents retrieval returned, best
first: ``{domain, title, content, tags?}``) and ``competitors``. The rest is the agent's own
(see ``colony.evals.drive``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from colony.errors import ValidationFailed
from colony.local.demo import read_json
from colony.registry.agents import AGENTS as REGISTRY

SETS = Path(__file__).parent / "sets"
KINDS = ("generated", "hand")
AGENTS = tuple(a for a in REGISTRY if a != "AGT-002")  # AGT-002 asks no model anything
Outcome = Literal["answer", "missing_data", "rejected", "tool"]
OUTCOMES: tuple[str, ...] = ("answer", "missing_data", "rejected", "tool")
TODAY = "2026-12-01"  # every case's "today": its dates are written relative to it


@dataclass(frozen=True)
class Case:
    id: str
    agent: str
    title: str
    outcome: Outcome
    inputs: Mapping[str, Any]
    expect: tuple[Mapping[str, Any], ...]
    tags: tuple[str, ...] = ()
    source: str = "generated"  # or "hand"

    @property
    def icp(self) -> dict[str, Any] | None:
        """The case's ICP definition (``"demo"``: the demo org's), or None."""
        icp = self.inputs.get("icp", "demo")
        if icp == "demo":
            return dict(read_json("icp.json"))
        return dict(icp) if isinstance(icp, Mapping) else None

    def record(self) -> dict[str, Any]:
        """The case as its line in a set file."""
        return {
            "id": self.id,
            "agent": self.agent,
            "title": self.title,
            "tags": list(self.tags),
            "outcome": self.outcome,
            "inputs": dict(self.inputs),
            "expect": [dict(e) for e in self.expect],
        }


@dataclass(frozen=True)
class CaseSet:
    cases: tuple[Case, ...]
    digest: str = field(default="")  # of every set file read, in order

    def of(self, agent: str) -> list[Case]:
        return [c for c in self.cases if c.agent == agent]

    def select(
        self,
        agents: Sequence[str] = (),
        tags: Sequence[str] = (),
        ids: Sequence[str] = (),
        per_agent: int | None = None,
    ) -> CaseSet:
        """The cases of ``agents`` (all when empty) carrying any of ``tags`` (all when
        empty), or exactly ``ids``; with ``per_agent``, each agent's first that many (the
        hand-written cases first: they are the hard ones)."""
        chosen = [
            c
            for c in self.cases
            if (not agents or c.agent in agents)
            and (not tags or set(tags) & set(c.tags))
            and (not ids or c.id in ids)
        ]
        if per_agent is not None:
            ranked = sorted(chosen, key=lambda c: (c.agent, c.source != "hand"))
            counts: dict[str, int] = {}
            kept = []
            for case in ranked:
                counts[case.agent] = counts.get(case.agent, 0) + 1
                if counts[case.agent] <= per_agent:
                    kept.append(case)
            chosen = kept
        return CaseSet(tuple(chosen), self.digest)


def parse(line: Mapping[str, Any], source: str, where: str) -> Case:
    """One case from its set line; ``ValidationFailed`` naming ``where`` when malformed."""
    try:
        outcome = line["outcome"]
        if outcome not in OUTCOMES:
            raise ValidationFailed(f"{where}: outcome {outcome!r} is not one of {OUTCOMES}")
        if line["agent"] not in AGENTS:
            raise ValidationFailed(f"{where}: agent {line['agent']!r} has no eval set")
        expect = tuple(dict(e) for e in line.get("expect") or ())
        if any(not isinstance(e.get("check"), str) for e in expect):
            raise ValidationFailed(f"{where}: every expected property names its check")
        return Case(
            id=str(line["id"]),
            agent=str(line["agent"]),
            title=str(line["title"]),
            outcome=outcome,
            inputs=dict(line["inputs"]),
            expect=expect,
            tags=tuple(line.get("tags") or ()),
            source=source,
        )
    except KeyError as missing:
        raise ValidationFailed(f"{where}: the case has no {missing.args[0]!r}") from None


def read_lines(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text.strip():
            yield number, json.loads(text)


@cache
def load(root: Path = SETS) -> CaseSet:
    """Every case of every set under ``root``, generated then hand-written per agent;
    ``ValidationFailed`` for a malformed line or an id used twice."""
    cases: list[Case] = []
    digest = hashlib.sha256()
    for agent in AGENTS:
        for kind in KINDS:
            path = root / kind / f"{agent}.jsonl"
            if not path.exists():
                continue
            digest.update(path.read_bytes())
            for number, line in read_lines(path):
                case = parse(line, kind, f"{path.name}:{number}")
                if case.agent != agent:
                    raise ValidationFailed(f"{path.name}:{number}: a case of {case.agent}")
                cases.append(case)
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValidationFailed(f"case id {case.id!r} is used twice")
        seen.add(case.id)
    return CaseSet(tuple(cases), digest.hexdigest()[:16])


def write(path: Path, cases: Iterable[Case]) -> None:
    """A set file: one case per line, keys sorted, so a regenerated set diffs cleanly."""
    lines = [json.dumps(c.record(), sort_keys=True, ensure_ascii=False) for c in cases]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
