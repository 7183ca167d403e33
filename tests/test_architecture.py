"""Where SQL may live: only in ``colony.store`` (one repository per aggregate) and
``colony.knowledge`` (the Knowledge Core's own module). Flows, chat, runtime, adapters and the
functions call repositories (docs/architecture.md). The import directions are checked by
``make imports`` (import-linter, ``[tool.importlinter]`` in pyproject.toml). Also: no module is
longer than a person can hold in mind, and the formatter is never switched off."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "shared" / "colony"
ALLOWED = ("store", "knowledge")  # where SQL belongs
TOOLS = ("testing", "local", "deploy", "evals")  # not deployed; they may set up data as they need
SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|SELECT\s+\d|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(TABLE|INDEX)|pg_advisory\w*\(|pg_notify\(|LISTEN\s+\w)",
    re.IGNORECASE | re.DOTALL,
)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings (they may name a table or a statement)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def sql_strings(path: Path, root: Path = REPO) -> list[str]:
    """``path:line`` of every string literal (not a docstring) that holds a SQL statement."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    return [
        f"{path.relative_to(root)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and SQL.search(node.value)
    ]


def deployed_modules() -> list[Path]:
    mains = sorted((REPO / "functions").glob("*/main.py"))
    shared = [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.relative_to(PACKAGE).parts[0] not in (*ALLOWED, *TOOLS)
    ]
    return mains + shared


def test_no_sql_outside_store_and_knowledge() -> None:
    found = [hit for path in deployed_modules() for hit in sql_strings(path)]
    assert found == [], "SQL outside colony.store / colony.knowledge: " + ", ".join(found)


def test_the_check_finds_sql_where_it_is(tmp_path: Path) -> None:
    """The scan is not vacuous: it finds the repositories' statements, and a statement
    written in a flow-shaped module."""
    assert sql_strings(PACKAGE / "store" / "approvals" / "approvals.py")
    probe = tmp_path / "flow.py"
    probe.write_text(
        '"""A flow whose docstring quotes SELECT id FROM approval_items."""\n'
        'Q = """\nSELECT id\n  FROM approval_items WHERE id = %s\n"""\n'
        "def f(cur):\n    cur.execute('UPDATE deals SET stage = %s', ('won',))\n"
    )
    assert sql_strings(probe, root=tmp_path) == ["flow.py:2", "flow.py:7"]  # not the docstring


def model_requests(path: Path, root: Path = REPO) -> list[str]:
    """``path:line`` of every call that builds a ``ModelRequest`` or drives the runner."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        builds = isinstance(func, ast.Name) and func.id == "ModelRequest"
        drives = isinstance(func, ast.Attribute) and "runner" in ast.unparse(func)
        if builds or drives:
            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_flows_reach_a_model_only_through_call_agent(tmp_path: Path) -> None:
    """One path to a model (issue 15 item 2): no flow, the chat turn included, builds its own
    request or drives the runner beside ``colony.llm.agent_call.call_agent``."""
    found = [
        hit for path in sorted((PACKAGE / "flows").rglob("*.py")) for hit in model_requests(path)
    ]
    assert found == [], "model requests built outside call_agent: " + ", ".join(found)
    probe = tmp_path / "flow.py"
    probe.write_text(
        "def f(deps, r, c):\n    req = ModelRequest(model='m')\n    deps.llm.runner.run(req, c)\n"
    )
    assert model_requests(probe, root=tmp_path) == ["flow.py:2", "flow.py:3"]


# Modules a person can hold in mind (issue 32 item 3): none over this many lines; a module
# that grows past it is split by concept (one noun per module), not trimmed.
MAX_MODULE_LINES = 400
# A comment asking the formatter to leave code alone, written so this file does not hold one.
FORMAT_ESCAPE = re.compile(r"#\s*fmt:\s*(skip|off)\b|#\s*yapf:\s*disable")


def module_lengths(paths: list[Path], root: Path = REPO) -> dict[str, int]:
    """``{path: lines}`` of every module in ``paths`` longer than ``MAX_MODULE_LINES``."""
    lengths = {str(p.relative_to(root)): len(p.read_text().splitlines()) for p in paths}
    return {path: n for path, n in sorted(lengths.items()) if n > MAX_MODULE_LINES}


def format_escapes(paths: list[Path], root: Path = REPO) -> list[str]:
    """``path:line`` of every comment that switches the formatter off."""
    return [
        f"{path.relative_to(root)}:{number}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if FORMAT_ESCAPE.search(line)
    ]


def _python(*tops: str) -> list[Path]:
    return sorted(p for top in tops for p in (REPO / top).rglob("*.py"))


def test_no_module_is_over_400_lines() -> None:
    long = module_lengths(_python("shared/colony", "functions"))
    over = [f"{path} ({n} lines)" for path, n in long.items()]
    assert over == [], "split by concept: " + ", ".join(over)


def test_the_formatter_is_never_switched_off() -> None:
    """Code is written so the formatter's layout reads well, rather than frozen by hand."""
    found = format_escapes(_python("shared", "functions", "tests"))
    assert found == [], "write these so the formatter's layout reads well: " + ", ".join(found)


def test_the_size_and_format_checks_find_what_they_look_for(tmp_path: Path) -> None:
    long = tmp_path / "long.py"
    long.write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    short = tmp_path / "short.py"
    short.write_text("x = 1\n" * MAX_MODULE_LINES)
    assert module_lengths([long, short], root=tmp_path) == {"long.py": MAX_MODULE_LINES + 1}
    frozen = tmp_path / "frozen.py"
    frozen.write_text("a = [1,\n  2]  # fmt" + ": skip\n# fmt" + ":off\nb = 2  # formatted\n")
    assert format_escapes([frozen], root=tmp_path) == ["frozen.py:2", "frozen.py:3"]
