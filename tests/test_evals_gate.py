"""The eval sets and the offline gate (issue 37 items 1-3): the sets are what they claim, and
the whole of them runs through the real assembly and model path against the offline model in
about a minute, as a gate on plumbing (templates, budgets, contracts, the flows' own
handling of an answer).

Real parts: every case through ``call_agent`` (assembler, templates, budgets, token counter,
the offline provider, the structured runner), the flows' grounding, policy and checks, and
for AGT-010 embedded PostgreSQL with the brief's own SQL. Nothing is stood in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colony.evals import checks, report
from colony.evals.cases import AGENTS, load
from colony.evals.generate.__main__ import main as generate
from colony.evals.session import Target, execute
from colony.settings import Settings
from tests.conftest import PgDB

pytestmark = [
    pytest.mark.usefixtures("no_ambient_config"),
    pytest.mark.covers(
        "AGT-001",
        "AGT-003",
        "AGT-004",
        "AGT-005",
        "AGT-006",
        "AGT-007",
        "AGT-008",
        "AGT-009",
        "AGT-010",
    ),
]

HARD = (
    "anti_icp_edge",
    "near_miss",
    "missing_fields",
    "conflicting_signals",
    "stale_signals",
    "competitor_in_context",
    "planted_instruction",
    "long_transcript",
    "empty_input",
)


def test_every_agent_has_30_cases_300_in_all_and_the_hard_cases_are_there() -> None:
    found = load()
    counts = {a: len(found.of(a)) for a in AGENTS}
    assert all(n >= 30 for n in counts.values()), counts
    assert sum(counts.values()) >= 300
    tags = {t for c in found.cases for t in c.tags}
    assert set(HARD) <= tags, set(HARD) - tags
    assert {c.source for c in found.cases} == {"generated", "hand"}
    for case in found.cases:  # every property names a check that exists
        for prop in case.expect:
            assert prop["check"] in checks.CHECKS or prop["check"] == checks.JUDGED, case.id
    outcomes = {c.outcome for c in found.cases}
    assert outcomes == {"answer", "missing_data", "rejected", "tool"}


def test_the_generated_sets_are_exactly_what_the_generator_writes() -> None:
    assert generate(["--check"]) == 0


def test_the_offline_run_of_every_case_is_a_gate_that_holds(testdb: PgDB, tmp_path: Path) -> None:
    # its time is not asserted (a timed test flakes on a shared machine): the run prints it
    built, folder = execute(
        Settings.from_env({}), load(), Target(), out=tmp_path, db=testdb.app(), judge="offline"
    )
    assert built["gate"]["passed"], built["gate"]["fallen"]
    gates = json.loads(report.GATES.read_text())["providers"]["offline"]
    assert set(gates) == set(AGENTS)  # a gate for every agent, at what offline measured
    for agent, summary in built["agents"].items():
        assert summary["pass_rate"] >= gates[agent]["pass_rate"], agent
        assert summary["template"] and summary["latency_ms"]["p95"] is not None
    # plumbing: no case ended in an error of ours (a template or budget broken, a contract
    # the offline model cannot meet), only in what the model answered
    errors = [c["id"] for c in built["cases"] if c["status"] == "error"]
    assert errors == ["AGT-008/competitor/topic-names-them"], errors
    # an answer still invalid after its repair says why in the report (not in any log)
    invalid = next(c for c in built["cases"] if c["id"] == errors[0])
    assert invalid["error"].startswith("OutputInvalid"), invalid["error"]
    assert "still invalid after one repair attempt" in invalid["error_detail"]
    # AGT-010's numbers came from SQL over the case's rows: a scenario with sends yesterday
    day = next(c for c in built["cases"] if c["id"] == "AGT-010/day/01")
    assert day["facts"]["snapshot"]["messages_sent"] >= 1
    stale = next(c for c in built["cases"] if c["id"] == "AGT-010/stale/sent-the-day-before")
    assert stale["facts"]["snapshot"]["messages_sent"] == 0  # six sent, none yesterday
    # the report and its page were written
    assert json.loads((folder / "report.json").read_text())["run"]["id"] == built["run"]["id"]
    assert "<h2>Gate" in (folder / "report.html").read_text()
