"""A run recorded in Langfuse as dataset runs, through the official SDK, when Langfuse is
configured (its two keys; ``COLONY_LANGFUSE_HOST`` for the host).

Per agent, a dataset ``colony-eval-<agent>`` whose items are the agent's cases (each item's
id derived from its case id, so a case is one item however often it is recorded; input: the
case's inputs; expected output: the outcome and the properties). The run is then a dataset
run (an *experiment* in the v5 SDK: ``DatasetClient.run_experiment``, named by the run's id,
with the template and model as metadata) whose task hands each item the outcome this run
already got (nothing is asked of a model again) and whose evaluator turns the case's graded
properties into scores: ``passed`` and one per property (1 held, 0 not). The SDK exports the
run as one trace per item and the scores in batches; ``record`` flushes both before it returns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from colony.evals.cases import Case
from colony.settings import Settings

PREFIX = "colony-eval-"


def item_id(case_id: str) -> str:
    return hashlib.sha256(f"colony-eval\x1f{case_id}".encode()).hexdigest()[:32]


def configured(settings: Settings) -> bool:
    return bool(settings.langfuse_public_key and settings.langfuse_secret_key)


def _evaluations(output: Any) -> list[Any]:
    from langfuse import Evaluation  # lazy: the SDK loads only when Langfuse is configured

    props = output.get("properties") if isinstance(output, Mapping) else None
    if not isinstance(props, list):
        return []
    out = [Evaluation(name="passed", value=1.0 if output.get("passed") else 0.0)]
    seen: dict[str, int] = {}
    for p in props:
        seen[p["check"]] = seen.get(p["check"], 0) + 1
        name = p["check"] if seen[p["check"]] == 1 else f"{p['check']}#{seen[p['check']]}"
        out.append(
            Evaluation(name=name, value=1.0 if p["passed"] else 0.0, comment=p["detail"] or None)
        )
    return out


def _task(by_item: Mapping[str, Mapping[str, Any]]) -> Any:
    """The experiment's task: an item's outcome as this run graded it (no model is asked)."""

    def task(*, item: Any, **_: Any) -> Any:
        found = by_item.get(item.id)
        if found is None:
            return None
        return {k: found[k] for k in ("status", "passed", "output", "tool_calls", "properties")}

    return task


def record(settings: Settings, report: Mapping[str, Any], cases: Sequence[Case]) -> dict[str, Any]:
    """Record ``report``'s run (the module docstring); what was recorded, per agent."""
    from langfuse import Langfuse  # lazy: the SDK loads only when Langfuse is configured
    from langfuse.api.core import ApiError
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()  # its own: the process-wide provider is never replaced
    client = Langfuse(
        public_key=settings.langfuse_public_key,
        secret_key=settings.langfuse_secret_key,
        base_url=settings.langfuse_host,
        tracer_provider=provider,
    )
    run = report["run"]
    graded = {c["id"]: c for c in report["cases"]}
    recorded: dict[str, Any] = {}
    try:
        for agent, summary in report["agents"].items():
            name = f"{PREFIX}{agent}"
            try:
                client.get_dataset(name)
            except ApiError:
                client.create_dataset(name=name, description=f"colony eval set of {agent}")
            mine = [c for c in cases if c.agent == agent and c.id in graded]
            for case in mine:
                client.create_dataset_item(
                    dataset_name=name,
                    id=item_id(case.id),
                    input=dict(case.inputs),
                    expected_output={
                        "outcome": case.outcome,
                        "expect": [dict(e) for e in case.expect],
                    },
                    metadata={"case": case.id, "tags": list(case.tags), "title": case.title},
                )
            by_item = {item_id(c.id): graded[c.id] for c in mine}

            def evaluate(*, output: Any, **_: Any) -> list[Any]:
                return _evaluations(output)

            dataset = client.get_dataset(name)
            dataset.items = [i for i in dataset.items if i.id in by_item]  # this run's cases only
            result = dataset.run_experiment(
                name=f"colony eval {agent}",
                run_name=str(run["id"]),
                description=f"{run.get('provider')} · {run.get('model')}",
                task=_task(by_item),
                evaluators=[evaluate],
                max_concurrency=4,
                metadata={
                    "template": summary["template"],
                    "model": summary["model"],
                    "provider": str(run.get("provider")),
                },
            )
            recorded[agent] = {
                "dataset": name,
                "items": len(mine),
                "experiment_id": result.experiment_id,
            }
        client.flush()
    finally:
        client.shutdown()
        provider.shutdown()
    return recorded
