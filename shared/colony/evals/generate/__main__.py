"""``python -m colony.evals.generate``: write ``sets/generated/<agent>.jsonl`` from the
generators (``--check``: write nothing, exit 1 when a file differs from what they give, so a
hand edit of a generated file or a generator change not run is caught)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from colony.evals.cases import SETS, Case, write
from colony.evals.generate import brief, calls, chat, content, enrichment, outbound, qualification

GENERATORS: tuple[Callable[[], list[Case]], ...] = (
    chat.cases,
    enrichment.cases,
    qualification.cases,
    outbound.cases,
    calls.cases,
    content.cases,
    brief.cases,
)


def generated() -> dict[str, list[Case]]:
    """Agent → its generated cases, in the generators' order."""
    by_agent: dict[str, list[Case]] = {}
    for make in GENERATORS:
        for case in make():
            by_agent.setdefault(case.agent, []).append(case)
    return by_agent


def write_all(root: Path) -> list[Path]:
    paths = []
    for agent, cases in generated().items():
        path = root / "generated" / f"{agent}.jsonl"
        write(path, cases)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m colony.evals.generate", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    if not args.check:
        for path in write_all(SETS):
            print(f"wrote {path.relative_to(SETS.parent)}")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        stale = [
            p.name
            for p in write_all(Path(scratch))
            if not (SETS / "generated" / p.name).exists()
            or (SETS / "generated" / p.name).read_bytes() != p.read_bytes()
        ]
    if stale:
        print(f"out of date: {', '.join(stale)} (run python -m colony.evals.generate)")
        return 1
    print("the generated sets are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
