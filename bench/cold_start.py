"""Cold-start benchmark: import time of each function's module vs a hello-world function.

Each measurement is a fresh interpreter loading ``functions/<name>/main.py`` the way
functions-framework does (``spec_from_file_location`` + ``exec_module``), median of
``--runs``, interleaved with the same for a hello-world functions-framework function so both
see the same machine load. Also reported: the import time when the function's flow modules
are loaded too (what the first request pays). Prints one JSON line.

    python bench/cold_start.py [--runs 7] [--functions-dir functions]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELLO = """import functions_framework


@functions_framework.http
def handle(request):
    return "hello"
"""
PROBE = """
import importlib.util, sys, time
started = time.perf_counter()
spec = importlib.util.spec_from_file_location("main", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
loaded = time.perf_counter()
if len(sys.argv) > 2:
    for name in sys.argv[2:]:
        __import__(name)
print(loaded - started, time.perf_counter() - started)
"""
FLOWS = {
    "campaign": ["colony.flows.handlers"],
    "enrichment": ["colony.flows.handlers"],
    "qualification": ["colony.flows.handlers"],
    "message-generator": ["colony.flows.handlers"],
    "campaign-resume": ["colony.flows.campaign", "colony.runtime.auth"],
    "approval": ["colony.flows.approval", "colony.runtime.approvals"],
    "delivery-events": ["colony.flows.delivery", "colony.runtime.approvals"],
}


def probe(main: Path, extra: list[str]) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(main), *extra],
        check=True, capture_output=True, text=True, cwd=str(REPO),
    )  # fmt: skip
    module, total = out.stdout.split()
    return float(module) * 1000, float(total) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--functions-dir", type=Path, default=REPO / "functions")
    args = parser.parse_args()
    names = sorted(p.name for p in args.functions_dir.iterdir() if (p / "main.py").exists())
    with tempfile.TemporaryDirectory() as tmp:
        hello = Path(tmp) / "main.py"
        hello.write_text(HELLO)
        hello_ms: list[float] = []
        modules: dict[str, list[float]] = {n: [] for n in names}
        firsts: dict[str, list[float]] = {n: [] for n in names}
        for _ in range(args.runs):
            hello_ms.append(probe(hello, [])[0])
            for name in names:
                module, first = probe(args.functions_dir / name / "main.py", FLOWS.get(name, []))
                modules[name].append(module)
                firsts[name].append(first)
    base = statistics.median(hello_ms)
    report = {
        name: {
            "import_ms": round(statistics.median(modules[name]), 1),
            "ratio": round(statistics.median(modules[name]) / base, 3),
            "with_flows_ms": round(statistics.median(firsts[name]), 1),
        }
        for name in names
    }
    print(
        json.dumps(
            {
                "bench": "cold_start",
                "runs": args.runs,
                "hello_world_ms": round(base, 1),
                "functions": report,
                "max_ratio": max(r["ratio"] for r in report.values()),
            }
        )
    )


if __name__ == "__main__":
    main()
