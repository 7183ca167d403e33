"""An eval run's report, page, gate, comparison, judge and command line (issue 37 items 2-3).

Real parts: the offline model through the real assembly and call path for the cases run; the
``colony`` command's own parser and exit codes. The judge's agreement is measured on the
checked-in labelled answers, by the offline keyword judge and by judges given as models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pg8000.dbapi
import pytest

from colony.adapters.offline.prompt import blocks_in
from colony.evals import compare, judge, page, report
from colony.evals.cases import load
from colony.evals.drive import CallStat, Outcome
from colony.evals.runner import CaseResult
from colony.evals.session import Target, execute
from colony.local.cli import main
from colony.local.embedded import socket_dsn
from colony.ports import ModelRequest, ModelResponse, TextSink, Usage
from colony.settings import Settings
from colony.store.db import fetch_all, parse_dsn

pytestmark = [pytest.mark.usefixtures("no_ambient_config"), pytest.mark.covers("AGT-004")]


def result(case_id: str, passed: bool, latency: float, **outcome: Any) -> CaseResult:
    case = load().select(ids=[case_id]).cases[0]
    props = [{"check": "outcome", "passed": passed, "detail": "", "counted": True}]
    return CaseResult(case, Outcome(**outcome), props, passed, "m", "t1", 10, 5, latency, 0.001)


def test_the_report_summarises_rates_latency_percentiles_and_the_gate() -> None:
    ids = [c.id for c in load().of("AGT-004")[:4]]
    results = [result(i, n != 3, 100.0 * (n + 1)) for n, i in enumerate(ids)]
    for r in results:  # each made one model call
        r.outcome.calls.append(CallStat("AGT-004", "m", 10, 5, r.latency_ms, 1, "v"))
    limits = report.thresholds(["AGT-004"], "openai", {"AGT-004": 0.8})
    built = report.build(results, {"id": "r1"}, limits=limits)

    agent = built["agents"]["AGT-004"]
    assert (agent["cases"], agent["passed"], agent["pass_rate"]) == (4, 3, 0.75)
    assert agent["latency_ms"] == {"p50": 200.0, "p95": 400.0}
    assert agent["cost_usd"] == pytest.approx(0.004)
    assert built["gate"]["fallen"] == [  # the rate given, and the default's plumbing floor
        {"agent": "AGT-004", "pass_rate": 0.75, "threshold": 0.8},
        {"agent": "AGT-004", "property": "outcome", "pass_rate": 0.75, "threshold": 0.9},
    ]
    failed = [c for c in built["cases"] if not c["passed"]]
    assert [c["id"] for c in failed] == [ids[3]] and "contact" in failed[0]["inputs"]
    assert "inputs" not in built["cases"][0]  # a passing case's inputs are in the set


def test_a_property_threshold_falls_on_its_own() -> None:
    agents = {"AGT-009": {"pass_rate": 0.0, "properties": {"outcome": {"rate": 0.9}}}}
    limits = {"AGT-009": {"pass_rate": 0.0, "properties": {"outcome": 1.0}}}
    fallen = report.gate(agents, limits)["fallen"]
    assert fallen == [
        {"agent": "AGT-009", "property": "outcome", "pass_rate": 0.9, "threshold": 1.0}
    ]


def test_the_page_escapes_what_a_case_carries() -> None:
    case_id = load().of("AGT-004")[0].id
    planted = result(case_id, False, 5.0, output={"reasoning": "<script>alert(1)</script>"})
    built = report.build([planted], {"id": "<b>run</b>"}, limits={})
    html = page.render(built)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;run&lt;/b&gt;" in html


def test_two_runs_compare_case_by_case_with_what_changed() -> None:
    ids = [c.id for c in load().of("AGT-004")[:3]]

    def run(name: str, template: str, passed: list[bool]) -> dict[str, Any]:
        cases = [
            {"id": i, "agent": "AGT-004", "template": template, "model": "m", "passed": p}
            for i, p in zip(ids, passed, strict=True)
        ]
        return {"run": {"id": name}, "cases": cases}

    diff = compare.compare(
        run("A", "t1", [True, False, False]), run("B", "t2", [False, True, False])
    )
    entry = diff["agents"]["AGT-004"]
    assert (entry["regressed"], entry["fixed"], entry["still_failing"]) == (
        [ids[0]],
        [ids[1]],
        [ids[2]],
    )
    assert entry["changed"] == "template"
    assert "regressed: " + ids[0] in compare.render(diff)


class LabelModel:
    """A judge's model that answers every labelled answer with its label (a judge that can
    judge) or its opposite (one that cannot)."""

    def __init__(self, *, truthful: bool) -> None:
        self.truthful = truthful
        self.labels = {item["answer"]: bool(item["label"]) for item in judge.labelled()}

    def request(self, request: ModelRequest) -> ModelResponse:
        boundary = request.messages[0].content.split("<<DATA ", 1)[1].split(" ", 1)[0]
        shown = {b.source: b.text for b in blocks_in(request.messages[-1].content, boundary)}
        label = self.labels[shown["answer"]]
        verdict = {"passed": label if self.truthful else not label, "reason": "as labelled"}
        return ModelResponse(json.dumps({"answer": verdict}), Usage(1, 1), "label-model")

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        raise AssertionError("the judge does not stream")


def test_a_judge_is_trusted_only_as_far_as_it_agrees_with_the_labelled_answers() -> None:
    good = judge.agreement(judge.ModelJudge(LabelModel(truthful=True), "label-model"))
    assert (good["agreement"], good["kappa"], good["trusted"]) == (1.0, 1.0, True)
    bad = judge.agreement(judge.ModelJudge(LabelModel(truthful=False), "label-model"))
    assert (bad["agreement"], bad["trusted"]) == (0.0, False)
    assert len(bad["disagreements"]) == bad["labelled"] >= 20
    # the offline keyword judge: agreement as its rule gives it, computed here independently
    items = judge.labelled()
    rule = [
        bool(i["answer"].strip()) and all(k.lower() in i["answer"].lower() for k in i["keywords"])
        for i in items
    ]
    expected = sum(r == bool(i["label"]) for r, i in zip(rule, items, strict=True)) / len(items)
    offline = judge.agreement(judge.offline_judge())
    assert offline["agreement"] == round(expected, 3) and not offline["trusted"]


def test_rubric_grades_count_only_when_the_judge_is_trusted(tmp_path: Path) -> None:
    cases = load().select(ids=["AGT-007/follow-up/00"])
    built, _ = execute(Settings.from_env({}), cases, Target(), out=tmp_path, judge="offline")
    rubric = [p for p in built["cases"][0]["properties"] if p["check"] == "rubric"]
    assert rubric and not rubric[0]["counted"]  # the keyword judge is not trusted
    assert built["judge"]["trusted"] is False


@pytest.fixture
def plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command reads the environment: nothing in it may pick another model or Langfuse."""
    for name in (
        "COLONY_LLM_PROVIDER",
        "COLONY_LLM_MODEL",
        "LANGFUSE_PUBLIC_KEY",
        "COLONY_DB_MODE",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("plain_env")
def test_the_command_writes_a_report_and_exits_1_when_the_gate_falls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path)
    args = ["eval", "run", "--agent", "AGT-004", "--out", out, "--judge", "none"]
    assert main([*args, "--min-pass", "AGT-004=1.0"]) == 1  # offline misses two cases
    said = capsys.readouterr().out
    assert "the gate fell: AGT-004 pass rate" in said and "FAIL AGT-004/missing/" in said
    assert main(args) == 0  # gates.json: what offline measured
    first, second = sorted(p for p in tmp_path.iterdir())
    assert (first / "report.html").exists() and (second / "report.json").exists()
    assert main(["eval", "compare", str(first), str(second / "report.json")]) == 0
    said = capsys.readouterr().out
    assert "0 fixed, 0 regressed" in said and "changed: nothing" in said
    assert main(["eval", "sets"]) == 0
    assert "AGT-004: 60" in capsys.readouterr().out


@pytest.mark.usefixtures("plain_env")
@pytest.mark.covers("AGT-010")
def test_the_command_runs_the_brief_in_a_scratch_database_and_drops_it(
    pg_cluster: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the local stack's cluster is the tests' own: its data directory, under this one
    (tmp_path / "pgdata").symlink_to(pg_cluster)
    monkeypatch.setenv("COLONY_DATA_DIR", str(tmp_path))
    args = ["eval", "run", "--case", "AGT-010/day/05", "--judge", "none"]
    assert main([*args, "--out", str(tmp_path / "runs")]) == 0

    (folder,) = (tmp_path / "runs").iterdir()
    built = json.loads((folder / "report.json").read_text())
    assert built["cases"][0]["facts"]["snapshot"]["approval_queue_count"] == 4  # (5 * 3) % 11
    admin = pg8000.dbapi.connect(**parse_dsn(socket_dsn(pg_cluster, "postgres", "postgres")))
    try:
        left = fetch_all(admin.cursor(), "SELECT datname FROM pg_database")
    finally:
        admin.close()
    assert not [r for r in left if str(r["datname"]).startswith("colony_eval")]
