"""Function-level imports in deployed code say why they are lazy (issue 13 item 3).

An import inside a function hides an edge from a reader (import-linter and the bundle builder
still see it). One stays only where cold start needs it, e.g. a vendor SDK built on first use
or a flow loaded on the first request, and then it says so: a comment starting ``# lazy:`` on
its line or the line just above. A block of consecutive imports may share the one reason
heading it. Imports under ``if TYPE_CHECKING:`` are not executed and are exempt. A cycle is
no reason: the import still counts (``tests/test_import_circles.py``), so a circle is removed
by moving the piece both sides share down a layer.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "shared" / "colony"
TOOLS = ("testing", "local", "deploy", "evals")  # never deployed; free to import as they like
REASON = re.compile(r"#\s*lazy:\s*\S")

Import = ast.Import | ast.ImportFrom


def _type_checking(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nested_bodies(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists directly inside ``node`` (a function's body, an if's branches…)."""
    bodies = []
    for field in ("body", "orelse", "finalbody"):
        value = getattr(node, field, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            bodies.append(value)
    bodies += [h.body for h in getattr(node, "handlers", ())]
    bodies += [c.body for c in getattr(node, "cases", ())]
    return bodies


def _lazy_runs(body: list[ast.stmt], in_function: bool) -> list[list[Import]]:
    """Runs of consecutive imports in a function (nested anywhere under one), per body."""
    runs: list[list[Import]] = []
    run: list[Import] = []
    for stmt in body:
        if in_function and isinstance(stmt, Import):
            if run and stmt.lineno != (run[-1].end_lineno or run[-1].lineno) + 1:
                runs.append(run)
                run = []
            run.append(stmt)
            continue
        if run:
            runs.append(run)
            run = []
        if isinstance(stmt, ast.If) and _type_checking(stmt):
            runs += _lazy_runs(stmt.orelse, in_function)  # the body is never executed
            continue
        inner = in_function or isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
        for nested in _nested_bodies(stmt):
            runs += _lazy_runs(nested, inner)
    if run:
        runs.append(run)
    return runs


def unexplained(path: Path, root: Path = REPO) -> list[str]:
    """``path:line`` of each function-level import with no ``# lazy:`` reason."""
    source = path.read_text()
    lines = source.splitlines()

    def reasoned(lineno: int) -> bool:
        """A reason on the line itself or in the comment lines just above it."""
        if REASON.search(lines[lineno - 1]):
            return True
        above = lineno - 2
        while above >= 0 and lines[above].strip().startswith("#"):
            if REASON.search(lines[above]):
                return True
            above -= 1
        return False

    found = []
    for run in _lazy_runs(ast.parse(source, str(path)).body, in_function=False):
        if reasoned(run[0].lineno):
            continue  # the reason heads the block
        found += [
            f"{path.relative_to(root)}:{imp.lineno}" for imp in run if not reasoned(imp.lineno)
        ]
    return found


def deployed_modules() -> list[Path]:
    mains = sorted((REPO / "functions").glob("*/main.py"))
    shared = [
        p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in TOOLS
    ]
    return mains + shared


def test_every_function_level_import_says_why_it_is_lazy() -> None:
    found = [hit for path in deployed_modules() for hit in unexplained(path)]
    assert found == [], (
        "function-level imports without a '# lazy: <reason>' comment (hoist them to module "
        "level, or say why cold start needs them here): " + ", ".join(found)
    )


def test_the_scan_flags_an_unexplained_lazy_import(tmp_path: Path) -> None:
    """The scan is not vacuous: it flags bare function-level imports (nested ones too) and
    accepts a reason on the line, in the comment just above it, or heading a block;
    TYPE_CHECKING is exempt."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"  # 1
        "import json\n"  # 2: module level
        "if TYPE_CHECKING:\n"  # 3
        "    from decimal import Decimal\n"  # 4: exempt
        "def bare():\n"  # 5
        "    import csv\n"  # 6: flagged
        "    if True:\n"  # 7
        "        from os import path\n"  # 8: flagged, nested
        "def reasoned():\n"  # 9
        "    import csv  # lazy: a probe reason on the line\n"  # 10
        "    # lazy: a probe reason above, heading a block\n"  # 11
        "    import decimal\n"  # 12
        "    from os import (\n"  # 13
        "        path,\n"  # 14
        "    )\n"  # 15
        "    import fractions\n"  # 16: same block
        "    x = 1\n"  # 17
        "    import uuid\n"  # 18: flagged, a new block
        "class C:\n"  # 19
        "    def m(self):\n"  # 20
        "        import glob\n"  # 21: flagged, in a method
        "def wrapped():\n"  # 22
        "    # lazy: a probe reason wrapped\n"  # 23
        "    #   over two comment lines\n"  # 24
        "    import shlex\n"  # 25
        "    if TYPE_CHECKING:\n"  # 26
        "        import types\n"  # 27: exempt
    )
    assert unexplained(probe, root=tmp_path) == [
        "probe.py:6",
        "probe.py:8",
        "probe.py:18",
        "probe.py:21",
    ]


def test_the_scan_reads_the_deployed_tree() -> None:
    """It walks the functions' entry points and the shared package, not the tools."""
    names = {p.relative_to(REPO).as_posix() for p in deployed_modules()}
    assert "functions/chat/main.py" in names
    assert "shared/colony/adapters/openai_chat.py" in names
    assert not any(n.startswith("shared/colony/local/") for n in names)
