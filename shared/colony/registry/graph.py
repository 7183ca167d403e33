"""The knowledge graph (SPEC §8, seed §9), derived from the code's own declarations.

Nodes: **components** (every AGT, ENT, KC, CONST and TECH id), **functions** (every deployed
Cloud Function, ``fn:<name>``) and **documents** (the design documents, and each test file
that declares what it verifies, ``test:<path>``).

Edges:
- traceability: ``implements`` (an agent implements its entry in the design document's agent
  inventory), ``defined in``, ``deployed as`` (agent → function → TECH-002) and ``tested by``;
- data flow: ``reads from``, ``writes to``, ``constrained by`` (the agent registry),
  ``triggered by`` (a function's Pub/Sub topic, checked against the topic registry),
  ``queried by`` (a Knowledge Core domain → the agents that query it), plus ``part of``
  (KC-xx → ENT-007) and ``indexed as`` (ENT-007 → TECH-001).

Everything comes from the agent, domain, entity, function and topic registries and, for
``tested by``, from what the tests declare (``@pytest.mark.covers("AGT-006", "KC-09")``,
read from their sources by ``colony.local.declared_tests`` and passed in as ``test_specs``),
so the graph cannot drift from the code: ``build_graph`` refuses a declaration naming an
unknown id, and the graph test fails when a registered function has no node.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from colony.errors import ValidationFailed
from colony.registry.agents import AGENTS, Agent
from colony.registry.domains import DOMAINS
from colony.registry.entities import CONSTRAINTS, ENTITIES, TECHNOLOGIES
from colony.registry.functions import FUNCTIONS, TOPICS, Function, Topic

DATA_FLOW = (
    "reads from",
    "writes to",
    "constrained by",
    "triggered by",
    "queried by",
    "part of",
    "indexed as",
)
TRACEABILITY = ("implements", "defined in", "deployed as", "tested by")

# The design documents (outside the repo, in the team handbook, except the registry).
DOCUMENTS: dict[str, str] = {
    "doc:spec": "SPEC.md (the team's product specification)",
    "doc:design": "Colony Context Engine design document (seed)",
    "doc:architecture": "ARCHITECTURE.md (the shape and its dependency directions)",
    "doc:registry": "shared/colony/registry (the declarations this graph is built from)",
}

# The components every one of which should have a test (``untested`` lists those without).
MUST_BE_TESTED = ("AGT-", "ENT-", "KC-")


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    type: str  # component | function | document
    label: str


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    relation: str
    target: str


@dataclass
class Graph:
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)

    def add(self, source: str, relation: str, target: str) -> None:
        if relation not in DATA_FLOW + TRACEABILITY:
            raise ValidationFailed(f"unknown graph relation {relation!r}")
        for end in (source, target):
            if end not in self.nodes:
                raise ValidationFailed(f"graph declaration names unknown id {end!r}")
        edge = Edge(source, relation, target)
        if edge not in self.edges:
            self.edges.append(edge)

    def who(self, relation: str, target: str) -> list[str]:
        """Sources with ``relation`` to ``target`` (``who reads ENT-007``). Reading a part
        counts as reading the whole: an agent reading KC-08 reads ENT-007."""
        self._known(target)
        targets = {target, *self._parts(target)} if relation == "reads from" else {target}
        return sorted(
            {e.source for e in self.edges if e.relation == relation and e.target in targets}
        )

    def of(self, source: str, relation: str) -> list[str]:
        """Targets ``source`` has ``relation`` to (``what constrains AGT-005``)."""
        self._known(source)
        return sorted(
            {e.target for e in self.edges if e.source == source and e.relation == relation}
        )

    def impact(self, node: str) -> list[str]:
        """What a change to ``node`` reaches (``what breaks if KC-08 changes``): whatever reads
        it or reads a whole it is part of, and the functions those are deployed as."""
        self._known(node)
        containers = {e.target for e in self.edges if e.source == node and e.relation == "part of"}
        readers = {
            e.source
            for e in self.edges
            if e.relation == "reads from" and (e.target == node or e.target in containers)
        }
        deployed = {
            e.target for e in self.edges if e.relation == "deployed as" and e.source in readers
        }
        return sorted(readers | {d for d in deployed if self.nodes[d].type == "function"})

    def tests_of(self, node: str) -> list[str]:
        """The test files that verify ``node`` (and, for an agent, its functions)."""
        self._known(node)
        subjects = {node, *(d for d in self.of(node, "deployed as") if d.startswith("fn:"))}
        return sorted(
            {e.target for e in self.edges if e.relation == "tested by" and e.source in subjects}
        )

    def untested(self) -> list[str]:
        """The agents, entities and KC domains no test declares it verifies (an agent counts
        as tested by its functions' tests), as ``id  label``."""
        return [
            f"{n.id}  {n.label}"
            for n in self.nodes.values()
            if n.id.startswith(MUST_BE_TESTED) and not self.tests_of(n.id)
        ]

    def _parts(self, whole: str) -> set[str]:
        return {e.source for e in self.edges if e.relation == "part of" and e.target == whole}

    def _known(self, node: str) -> None:
        if node not in self.nodes:
            raise ValidationFailed(f"unknown graph node {node!r}")

    def summary(self) -> str:
        kinds = {t: sum(n.type == t for n in self.nodes.values()) for t in _NODE_TYPES}
        return (
            f"{len(self.nodes)} nodes ({', '.join(f'{n} {t}s' for t, n in kinds.items())}), "
            f"{len(self.edges)} edges; who reads ENT-007: "
            f"{', '.join(self.who('reads from', 'ENT-007'))}; what constrains AGT-005: "
            f"{', '.join(self.of('AGT-005', 'constrained by'))}; impact of KC-08: "
            f"{', '.join(self.impact('KC-08'))}"
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "nodes": [vars_of(n) for n in self.nodes.values()],
                "edges": [vars_of(e) for e in self.edges],
            },
            indent=2,
        )

    def to_mermaid(self) -> str:
        lines = ["graph LR"]
        lines += [f'    {_key(n.id)}["{n.id}: {_quote(n.label)}"]' for n in self.nodes.values()]
        lines += [f"    {_key(e.source)} -->|{e.relation}| {_key(e.target)}" for e in self.edges]
        return "\n".join(lines)

    def to_dot(self) -> str:
        shapes = {"component": "box", "function": "ellipse", "document": "note"}
        lines = ["digraph colony {", "    rankdir=LR;"]
        lines += [
            f'    "{n.id}" [label="{n.id}\\n{_quote(n.label)}", shape={shapes[n.type]}];'
            for n in self.nodes.values()
        ]
        lines += [f'    "{e.source}" -> "{e.target}" [label="{e.relation}"];' for e in self.edges]
        return "\n".join([*lines, "}"])

    def export(self, fmt: str) -> str:
        exporters = {"json": self.to_json, "mermaid": self.to_mermaid, "dot": self.to_dot}
        if fmt not in exporters:
            raise ValidationFailed(f"unknown export format {fmt!r}; expected json, mermaid or dot")
        return exporters[fmt]()


