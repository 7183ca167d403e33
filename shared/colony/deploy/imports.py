"""What a function can import: the static import graph from its ``main.py`` through the shared
package, and the pinned distributions that provide the third-party part.

Every ``import`` counts, including the lazy ones inside functions (that is where the SDKs are
imported, to keep cold starts small), except under ``if TYPE_CHECKING:``. A string constant
naming a ``colony.`` module (``"colony.flows.x:apply"``, loaded with importlib) is an edge
too. Local-only and build-time packages (``colony.local``, ``colony.testing``,
``colony.deploy``) are never followed: a deployed bundle does not contain them.

The result over-approximates what one request imports; that is the point: a requirement is
missing only if the code has no import statement for it.

Files a module reads from another distribution at run time (without importing it) are
declared in a module-level literal ``RUNTIME_DATA = (("distribution", "path"), ...)``
(``colony.data_files``); the graph collects them so the bundle can carry them.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from colony.errors import ConfigError

EXCLUDED = ("colony.local", "colony.testing", "colony.deploy")
_MODULE_STRING = re.compile(r"^(colony(?:\.[a-z_][a-z0-9_]*)+)(?::[A-Za-z_][A-Za-z0-9_]*)?$")


def excluded(module: str) -> bool:
    return any(module == e or module.startswith(e + ".") for e in EXCLUDED)


@dataclass(frozen=True, slots=True)
class ImportGraph:
    modules: frozenset[str]  # colony modules the function can load
    external: frozenset[str]  # third-party dotted import names
    data: frozenset[tuple[str, str]] = frozenset()  # (distribution, path) read at run time


def runtime_data(tree: ast.Module, where: str) -> set[tuple[str, str]]:
    """The ``(distribution, path)`` pairs a module declares in ``RUNTIME_DATA``."""
    found: set[tuple[str, str]] = set()
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not any(
            isinstance(t, ast.Name) and t.id == "RUNTIME_DATA" for t in node.targets
        ):
            continue
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            raise ConfigError(f"{where}: RUNTIME_DATA must be a literal tuple") from None
        if not isinstance(value, tuple) or not all(
            isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
            for pair in value
        ):
            raise ConfigError(f"{where}: RUNTIME_DATA must hold (distribution, path) pairs")
        found.update(value)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(tree: ast.AST, package: str, *, strings: bool = True) -> Iterable[str]:
    """Dotted names imported anywhere in ``tree`` (``from a import b`` yields ``a.b``), and
    with ``strings`` the ``colony.`` modules string constants name."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:  # a.b.c resolves to a.b when c is not a module
                yield base if alias.name == "*" else f"{base}.{alias.name}"
        elif strings and isinstance(node, ast.Constant) and isinstance(node.value, str):
            found = _MODULE_STRING.match(node.value)
            if found:
                yield found.group(1)
        stack.extend(ast.iter_child_nodes(node))


class SharedPackage:
    """The ``colony`` package on disk: module name ↔ file."""

    def __init__(self, root: Path) -> None:
        self.root = root  # the folder that contains colony/
        self._scanned: dict[tuple[str, Path], tuple[tuple[str, ...], set[tuple[str, str]]]] = {}

    def scan(self, name: str, path: Path) -> tuple[tuple[str, ...], set[tuple[str, str]]]:
        """What module ``name`` (at ``path``) imports, and the runtime data it declares.

        Remembered per instance: the twenty functions share most of their modules, so
        packaging them all parses each file once instead of once per function."""
        key = (name, path)
        if key not in self._scanned:
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            tree = ast.parse(path.read_text(), str(path))
            self._scanned[key] = (
                tuple(imported_names(tree, package)),
                runtime_data(tree, str(path)),
            )
        return self._scanned[key]

    def path(self, module: str) -> Path | None:
        base = self.root.joinpath(*module.split("."))
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    def is_package(self, module: str) -> bool:
        path = self.path(module)
        return path is not None and path.name == "__init__.py"


