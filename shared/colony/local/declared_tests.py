"""What the tests say they verify: the ``tested by`` edges of the knowledge graph.

A test declares the registry ids it exercises with the ``covers`` marker (registered in
``pyproject.toml``), on the test, its class, or the module's ``pytestmark``::

    @pytest.mark.covers("AGT-006", "ENT-006", "KC-09")
    def test_transcript_to_signals_summary_approvals_and_follow_up(...): ...

``declared_tests`` reads the markers from the test sources (``ast``, nothing is imported or
run), so ``colony graph tested-by`` / ``untested`` need no test run. Every use of
``mark.covers`` must be a call with string literals: anything else (a variable, a splat) is
refused with its file and line, so no declaration goes unread. Whether the ids are known is
checked by ``registry.graph.build_graph`` (and so by ``tests/test_graph.py``, in CI).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TypeGuard

from colony.errors import ValidationFailed

REPO = Path(__file__).resolve().parents[3]


def declared_tests(root: Path = REPO) -> dict[str, tuple[str, ...]]:
    """Each test file under ``root/tests`` that declares ids → those ids (sorted, once)."""
    found: dict[str, tuple[str, ...]] = {}
    for path in sorted((root / "tests").rglob("test_*.py")):
        ids = file_declarations(path)
        if ids:
            found[path.relative_to(root).as_posix()] = ids
    return found


def file_declarations(path: Path) -> tuple[str, ...]:
    """The ids one test file's ``covers`` markers name."""
    source = path.read_text()
    if "covers" not in source:  # most files: no need to parse them
        return ()
    nodes = list(ast.walk(ast.parse(source, filename=str(path))))
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call) and _is_covers(n.func)}
    ids: set[str] = set()
    for node in nodes:
        if _is_covers(node) and id(node) not in called:
            raise ValidationFailed(
                f"{path}:{node.lineno}: mark.covers must be called with the ids it covers"
            )
        if not (isinstance(node, ast.Call) and _is_covers(node.func)):
            continue
        where = f"{path}:{node.lineno}"
        if node.keywords or not node.args:
            raise ValidationFailed(f"{where}: mark.covers takes ids only, e.g. covers('AGT-001')")
        for arg in node.args:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                raise ValidationFailed(
                    f"{where}: mark.covers ids must be string literals (read without running)"
                )
            ids.add(arg.value)
    return tuple(sorted(ids))


def _is_covers(node: ast.AST) -> TypeGuard[ast.Attribute]:
    """``<anything>.mark.covers`` (``pytest.mark.covers``, or ``mark.covers`` imported)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "covers"
        and isinstance(node.value, ast.Attribute | ast.Name)
        and (node.value.attr if isinstance(node.value, ast.Attribute) else node.value.id) == "mark"
    )
