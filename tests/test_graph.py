"""The knowledge graph, derived from the registries (SPEC §8, seed §9.4)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from colony.errors import ValidationFailed
from colony.local.cli import main
from colony.local.declared_tests import declared_tests, file_declarations
from colony.registry.agents import AGENTS
from colony.registry.domains import DOMAINS
from colony.registry.entities import CONSTRAINTS, ENTITIES, TECHNOLOGIES
from colony.registry.functions import FUNCTIONS
from colony.registry.graph import DOCUMENTS, build_graph

pytestmark = pytest.mark.covers("doc:registry")

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


def test_the_registry_matches_the_deployed_functions() -> None:
    on_disk = {p.parent.name for p in (REPO / "functions").glob("*/main.py")}
    assert on_disk == set(FUNCTIONS)


def test_every_id_a_test_declares_is_known() -> None:
    """The CI check of the ``covers`` markers: ``build_graph`` refuses an unknown id (named
    in the failure), so a typo or a renamed component fails here."""
    specs = declared_tests()
    assert "tests/test_graph.py" in specs
    assert all((REPO / path).is_file() and Path(path).name.startswith("test_") for path in specs)
    graph = build_graph(test_specs=specs)
    tested = {e.source for e in graph.edges if e.relation == "tested by"}
    assert tested == {i for ids in specs.values() for i in ids}


def test_tested_by_comes_from_the_tests_own_markers() -> None:
    graph = build_graph(test_specs=declared_tests())
    # the components the hand-kept list had no test for: each is declared by a test that runs it
    assert "test:tests/test_chat_e2e.py" in graph.tests_of("AGT-001")
    assert "test:tests/test_drive_recording.py" in graph.tests_of("AGT-006")
    assert "test:tests/test_drive_recording.py" in graph.tests_of("AGT-007")
    assert "test:tests/test_drive_recording.py" in graph.tests_of("ENT-006")
    assert "test:tests/test_kc_lifecycle.py" in graph.tests_of("KC-09")
    assert "test:tests/test_brief.py" in graph.tests_of("AGT-010")
    assert "test:tests/test_content_onboarding.py" in graph.tests_of("AGT-009")
    assert "test:tests/test_storage.py" in graph.tests_of("TECH-005")
    # an agent's tests include those of its functions
    assert "test:tests/test_functions_e2e.py" in graph.tests_of("AGT-005")
    assert graph.of("AGT-005", "defined in") == ["doc:registry", "doc:spec"]
    assert graph.of("AGT-005", "implements") == ["doc:design"]
    assert graph.of("TECH-001", "defined in") == ["doc:architecture"]
    assert graph.who("indexed as", "TECH-001") == ["ENT-007"]


def test_untested_lists_the_components_no_test_declares() -> None:
    specs = declared_tests()
    graph = build_graph(test_specs=specs)
    untested = [line.split()[0] for line in graph.untested()]
    assert untested == [n for n in (*AGENTS, *ENTITIES, *DOMAINS) if not graph.tests_of(n)]
    assert not any(n.startswith(("CONST-", "TECH-", "fn:", "doc:")) for n in untested)
    # Every agent, entity and domain has a test that declares it: a new component comes with
    # one, and a marker removed from the last test of one fails here.
    assert untested == []
    # a component loses its edge when its last marker goes, and is listed
    without = {path: tuple(i for i in ids if i != "KC-09") for path, ids in specs.items()}
    assert "KC-09  call insights" in build_graph(test_specs=without).untested()
    assert build_graph().untested()[:2] == [
        "AGT-001  GTM Orchestrator",
        "AGT-002  Campaign Orchestrator",
    ]


def test_markers_are_read_from_the_source_in_every_form(tmp_path: Path) -> None:
    tests = tmp_path / "tests" / "sub"
    tests.mkdir(parents=True)
    (tests / "test_forms.py").write_text(
        "import pytest\n"
        "pytestmark = [pytest.mark.slow, pytest.mark.covers('ENT-001')]\n"
        "@pytest.mark.covers('AGT-001', 'KC-09')\n"
        "def test_a(): ...\n"
        "class TestB:\n"
        "    pytestmark = pytest.mark.covers('ENT-006')\n"
        "@pytest.mark.parametrize('x', [pytest.param(1, marks=pytest.mark.covers('KC-01'))])\n"
        "def test_c(x): ...\n"
        "from pytest import mark\n"
        "@mark.covers('TECH-001')\n"
        "def test_d(): ...\n"
    )
    (tests / "test_none.py").write_text("def test_x(): ...\n")
    (tests / "helper.py").write_text("import pytest\nM = pytest.mark.covers(X)\n")  # not a test
    assert declared_tests(tmp_path) == {
        "tests/sub/test_forms.py": ("AGT-001", "ENT-001", "ENT-006", "KC-01", "KC-09", "TECH-001")
    }


@pytest.mark.parametrize(
    "source",
    [
        "import pytest\nIDS = ('AGT-001',)\n@pytest.mark.covers(*IDS)\ndef test_a(): ...\n",
        "import pytest\nmark = pytest.mark.covers\n",
        "import pytest\n@pytest.mark.covers()\ndef test_a(): ...\n",
        "import pytest\n@pytest.mark.covers(ids='AGT-001')\ndef test_a(): ...\n",
    ],
)
def test_a_declaration_that_cannot_be_read_fails_naming_its_line(
    tmp_path: Path, source: str
) -> None:
    path = tmp_path / "test_bad.py"
    path.write_text(source)
    with pytest.raises(ValidationFailed, match=re.escape(f"{path}:")):
        file_declarations(path)


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
        ({"test_specs": {"tests/test_brief.py": ("AGT-010", "KC-42")}}, "KC-42"),
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
    graph = build_graph(test_specs=declared_tests())  # what the CLI builds
    assert main(["graph", "who-reads", "ENT-007"]) == 0
    assert capsys.readouterr().out.split() == graph.who("reads from", "ENT-007")
    assert main(["graph", "what-constrains", "AGT-005"]) == 0
    assert capsys.readouterr().out.split() == ["CONST-001", "CONST-002", "CONST-006"]
    assert main(["graph", "impact", "KC-08"]) == 0
    assert "fn:message-generator" in capsys.readouterr().out.split()
    assert main(["graph", "tested-by", "AGT-010"]) == 0
    assert "test:tests/test_brief.py" in capsys.readouterr().out.split()
    assert (
        main(["graph", "tested-by", "AGT-006"]) == 0
    )  # "(nothing)" when the list was kept by hand
    assert capsys.readouterr().out.split() == [
        "test:tests/test_drive_recording.py",
        "test:tests/test_evals_gate.py",  # the eval sets' offline gate
    ]
    assert main(["graph", "untested"]) == 0
    listed = capsys.readouterr().out.strip()
    assert listed == ("\n".join(graph.untested()) or "(nothing)")

    assert main(["graph", "export", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert {"source": "KC-08", "relation": "part of", "target": "ENT-007"} in exported["edges"]
    assert len(exported["nodes"]) == len(graph.nodes)
    assert main(["graph", "export", "mermaid"]) == 0
    mermaid = capsys.readouterr().out
    assert mermaid.startswith("graph LR") and "AGT_005 -->|constrained by| CONST_006" in mermaid
    assert main(["graph", "export", "dot"]) == 0
    dot = capsys.readouterr().out.strip()
    assert dot.startswith("digraph colony {") and dot.endswith("}")
    assert dot.count(" -> ") == len(graph.edges)
    assert '"AGT-009" -> "fn:onboarding" [label="deployed as"];' in dot

    assert main(["graph", "summary"]) == 0
    assert "who reads ENT-007: AGT-001" in capsys.readouterr().out
    # clear errors, not tracebacks
    assert main(["graph", "impact", "KC-99"]) == 2
    assert "unknown graph node 'KC-99'" in capsys.readouterr().err
    assert main(["graph", "export", "png"]) == 2
    assert main(["graph", "who-reads"]) == 2
