"""No import circles between the modules of ``shared/colony`` (issue 32 item 2).

The graph is read from the source by the bundle builder's own reader
(``colony.deploy.imports.imported_names``), so it sees the imports the bundles are built from:

- every ``import``, including those inside functions. Moving an import into a function makes
  it lazy, not gone; a circle is removed by moving the shared piece down a layer.
- not those under ``if TYPE_CHECKING:``: they never run, and annotations may name a type
  from anywhere.
- not string constants naming a ``colony.`` module. The bundle counts them (importlib may
  load one), but here they would be noise: today they are logger names, which load nothing
  (``dead_letters`` logs as ``"colony.adapters.transport_local"``), and the lazy homes of
  ``colony.contracts``' names, which point down into its own modules.

Every module under ``shared/colony`` is a node, the local-only and build-time packages included.
An import of ``a.b.c`` is an edge to the deepest of ``a.b.c``, ``a.b``, ``a`` that is a module
(``from colony.store import Database`` is an edge to ``colony.store``'s ``__init__``; ``from
colony.flows.approvals import approval`` one to ``colony.flows.approvals.approval``), and to
every package ``__init__`` on the way that Python must run first, except the importer's own
packages: those are already running or done when it runs (a submodule is loaded from inside its
package), so counting them would make every package that re-exports a submodule look like a
circle. A module that imports its own package's ``__init__`` by name still counts, as that
``__init__`` may be half-initialised when it does.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

from colony.deploy.imports import SharedPackage, imported_names

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / "shared"

Graph = dict[str, set[str]]


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(root: Path, top: str = "colony") -> Graph:
    """Module → the modules of ``top`` it imports (see the module docstring for the rules)."""
    shared = SharedPackage(root)
    graph: Graph = {}
    for path in sorted((root / top).rglob("*.py")):
        name = module_name(path, root)
        own = set(_ancestors(name)) | ({name} if path.name == "__init__.py" else set())
        edges: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        for imported in imported_names(tree, package, strings=False):
            parts = imported.split(".")
            if parts[0] != top:
                continue
            prefixes = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            found = [p for p in prefixes if shared.path(p) is not None]
            if not found:
                continue
            deepest = found[-1]
            edges.add(deepest)
            edges.update(p for p in found[:-1] if p not in own)
        edges.discard(name)
        graph[name] = edges
    return graph


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph.get(start, ())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _shortest_path(graph: Graph, start: str, goal: str, within: set[str]) -> list[str]:
    previous: dict[str, str] = {}
    frontier, seen = [start], {start}
    while frontier:
        following = []
        for node in frontier:
            if node == goal:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return path[::-1]
            for nxt in sorted(graph[node] & within):
                if nxt not in seen:
                    seen.add(nxt)
                    previous[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"{goal} is not reachable from {start}")  # not one component


def circles(graph: Graph) -> list[str]:
    """Each circle as ``a → b → … → a``: enough shortest ones to cover every import edge that
    lies on a circle, so fixing the listed ones leaves none."""
    named: list[str] = []
    for component in strongly_connected(graph):
        members = set(component)
        covered: set[tuple[str, str]] = set()
        for source in component:
            for target in sorted(graph[source] & members):
                if (source, target) in covered:
                    continue
                cycle = [source, *_shortest_path(graph, target, source, members)]
                covered.update(itertools.pairwise(cycle))
                first = cycle.index(min(cycle[:-1]))  # the same circle reads the same way
                turned = cycle[first:-1] + cycle[:first] + [cycle[first]]
                text = " → ".join(m.removeprefix("colony.") for m in turned)
                if text not in named:
                    named.append(text)
    return named


def test_no_import_circles_in_the_shared_package() -> None:
    found = circles(import_graph(SHARED))
    assert found == [], (
        "import circles in shared/colony (move the shared piece down a layer into a module "
        "both sides import; an import inside a function still counts):\n  " + "\n  ".join(found)
    )


def test_the_check_finds_a_circle_however_it_is_spelled(tmp_path: Path) -> None:
    """Not vacuous: a circle through a function-level import, a relative import and a
    ``from package import module`` is found; one under TYPE_CHECKING, or through the
    importer's own package ``__init__``, is not."""
    pkg = tmp_path / "colony"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from colony.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("from colony.sub.b import B\n")
    (pkg / "sub" / "b.py").write_text("from .c import C\nB = 1\n")
    (pkg / "sub" / "c.py").write_text("from colony import a\nC = 1\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from colony import e\n"
    )
    (pkg / "e.py").write_text("import colony.d\n")
    graph = import_graph(tmp_path)
    assert graph["colony.a"] == {"colony.sub", "colony.sub.b"}
    assert graph["colony.sub.b"] == {"colony.sub.c"}  # not its own package's __init__
    assert circles(graph) == [
        "a → sub → sub.b → sub.c → a",
        "a → sub.b → sub.c → a",
    ]


def test_the_graph_reads_the_whole_package() -> None:
    """Tools count too: a circle in the local demo is still a circle."""
    graph = import_graph(SHARED)
    assert "colony.local.campaign_demo" in graph
    assert "colony.flows.chat.tools" in graph["colony.flows.chat.resume"]
