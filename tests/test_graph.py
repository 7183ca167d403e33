"""The knowledge graph, derived from the registries (SPEC §8, seed §9.4)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from colony.errors import ValidationFailed
from colony.local.cli import main
from colony.registry.agents import AGENTS
from colony.registry.functions import FUNCTIONS
from colony.registry.graph import build_graph


def test_the_three_example_queries() -> None:
    graph = build_graph()
    # who reads ENT-007: the agents querying any Knowledge Core domain, and AGT-001 directly
    assert graph.who("reads from", "ENT-007") == [
        "AGT-001", "AGT-003", "AGT-004", "AGT-005", "AGT-006", "AGT-007", "AGT-008", "AGT-009",
        "AGT-010",
    ]  # fmt: skip
    assert graph.of("AGT-005", "constrained by") == ["CONST-001", "CONST-002", "CONST-006"]
    # a change to KC-08 reaches the message generator (and its function) and AGT-001
    assert graph.impact("KC-08") == ["AGT-001", "AGT-005", "fn:message-generator"]


def test_every_function_and_id_has_a_node() -> None:
    graph = build_graph()
    for function in FUNCTIONS.values():
        assert f"fn:{function.name}" in graph.nodes
        if function.agent:
            assert f"fn:{function.name}" in graph.of(function.agent, "deployed as")
    for agent in AGENTS.values():
        assert agent.id in graph.nodes
    assert {n.type for n in graph.nodes.values()} == {"component", "function", "document"}


def test_a_declaration_naming_an_unknown_id_fails() -> None:
    broken = {**AGENTS, "AGT-005": replace(AGENTS["AGT-005"], reads=("ENT-099",))}
    with pytest.raises(ValidationFailed, match="ENT-099"):
        build_graph(agents=broken)
    with pytest.raises(ValidationFailed, match="KC-42"):
        build_graph().impact("KC-42")


def test_cli_queries_and_exports(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "what-constrains", "AGT-005"]) == 0
    assert capsys.readouterr().out.split() == ["CONST-001", "CONST-002", "CONST-006"]
    assert main(["graph", "export", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert {"source": "KC-08", "relation": "part of", "target": "ENT-007"} in exported["edges"]
    assert main(["graph", "export", "mermaid"]) == 0
    assert capsys.readouterr().out.startswith("graph LR")
    assert main(["graph", "impact", "KC-99"]) == 2  # a clear error, not a traceback
