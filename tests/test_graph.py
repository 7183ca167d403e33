"""The knowledge graph, derived from the registries (SPEC §8, seed §9.4)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from colony.errors import ValidationFailed
from colony.local.cli import main
from colony.registry.agents import AGENTS
from colony.registry.domains import DOMAINS
from colony.registry.entities import CONSTRAINTS, ENTITIES, TECHNOLOGIES
from colony.registry.functions import FUNCTIONS
from colony.registry.graph import DOCUMENTS, TEST_SPECS, build_graph

REPO = Path(__file__).resolve().parents[1]


def functions_of(*agent_ids: str) -> set[str]:
    return {f"fn:{f.name}" for f in FUNCTIONS.values() if f.agent in agent_ids}


def test_the_three_example_queries() -> None:
    graph = build_graph()
    # who reads ENT-007: the agents querying any Knowledge Core domain, and AGT-001 directly
    readers = [
        "AGT-001",
        "AGT-003",
        "AGT-004",
        "AGT-005",
        "AGT-006",
        "AGT-007",
        "AGT-008",
        "AGT-009",
        "AGT-010",
    ]
    assert graph.who("reads from", "ENT-007") == readers
    assert readers == sorted(a.id for a in AGENTS.values() if a.kc_domains or "ENT-007" in a.reads)
    assert graph.of("AGT-005", "constrained by") == ["CONST-001", "CONST-002", "CONST-006"]
    # a change to KC-08 reaches the message generator and AGT-001 (which may read any domain),
    # and every function they are deployed as
    impact = graph.impact("KC-08")
    assert impact == sorted({"AGT-001", "AGT-005"} | functions_of("AGT-001", "AGT-005"))
    assert "fn:message-generator" in impact and "AGT-004" not in impact
    # seed §9.4: ENT-007 is queried by every agent that reads a domain
    assert graph.of("ENT-007", "queried by") == readers[1:]
    assert graph.of("KC-10", "queried by") == ["AGT-009"]


def test_every_id_function_and_document_has_a_node() -> None:
    graph = build_graph()
    for node in (*AGENTS, *ENTITIES, *DOMAINS, *CONSTRAINTS, *TECHNOLOGIES, *DOCUMENTS):
        assert node in graph.nodes, node
    for function in FUNCTIONS.values():
        assert f"fn:{function.name}" in graph.nodes
        assert graph.of(f"fn:{function.name}", "deployed as") == ["TECH-002"]
        if function.agent:
            assert f"fn:{function.name}" in graph.of(function.agent, "deployed as")
        if function.topic:
            assert graph.of(f"fn:{function.name}", "triggered by") == ["TECH-003"]
    assert {n.type for n in graph.nodes.values()} == {"component", "function", "document"}
    # every node takes part in at least one edge: nothing is declared and forgotten
    linked = {e.source for e in graph.edges} | {e.target for e in graph.edges}
    assert set(graph.nodes) - linked == set()


def test_the_registry_matches_the_deployed_functions_and_test_files() -> None:
    on_disk = {p.parent.name for p in (REPO / "functions").glob("*/main.py")}
    assert on_disk == set(FUNCTIONS)
    for path in TEST_SPECS:
        assert (REPO / path).is_file(), f"TEST_SPECS names a missing test file {path}"


def test_traceability_tested_by_and_defined_in() -> None:
    graph = build_graph()
    assert "test:tests/test_brief.py" in graph.tests_of("AGT-010")
    assert "test:tests/test_content_onboarding.py" in graph.tests_of("AGT-009")
    assert "test:tests/test_storage.py" in graph.tests_of("TECH-005")
    # an agent's tests include those of its functions
    assert "test:tests/test_functions_e2e.py" in graph.tests_of("AGT-005")
    assert graph.of("AGT-005", "defined in") == ["doc:registry", "doc:spec"]
    assert graph.of("AGT-005", "implements") == ["doc:design"]
    assert graph.of("TECH-001", "defined in") == ["doc:architecture"]
    assert graph.who("indexed as", "TECH-001") == ["ENT-007"]


@pytest.mark.parametrize(
    ("change", "unknown"),
    [
        (
            {"agents": {**AGENTS, "AGT-005": replace(AGENTS["AGT-005"], reads=("ENT-099",))}},
            "ENT-099",
        ),
        (
            {"agents": {**AGENTS, "AGT-008": replace(AGENTS["AGT-008"], constraints=("CONST-9",))}},
            "CONST-9",
        ),
        (
            {
                "functions": {
                    **FUNCTIONS,
                    "x": replace(FUNCTIONS["content"], name="x", agent="AGT-099"),
                }
            },
            "AGT-099",
        ),
        (
            {
                "functions": {
                    **FUNCTIONS,
                    "y": replace(FUNCTIONS["content"], name="y", topic="colony-nowhere"),
                }
            },
            "colony-nowhere",
        ),
        ({"test_specs": {**TEST_SPECS, "tests/test_brief.py": ("KC-42",)}}, "KC-42"),
    ],
)
def test_a_declaration_naming_an_unknown_id_fails(change: dict, unknown: str) -> None:
    with pytest.raises(ValidationFailed, match=re.escape(unknown)):
        build_graph(**change)


def test_queries_on_an_unknown_id_fail() -> None:
    graph = build_graph()
    queries = [
        lambda: graph.impact("KC-42"),
        lambda: graph.who("reads from", "ENT-099"),
        lambda: graph.of("AGT-011", "constrained by"),
        lambda: graph.tests_of("x"),
    ]
    for query in queries:
        with pytest.raises(ValidationFailed, match="unknown graph node"):
            query()


def test_cli_queries_and_exports(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "who-reads", "ENT-007"]) == 0
    assert capsys.readouterr().out.split() == build_graph().who("reads from", "ENT-007")
    assert main(["graph", "what-constrains", "AGT-005"]) == 0
    assert capsys.readouterr().out.split() == ["CONST-001", "CONST-002", "CONST-006"]
    assert main(["graph", "impact", "KC-08"]) == 0
    assert "fn:message-generator" in capsys.readouterr().out.split()
    assert main(["graph", "tested-by", "AGT-010"]) == 0
    assert "test:tests/test_brief.py" in capsys.readouterr().out.split()

    assert main(["graph", "export", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert {"source": "KC-08", "relation": "part of", "target": "ENT-007"} in exported["edges"]
    assert len(exported["nodes"]) == len(build_graph().nodes)
    assert main(["graph", "export", "mermaid"]) == 0
    mermaid = capsys.readouterr().out
    assert mermaid.startswith("graph LR") and "AGT_005 -->|constrained by| CONST_006" in mermaid
    assert main(["graph", "export", "dot"]) == 0
    dot = capsys.readouterr().out.strip()
    assert dot.startswith("digraph colony {") and dot.endswith("}")
    assert dot.count(" -> ") == len(build_graph().edges)
    assert '"AGT-009" -> "fn:onboarding" [label="deployed as"];' in dot

    assert main(["graph", "summary"]) == 0
    assert "who reads ENT-007: AGT-001" in capsys.readouterr().out
    # clear errors, not tracebacks
    assert main(["graph", "impact", "KC-99"]) == 2
    assert "unknown graph node 'KC-99'" in capsys.readouterr().err
    assert main(["graph", "export", "png"]) == 2
    assert main(["graph", "who-reads"]) == 2
