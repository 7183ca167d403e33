"""The judge: a rubric criterion graded by a model profile of its own, and how far to trust it.

What no rule can check (does this follow-up recap the call and propose the agreed step? is
this piece on its topic?) is a ``rubric`` property: a criterion and the words a good answer
would carry. ``ModelJudge`` asks a model (its own provider and model, not the agents') for a
``Verdict`` through the same structured runner the agents use; the answer under judgement
goes in a data block, as untrusted text always does. ``OfflineJudgeModel`` is a ``ChatModel``
that stands in for one offline: it checks only that every keyword of the criterion is in the
answer (case-insensitive), which is why its agreement is measured, not assumed.

``agreement`` grades the checked-in human-labelled answers (``labels/judge.jsonl``: good and
bad answers to the same criteria, some written to fool a keyword check) and reports how often
the judge agrees with the label and Cohen's kappa. A run counts rubric properties only when
the judge agrees at least ``MIN_AGREEMENT`` of the time; below it, they are shown but not
counted, and the report says the judge cannot judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from colony.adapters.offline.prompt import blocks_in
from colony.adapters.offline.usage import estimate_tokens
from colony.context import untrusted
from colony.contracts.common import Strict
from colony.errors import ColonyError, error_summary
from colony.llm.runner import StructuredRunner
from colony.ports import ChatModel, Message, ModelRequest, ModelResponse, TextSink, Usage

LABELS = Path(__file__).parent / "labels" / "judge.jsonl"
MIN_AGREEMENT = 0.8
OFFLINE = "offline-keyword-judge"
INSTRUCTIONS = (
    "You grade one answer of a sales-automation agent against one criterion. Read the"
    " criterion, the context the agent had and the answer; decide whether the answer meets"
    " the criterion. Judge only what the criterion asks; a short answer that meets it passes."
    " Reply with the verdict object: passed, and a reason of one sentence."
)


class Verdict(Strict):
    """What a judge says of one answer and one criterion."""

    passed: bool = Field(description="Whether the answer meets the criterion.")
    reason: str = Field(min_length=1, max_length=300, description="Why, in one sentence.")


@dataclass(frozen=True)
class Judgement:
    passed: bool
    reason: str


class ModelJudge:
    """A rubric graded by ``chat`` as ``model`` (the judge's profile)."""

    def __init__(self, chat: ChatModel, model: str) -> None:
        self.runner = StructuredRunner(chat)
        self.model = model

    @property
    def name(self) -> str:
        return self.model

    def grade(
        self, criterion: str, keywords: Sequence[str], context: str, answer: str
    ) -> Judgement:
        boundary = untrusted.new_boundary()
        data = "\n".join(
            (
                untrusted.block(boundary, criterion, source="criterion"),
                untrusted.block(boundary, ", ".join(keywords), source="keywords"),
                untrusted.block(boundary, context, source="context"),
                untrusted.block(boundary, answer, source="answer"),
            )
        )
        request = ModelRequest(
            model=self.model,
            messages=(
                Message("system", f"{INSTRUCTIONS}\n{untrusted.policy(boundary)}"),
                Message("user", data),
            ),
            output_name="eval_verdict",
            output_schema=Verdict.model_json_schema(),
            max_output_tokens=400,
        )
        try:
            result = self.runner.run(request, Verdict)
        except ColonyError as error:
            return Judgement(False, f"the judge gave no verdict: {error_summary(error)}")
        assert result.output is not None
        return Judgement(result.output.passed, result.output.reason)


class OfflineJudgeModel:
    """The offline stand-in for a judge's model (module docstring): it reads the prompt's
    ``keywords`` and ``answer`` blocks and passes the answer when it holds every keyword."""

    model = OFFLINE

    def request(self, request: ModelRequest) -> ModelResponse:
        system = next(m.content for m in request.messages if m.role == "system")
        boundary = system.split("<<DATA ", 1)[1].split(" ", 1)[0]
        blocks = {
            b.source: b.text for m in request.messages for b in blocks_in(m.content, boundary)
        }
        words = [w.strip() for w in blocks.get("keywords", "").split(",") if w.strip()]
        answer = blocks.get("answer", "").casefold()
        lacking = [w for w in words if w.casefold() not in answer]
        verdict = Verdict(
            passed=bool(answer.strip()) and not lacking,
            reason=f"lacks {', '.join(lacking)}" if lacking else "holds every keyword",
        )
        text = json.dumps({"answer": verdict.model_dump()})
        return ModelResponse(text, Usage(estimate_tokens(system), estimate_tokens(text)), OFFLINE)

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        response = self.request(request)
        on_text(response.text)
        return response


def offline_judge() -> ModelJudge:
    return ModelJudge(OfflineJudgeModel(), OFFLINE)


def labelled(path: Path = LABELS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of (judge, label) pairs: agreement beyond what chance gives."""
    n = len(pairs)
    if not n:
        return None
    seen = sum(a == b for a, b in pairs) / n
    yes_j, yes_l = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    chance = yes_j * yes_l + (1 - yes_j) * (1 - yes_l)
    return None if chance == 1 else round((seen - chance) / (1 - chance), 3)


def agreement(judge: ModelJudge, labels: Sequence[Mapping[str, Any]] | None = None) -> dict:
    """How the judge grades the human-labelled answers (module docstring)."""
    items = list(labels if labels is not None else labelled())
    pairs, wrong = [], []
    for item in items:
        said = judge.grade(
            item["criterion"], item.get("keywords") or [], item["context"], item["answer"]
        )
        pairs.append((said.passed, bool(item["label"])))
        if said.passed != bool(item["label"]):
            wrong.append({"id": item["id"], "label": item["label"], "judge": said.reason})
    agreed = sum(a == b for a, b in pairs) / len(pairs) if pairs else 0.0
    return {
        "judge": judge.name,
        "labelled": len(pairs),
        "agreement": round(agreed, 3),
        "kappa": kappa(pairs),
        "min_agreement": MIN_AGREEMENT,
        "trusted": agreed >= MIN_AGREEMENT,
        "disagreements": wrong,
    }