_NODE_TYPES = ("component", "function", "document")


def _key(node: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in node)


def _quote(text: str) -> str:
    return text.replace('"', "'")


def vars_of(item: Node | Edge) -> dict[str, str]:
    return {name: getattr(item, name) for name in item.__slots__}


def build_graph(
    agents: Mapping[str, Agent] = AGENTS,
    functions: Mapping[str, Function] = FUNCTIONS,
    topics: Mapping[str, Topic] = TOPICS,
    test_specs: Mapping[str, Iterable[str]] | None = None,
) -> Graph:
    """The graph of the registries; ``test_specs`` (test file path → the ids it declares it
    covers) adds the ``tested by`` edges."""
    test_specs = test_specs or {}
    graph = Graph()

    def nodes(kind: str, items: Iterable[tuple[str, str]]) -> None:
        for node_id, label in items:
            graph.nodes[node_id] = Node(node_id, kind, label)

    nodes("component", ((a.id, a.name) for a in agents.values()))
    nodes("component", ENTITIES.items())
    nodes("component", ((d.id, d.name) for d in DOMAINS.values()))
    nodes("component", CONSTRAINTS.items())
    nodes("component", TECHNOLOGIES.items())
    nodes("function", ((f"fn:{f.name}", f.purpose) for f in functions.values()))
    nodes("document", DOCUMENTS.items())
    nodes("document", ((f"test:{path}", f"test file {path}") for path in test_specs))

    for a in agents.values():
        for entity in a.reads:
            graph.add(a.id, "reads from", entity)
        for domain in a.kc_domains:
            graph.add(a.id, "reads from", domain)
            graph.add(domain, "queried by", a.id)
            graph.add("ENT-007", "queried by", a.id)
        for entity in a.writes:
            graph.add(a.id, "writes to", entity)
        for constraint in a.constraints:
            graph.add(a.id, "constrained by", constraint)
        graph.add(a.id, "implements", "doc:design")
        graph.add(a.id, "defined in", "doc:registry")
        graph.add(a.id, "defined in", "doc:spec")
    for domain in DOMAINS:
        graph.add(domain, "part of", "ENT-007")
        graph.add(domain, "defined in", "doc:spec")
    graph.add("ENT-007", "indexed as", "TECH-001")
    for f in functions.values():
        node = f"fn:{f.name}"
        graph.add(node, "deployed as", "TECH-002")
        graph.add(node, "defined in", "doc:registry")
        if f.agent:
            graph.add(f.agent, "deployed as", node)
        if f.topic:
            if f.topic not in topics:
                raise ValidationFailed(f"function {f.name!r} names unknown topic {f.topic!r}")
            graph.add(node, "triggered by", "TECH-003")
    for node in (*ENTITIES, *CONSTRAINTS):
        graph.add(node, "defined in", "doc:spec")
    for node in TECHNOLOGIES:
        graph.add(node, "defined in", "doc:architecture")
    for path, covered in test_specs.items():
        for node in covered:
            graph.add(node, "tested by", f"test:{path}")
    return graph


QUERIES = ("who-reads", "what-constrains", "impact", "tested-by", "untested", "export", "summary")


def run_query(graph: Graph, query: str, arg: str | None) -> str:
    """One CLI query's output: ids one per line (or ``(nothing)``), an export, or the
    summary (``untested`` takes no id). An unknown id or format raises ``ValidationFailed``."""
    if query == "summary":
        return graph.summary()
    if query == "export":
        return graph.export(arg or "json")
    if query == "untested":
        return "\n".join(graph.untested()) or "(nothing)"
    if not arg:
        raise ValidationFailed(f"{query} needs a node id, e.g. ENT-007")
    answers = {
        "who-reads": lambda: graph.who("reads from", arg),
        "what-constrains": lambda: graph.of(arg, "constrained by"),
        "impact": lambda: graph.impact(arg),
        "tested-by": lambda: graph.tests_of(arg),
    }
    if query not in answers:
        raise ValidationFailed(f"unknown query {query!r}; expected one of {', '.join(QUERIES)}")
    return "\n".join(answers[query]()) or "(nothing)"