def import_graph(main: Path, shared: SharedPackage) -> ImportGraph:
    """Follow ``main``'s imports through the shared package."""
    modules: set[str] = set()
    external: set[str] = set()
    data: set[tuple[str, str]] = set()
    pending: list[tuple[str, Path]] = [("main", main)]
    while pending:
        name, path = pending.pop()
        imports, declared = shared.scan(name, path)
        data |= declared
        for imported in imports:
            top = imported.partition(".")[0]
            if not imported or top in sys.stdlib_module_names or top == "__future__":
                continue
            if top != "colony":
                external.add(imported)
                continue
            if excluded(imported):
                continue
            parts = imported.split(".")
            for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
                module = ".".join(parts[:i])
                found = shared.path(module)
                if found is not None and module not in modules:
                    modules.add(module)
                    pending.append((module, found))
    return ImportGraph(frozenset(modules), frozenset(external), frozenset(data))


class Distributions:
    """Which installed distribution provides an import name, and what each one requires.

    Read from the build environment's metadata (installed from constraints.txt, so the
    versions there are the pinned ones)."""

    def __init__(self) -> None:
        self._owners: dict[str, set[str]] = {}  # dotted module prefix → distributions
        self._dists: dict[str, metadata.Distribution] = {}
        for dist in metadata.distributions():
            key = canonicalize_name(dist.metadata["Name"])
            if key in self._dists or key == "colony":
                continue
            self._dists[key] = dist
            for file in dist.files or ():
                parts = list(Path(str(file)).parts)
                if not parts or parts[0].endswith((".dist-info", ".data")) or ".." in parts:
                    continue
                parts[-1] = parts[-1].split(".")[0]  # module.py, module.cpython-311-x.so
                for i in range(1, len(parts) + 1):
                    self._owners.setdefault(".".join(parts[:i]), set()).add(key)

    def provider(self, imported: str) -> str:
        """The distribution owning the longest prefix of ``imported`` that only one owns
        (``google.cloud`` is a namespace many share; ``google.cloud.pubsub_v1`` is not)."""
        parts = imported.split(".")
        for i in range(len(parts), 0, -1):
            owners = self._owners.get(".".join(parts[:i]), set())
            if len(owners) == 1:
                return next(iter(owners))
        raise ConfigError(f"no single installed distribution provides {imported!r}")

    def closure(self, roots: Iterable[str]) -> set[str]:
        """``roots`` and everything they require (markers evaluated for this interpreter)."""
        seen: set[str] = set()
        pending: list[tuple[str, frozenset[str]]] = [(r, frozenset()) for r in roots]
        env = {k: str(v) for k, v in default_environment().items()}
        while pending:
            name, extras = pending.pop()
            key = canonicalize_name(name)
            dist = self._dists.get(key)
            if dist is None:
                raise ConfigError(f"{name!r} is required but not installed in the build env")
            seen.add(key)
            for text in dist.requires or ():
                req = Requirement(text)
                wanted: list[dict[str, str]] = [{**env, "extra": e} for e in ("", *extras)]
                if req.marker is not None and not any(req.marker.evaluate(w) for w in wanted):
                    continue
                child = canonicalize_name(req.name)
                if child not in seen or req.extras:
                    pending.append((child, frozenset(req.extras)))
                    seen.add(child)
        return seen


def read_pins(constraints: Path) -> dict[str, tuple[str, str]]:
    """``constraints.txt`` → canonical name → (name as written, version)."""
    pins: dict[str, tuple[str, str]] = {}
    for line in constraints.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise ConfigError(f"{constraints}: {line!r} is not pinned with ==")
        pins[canonicalize_name(name.split("[")[0])] = (name.strip(), version.strip())
    return pins


def requirements(
    graph: ImportGraph, dists: Distributions, pins: dict[str, tuple[str, str]]
) -> list[str]:
    """The pinned requirement lines (sorted) for a function's import graph."""
    direct = {dists.provider(name) for name in graph.external}
    lines = []
    for key in sorted(dists.closure(direct)):
        if key not in pins:
            raise ConfigError(f"{key!r} is needed by a function but not pinned in constraints.txt")
        name, version = pins[key]
        lines.append(f"{name}=={version}")
    return lines
