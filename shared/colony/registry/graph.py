"""The knowledge graph (SPEC §8, seed §9), derived from the code's own declarations.

Nodes are components (AGT, ENT, KC, CONST, TECH ids), deployed functions and documents; edges
are traceability (deployed as, defined in) and data flow (reads from, writes to, constrained
by, triggered by, part of, indexed as). Everything comes from the agent, domain, entity and
function registries, so the graph cannot drift from the code; ``build_graph`` refuses a
declaration that names an unknown id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from colony.errors import ValidationFailed
from colony.registry.agents import AGENTS, Agent
from colony.registry.domains import DOMAINS
from colony.registry.entities import CONSTRAINTS, ENTITIES, TECHNOLOGIES
from colony.registry.functions import FUNCTIONS, Function

DATA_FLOW = ("reads from", "writes to", "constrained by", "triggered by", "part of", "indexed as")
TRACEABILITY = ("deployed as", "defined in")

# Where each component is defined (documents are nodes too).
DOCUMENTS: dict[str, str] = {
    "doc:spec": "SPEC.md (the team's product specification)",
    "doc:design": "Colony Context Engine design document (seed)",
    "doc:registry": "shared/colony/registry (the declarations this graph is built from)",
}


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
        for end in (source, target):
            if end not in self.nodes:
                raise ValidationFailed(f"graph declaration names unknown id {end!r}")
        self.edges.append(Edge(source, relation, target))

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

    def _parts(self, whole: str) -> set[str]:
        return {e.source for e in self.edges if e.relation == "part of" and e.target == whole}

    def _known(self, node: str) -> None:
        if node not in self.nodes:
            raise ValidationFailed(f"unknown graph node {node!r}")

    def to_json(self) -> str:
        return json.dumps(
            {"nodes": [vars_of(n) for n in self.nodes.values()],
             "edges": [vars_of(e) for e in self.edges]},
            indent=2,
        )  # fmt: skip

    def to_mermaid(self) -> str:
        def key(node: str) -> str:
            return node.replace("-", "_").replace(":", "_")

        lines = ["graph LR"]
        lines += [f'    {key(n.id)}["{n.id}: {n.label}"]' for n in self.nodes.values()]
        lines += [f"    {key(e.source)} -->|{e.relation}| {key(e.target)}" for e in self.edges]
        return "\n".join(lines)


def vars_of(item: Node | Edge) -> dict[str, str]:
    return {name: getattr(item, name) for name in item.__slots__}


def build_graph(
    agents: Mapping[str, Agent] = AGENTS,
    functions: Mapping[str, Function] = FUNCTIONS,
) -> Graph:
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

    for a in agents.values():
        for entity in a.reads:
            graph.add(a.id, "reads from", entity)
        for domain in a.kc_domains:
            graph.add(a.id, "reads from", domain)
        for entity in a.writes:
            graph.add(a.id, "writes to", entity)
        for constraint in a.constraints:
            graph.add(a.id, "constrained by", constraint)
        graph.add(a.id, "defined in", "doc:registry")
    for domain in DOMAINS:
        graph.add(domain, "part of", "ENT-007")
    graph.add("ENT-007", "indexed as", "TECH-001")
    for f in functions.values():
        node = f"fn:{f.name}"
        graph.add(node, "deployed as", "TECH-002")
        if f.agent:
            graph.add(f.agent, "deployed as", node)
        if f.topic:
            graph.add(node, "triggered by", "TECH-003")
    for node in (*ENTITIES, *CONSTRAINTS):
        graph.add(node, "defined in", "doc:spec")
    return graph
