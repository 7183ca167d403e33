"""Cold-start benchmark over the built bundles: import time of each function vs hello-world.

Each measurement is a fresh interpreter loading ``build/functions/<name>/main.py`` from inside
its bundle (the bundle's own ``colony`` copy first on ``sys.path``, as deployed) the way
functions-framework does (``spec_from_file_location`` + ``exec_module``), median of
``--runs``, interleaved with the same for a hello-world functions-framework bundle so both
see the same machine load. Also reported: the import time when the function's flow modules
are loaded too (what the first request pays), and each bundle's installed size (its files
plus the installed distributions its requirements.txt pins) next to hello-world's.
Builds the bundles first if ``--bundles`` has none (``make package``). Prints one JSON line.

    python bench/cold_start.py [--runs 7] [--bundles build/functions]
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
import importlib.util, os, sys, time
sys.path.insert(0, os.getcwd())
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
    "campaign": ["colony.flows.campaigns.campaign"],
    "enrichment": ["colony.flows.handlers"],
    "qualification": ["colony.flows.handlers"],
    "message-generator": ["colony.flows.handlers"],
    "campaign-resume": ["colony.flows.campaigns.campaign", "colony.runtime.auth"],
    "approval": ["colony.flows.approvals.approval", "colony.runtime.approvals"],
    "delivery-events": ["colony.flows.outbound.delivery", "colony.runtime.approvals"],
    "recording-intelligence": ["colony.flows.handlers"],
    "follow-up": ["colony.flows.handlers"],
    "content": ["colony.flows.handlers"],
    "onboarding": ["colony.flows.handlers"],
    "daily-brief": ["colony.flows.insights.brief", "colony.runtime.auth"],
}


def probe(main: Path, extra: list[str]) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-I", "-c", PROBE, str(main), *extra],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(main.parent),
    )
    module, total = out.stdout.split()
    return float(module) * 1000, float(total) * 1000


def installed_bytes(requirements: list[str]) -> int:
    """Bytes the pinned distributions occupy installed (read from this environment)."""
    from importlib import metadata

    total = 0
    for line in requirements:
        name = line.split("==")[0]
        dist = metadata.distribution(name)
        for file in dist.files or ():
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
    return total


def bundle_bytes(directory: Path) -> int:
    lines = (directory / "requirements.txt").read_text().splitlines()
    files = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    return files + installed_bytes([x for x in lines if x and not x.startswith("#")])


def hello_bundle(directory: Path) -> Path:
    """A hello-world bundle: main.py and functions-framework's pinned closure."""
    sys.path.insert(0, str(REPO / "shared"))
    from colony.deploy.imports import Distributions, ImportGraph, read_pins, requirements

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "main.py").write_text(HELLO)
    graph = ImportGraph(frozenset(), frozenset({"functions_framework"}))
    lines = requirements(graph, Distributions(), read_pins(REPO / "constraints.txt"))
    (directory / "requirements.txt").write_text("".join(f"{x}\n" for x in lines))
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--bundles", type=Path, default=REPO / "build" / "functions")
    args = parser.parse_args()
    if not any(args.bundles.glob("*/main.py")):
        subprocess.run(
            [sys.executable, "-m", "colony.deploy", "package", "--out", str(args.bundles)],
            check=True,
            cwd=str(REPO / "shared"),
            stdout=subprocess.DEVNULL,
        )
    names = sorted(p.name for p in args.bundles.iterdir() if (p / "main.py").exists())
    with tempfile.TemporaryDirectory() as tmp:
        hello_dir = hello_bundle(Path(tmp) / "hello")
        hello = hello_dir / "main.py"
        hello_ms: list[float] = []
        modules: dict[str, list[float]] = {n: [] for n in names}
        firsts: dict[str, list[float]] = {n: [] for n in names}
        for _ in range(args.runs):
            hello_ms.append(probe(hello, [])[0])
            for name in names:
                module, first = probe(args.bundles / name / "main.py", FLOWS.get(name, []))
                modules[name].append(module)
                firsts[name].append(first)
        hello_mb = bundle_bytes(hello_dir) / 2**20
    base = statistics.median(hello_ms)
    report = {
        name: {
            "import_ms": round(statistics.median(modules[name]), 1),
            "ratio": round(statistics.median(modules[name]) / base, 3),
            "with_flows_ms": round(statistics.median(firsts[name]), 1),
            "installed_mb": round(bundle_bytes(args.bundles / name) / 2**20, 1),
        }
        for name in names
    }
    print(
        json.dumps(
            {
                "bench": "cold_start",
                "runs": args.runs,
                "bundles": str(args.bundles),
                "hello_world_ms": round(base, 1),
                "hello_world_installed_mb": round(hello_mb, 1),
                "functions": report,
                "max_ratio": max(r["ratio"] for r in report.values()),
                "max_installed_mb": max(r["installed_mb"] for r in report.values()),
            }
        )
    )


if __name__ == "__main__":
    main()
