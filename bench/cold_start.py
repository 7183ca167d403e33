"""Cold-start benchmark over the built bundles: each function's start and first request vs
hello-world.

Each measurement is a fresh interpreter in the function's bundle (its own ``colony`` copy
first on ``sys.path``, as deployed), run by a virtualenv holding exactly the bundle's
requirements.txt, as Cloud Functions installs it (made once per requirements set, kept under
``--venvs``: a package the development environment has and no bundle carries changes what
imports cost; httpx imports rich for its command line when it can). The environment is a
deployed function's (``COLONY_ENV=production``, Cloud Run's ``K_SERVICE`` and ``K_REVISION``,
the Cloud SQL DSN with ``sslmode=verify-ca``, the Pub/Sub and Cloud Tasks transport, an
OpenAI deployment) with endpoints where nothing listens. Median of ``--runs``, interleaved
with a hello-world functions-framework bundle so both see the same machine load. Three
times, cumulative, and a floor, each over hello-world's import as a ratio:

- ``import_ms``: ``main.py`` loaded the way functions-framework loads it
  (``spec_from_file_location`` + ``exec_module``): what the instance pays before it listens.
- ``with_flows_ms``: that plus what the function's first request runs before its first
  network call, run for real rather than listed by hand: the edge's check of an internal
  caller (``require_invoker`` on a malformed token: it loads the OIDC verifier and refuses
  it), a Pub/Sub function's push of a valid event decoded (pydantic and that kind's model;
  ``EVENTS`` holds one event of each kind a function's topic carries), the composition
  root (``deps(parts)`` as ``main.py`` names it: settings, the pool and its TLS context, the
  transport, the builders of the function's parts), and every module ``main.py`` imports
  inside its functions on the path the request takes (read from its source: the flows its
  requests load on first use). A handler whose requests take different paths (an ``if``
  that returns: data-lifecycle's tasks, delivery-events' webhook and unsubscribe page; each
  kind of event a Pub/Sub function receives) is measured once per path and charged its
  costliest (``paths`` counts them): a first request
  takes one path, and the union of all of them is no request at all. This is the number
  the issue's target judges (``with_flows_ratio`` at most 2). The chat function's first
  request is its page (its routes load when the instance starts; its composition builds
  the model, the Knowledge Core and the appliers when a turn or a decision first uses
  them); a first turn adds the model below.
- ``with_vendors_ms``: that plus the vendors' clients a first request builds when it calls
  them: Sentry initialised (every deployment sets ``SENTRY_DSN``) and each part the function
  is composed with (the model client, traced by Langfuse where the registry grants its keys;
  the embedder; the bucket; the mail client). Reported, not judged: the SDKs (openai alone
  costs over three hello-worlds, langfuse two) are the price of calling that vendor at all,
  the same for every function that calls it, which its own code can only avoid by not
  calling it, and judging them would hide a regression in our code behind them. A model
  function's first event does call the model, so its first request really pays
  ``with_vendors_ms``.
- ``floor_ms``: the third-party modules that first request loaded (functions-framework,
  pydantic, pg8000, cryptography… in the order they were loaded), imported alone in a fresh
  interpreter of the same bundle: none of our code, none of the work it asks of them. What
  ``with_flows_ms`` cannot go below while the request uses those libraries; the difference
  is ours (our modules and what they run: settings, validators built, the pool's TLS
  context). Reported, not judged.

Not in any column, because it cannot run without the network: what the clients of Google's
REST APIs cost on first use (google-auth, requests and a TLS context, some 60 ms of CPU: the
Secret Manager read of a deployed function's settings, the first publish or task), the
fetch of Google's or Clerk's signing keys, the database connection, the model call itself.

``--clock cpu`` times the same steps in the probe's CPU time instead of wall-clock time.
On a machine others share, wall-clock time also counts the waits for a core, which do not
stretch a short hello-world and a long first request alike. With four other sessions on two
cores, a function's ratio moved between two seven-run benches by 0.23 on average (at most
0.64) on the wall clock at a load of 1 to 5, by 0.8 (at most 2.1) at a load of 10, and by
0.10 (at most 0.27) on the CPU clock at either. The JSON line names its clock.

Also reported: each bundle's installed size (its files plus the installed distributions its
requirements.txt pins) next to hello-world's. Builds the bundles first if ``--bundles`` has
none (``make package``). Prints one JSON line.

    python bench/cold_start.py [--runs 7] [--clock wall|cpu] [--bundles build/functions]
        [--venvs build/venvs] [names...]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
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
# argv: main.py, then a JSON plan ({} for hello-world). Prints the three cumulative times.
PROBE = """
import dataclasses, importlib, importlib.util, json, os, sys, time
sys.path.insert(0, os.getcwd())
plan = json.loads(sys.argv[2])
started = time.perf_counter()
spec = importlib.util.spec_from_file_location("main", sys.argv[1])
main = importlib.util.module_from_spec(spec)
spec.loader.exec_module(main)
loaded = time.perf_counter()
if plan:
    parts = getattr(main, "parts", None)
    d = main.deps(parts) if parts is not None else main.deps()
    if not plan["public"]:  # the edge's check (main.py already loaded the module)
        from colony.errors import Unauthorized
        from colony.runtime.edge.invoker import require_invoker

        try:
            require_invoker(plan["name"], {"Authorization": "Bearer not.a.token"}, d.settings)
        except Unauthorized:
            pass
    if plan["event"] is not None:
        import base64
        from colony.runtime.edge.pubsub import decode_push

        data = base64.b64encode(json.dumps(plan["event"]).encode()).decode()
        push = {"message": {"messageId": "1", "data": data}}
        problem = decode_push(type("CloudEvent", (), {"data": push})()).problem
        if problem is not None:  # a rejection is not a first request: the sample is wrong
            raise SystemExit(f"the bench's {plan['event']['kind']} event: {problem}")
    for name in plan["flows"]:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as error:  # ``from a import b``: b is not a module
            if error.name != name:
                raise
            importlib.import_module(name.rpartition(".")[0])
first = time.perf_counter()
third = [m for m in sys.modules if m != "main" and m.partition(".")[0] != "colony"]
if plan:
    from colony.observability.sentry import init_sentry

    init_sentry(dataclasses.replace(d.settings, sentry_dsn="http://key@127.0.0.1:9/1"))
    for part in ("llm", "knowledge", "blobs", "sender", "inbound"):
        if getattr(d.parts, part, None) is not None:
            getattr(d, part)
vendors = time.perf_counter()
print(loaded - started, first - started, vendors - started)
print(json.dumps(third), flush=True)
os._exit(0)  # no atexit flush of the vendors' clients towards their dead endpoints
"""
# argv: a JSON list of modules, imported in that order. Prints the time it took.
FLOOR = """
import importlib, json, sys, time
modules = json.loads(sys.argv[1])
started = time.perf_counter()
for name in modules:
    try:
        importlib.import_module(name)
    except Exception:  # one only its parent can load (the parent did) or another platform's
        pass
print(time.perf_counter() - started, flush=True)
"""
DEAD = "127.0.0.1:9"  # nothing listens: no measured step may reach the network
_ENVELOPE = {
    "parent_run_id": "r-1",
    "downstream_agent": "qualification",
    "entity_ids": ["p-1"],
    "angle": "Signal",
    "tier": "T1",
    "kc_bucket_hints": ["KC-02"],
}
_ORG = {"org_id": "org-bench"}
# What each Pub/Sub function's topic carries (``colony.contracts.events``), one valid event
# per kind: a first delivery is decoded against its own kind's model, so each kind is a path.
EVENTS: dict[str, list[dict[str, object]]] = {
    "campaign": [
        {"kind": "campaign.start", **_ORG, "campaign_id": "c-1", "run_id": "r-1"},
        {"kind": "campaign.resume", **_ORG, "campaign_id": "c-1", "run_id": "r-1"},
    ],
    "enrichment": [{"kind": "handoff", **_ORG, "campaign_id": "c-1", "envelope": _ENVELOPE}],
    "qualification": [{"kind": "handoff", **_ORG, "campaign_id": "c-1", "envelope": _ENVELOPE}],
    "message-generator": [
        {"kind": "handoff", **_ORG, "campaign_id": "c-1", "envelope": _ENVELOPE},
        {"kind": "sequence.step", **_ORG, "campaign_id": "c-1", "contact_id": "p-1", "step": 2},
    ],
    "recording-intelligence": [{"kind": "recording.received", **_ORG, "recording_id": "rec-1"}],
    "follow-up": [{"kind": "recording.processed", **_ORG, "recording_id": "rec-1"}],
    "content": [
        {
            "kind": "content.request",
            **_ORG,
            "request_id": "q-1",
            "topic": "why consolidating offices pays",
            "format": "blog_post",
        }
    ],
    "onboarding": [{"kind": "deal.closed_won", **_ORG, "deal_id": "d-1"}],
}


def production_env(name: str, secrets: tuple[str, ...]) -> dict[str, str]:
    """What terraform gives a deployed function (terraform/functions.tf), with credentials
    that are never used and endpoints where nothing listens."""
    import certifi

    pem = Path(certifi.where()).read_text()
    end = "-----END CERTIFICATE-----"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "K_SERVICE": name,
        "K_REVISION": f"{name}-00001-bench",
        "COLONY_ENV": "production",
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": f"postgresql://colony_app@{DEAD}/colony?sslmode=verify-ca",
        "COLONY_DB_SSL_ROOT_CERT": pem[pem.index("-----BEGIN") : pem.index(end) + len(end)],
        "COLONY_DB_PASSWORD": "bench",
        "COLONY_TRANSPORT": "gcp",
        "COLONY_GCP_PROJECT": "bench",
        "COLONY_FUNCTION_URLS": json.dumps({name: f"https://{name}.bench.invalid"}),
        "COLONY_INVOKER_SERVICE_ACCOUNT": "colony-invoker@bench.iam.gserviceaccount.com",
        "COLONY_LLM_PROVIDER": "openai",
        "COLONY_EMBEDDING_PROVIDER": "openai",
        "OPENAI_API_KEY": "sk-bench",
        "COLONY_OPENAI_BASE_URL": f"http://{DEAD}/v1",
        "COLONY_SMTP_HOST": DEAD.split(":")[0],
        "COLONY_SMTP_PORT": DEAD.split(":")[1],
    }
    if "LANGFUSE_SECRET_KEY" in secrets:
        env |= {
            "LANGFUSE_PUBLIC_KEY": "pk-bench",
            "LANGFUSE_SECRET_KEY": "sk-bench",
            "LANGFUSE_HOST": f"http://{DEAD}",
        }
    return env


def _ends(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return | ast.Raise)


def request_paths(main: Path) -> list[list[str]]:
    """What ``main.py`` imports inside its functions, per path a request can take through its
    handler: the flows each path loads.

    The handler's statements are read in order; an ``if`` whose body returns or raises is a
    path of its own (what was imported before it, and its body's imports, with those of the
    helpers of ``main.py`` it calls); the rest falls through to the next. Imports anywhere
    else (a loop, a ``with``, a branch that does not end) count on every path from there."""
    sys.path.insert(0, str(REPO / "shared"))
    from colony.deploy.imports import imported_names

    tree = ast.parse(main.read_text(), str(main))
    helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def loads(node: ast.AST, seen: frozenset[str] = frozenset()) -> set[str]:
        found = set(imported_names(node, "main", strings=False))
        for call in ast.walk(node):
            name = getattr(getattr(call, "func", None), "id", None)
            if isinstance(call, ast.Call) and name in helpers and name not in seen:
                found |= loads(helpers[name], seen | {name})
        return found

    paths: list[set[str]] = []
    handlers = [f for f in helpers.values() if f.decorator_list]  # functions_framework's
    for handler in handlers:
        common: set[str] = set()
        for stmt in handler.body:
            if isinstance(stmt, ast.If) and _ends(stmt.body):
                paths.append(common | loads(ast.Module(body=stmt.body, type_ignores=[])))
                common |= loads(ast.Module(body=stmt.orelse, type_ignores=[]))
            else:
                common |= loads(stmt)
            if isinstance(stmt, ast.Return | ast.Raise):
                break
        paths.append(common)
    # a path that loads a part of what another loads cannot cost more: measure the others
    distinct = list(dict.fromkeys(frozenset(p) for p in paths))
    return [sorted(p) for p in distinct if not any(p < q for q in distinct)] or [[]]


def plan(directory: Path) -> tuple[list[dict[str, object]], dict[str, str]]:
    """What the probe runs for the function in ``directory``, one plan per request path,
    and its environment."""
    from colony.registry.functions import FUNCTIONS

    spec = FUNCTIONS[directory.name]
    events = EVENTS[spec.name] if spec.trigger == "pubsub" else [None]
    steps = [
        {"name": spec.name, "public": spec.public, "event": event, "flows": flows}
        for flows in request_paths(directory / "main.py")
        for event in events
    ]
    return steps, production_env(spec.name, spec.secrets)


def bundle_python(directory: Path, venvs: Path) -> Path:
    """The python of a virtualenv holding exactly ``directory``'s requirements.txt (pinned,
    no dependencies resolved: the file is the whole closure), made on first use."""
    lines = sorted(
        x for x in (directory / "requirements.txt").read_text().splitlines() if x and x[0] != "#"
    )
    venv = venvs / hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    python = venv / "bin" / "python"
    if (venv / "installed").exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(python)]
    wanted = venv / "requirements.txt"
    wanted.write_text("".join(f"{x}\n" for x in lines))
    install = [*pip, "install", "--quiet", "--no-deps", "-r", str(wanted)]
    done = subprocess.run(install, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"installing {wanted} failed:\n{done.stderr}")
    (venv / "installed").write_text("")
    return python


CLOCKS = {"wall": "time.perf_counter", "cpu": "time.process_time"}


def probe(
    python: Path, main: Path, steps: dict[str, object], env: dict[str, str], clock: str = "wall"
) -> tuple[tuple[float, ...], list[str]]:
    """The probe's three cumulative times in ms (for hello-world, ``steps`` is empty), and
    the third-party modules loaded by the end of the first request."""
    script = PROBE.replace("time.perf_counter", CLOCKS[clock])
    out = subprocess.run(
        [str(python), "-I", "-c", script, str(main), json.dumps(steps)],
        capture_output=True,
        text=True,
        cwd=str(main.parent),
        env=env,
    )
    if out.returncode:
        raise SystemExit(f"the probe of {main.parent.name} failed:\n{out.stderr}")
    times, modules = out.stdout.splitlines()
    return tuple(float(x) * 1000 for x in times.split()), json.loads(modules)


def floor(
    python: Path, main: Path, modules: list[str], env: dict[str, str], clock: str = "wall"
) -> float:
    """ms to import ``modules`` alone, in a fresh interpreter of the function's bundle."""
    script = FLOOR.replace("time.perf_counter", CLOCKS[clock])
    out = subprocess.run(
        [str(python), "-I", "-c", script, json.dumps(modules)],
        capture_output=True,
        text=True,
        cwd=str(main.parent),
        env=env,
        check=True,
    )
    return float(out.stdout) * 1000


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
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--bundles", type=Path, default=REPO / "build" / "functions")
    parser.add_argument("--venvs", type=Path, default=REPO / "build" / "venvs")
    parser.add_argument("names", nargs="*", help="functions to measure (default: all)")
    args = parser.parse_args()
    args.bundles = args.bundles.resolve()
    if not any(args.bundles.glob("*/main.py")):
        subprocess.run(
            [sys.executable, "-m", "colony.deploy", "package", "--out", str(args.bundles)],
            check=True,
            cwd=str(REPO / "shared"),
            stdout=subprocess.DEVNULL,
        )
    built = sorted(p.name for p in args.bundles.iterdir() if (p / "main.py").exists())
    sys.path.insert(0, str(REPO / "shared"))
    from colony.registry.functions import FUNCTIONS

    wanted = args.names or sorted(FUNCTIONS)
    missing = [n for n in wanted if n not in built]
    if missing:  # every deployed function is reported, or the run says which is not
        raise SystemExit(f"no bundle in {args.bundles} for {', '.join(missing)} (make package)")
    names = [n for n in built if n in wanted]
    plans = {n: plan(args.bundles / n) for n in names}
    pythons = {n: bundle_python(args.bundles / n, args.venvs.resolve()) for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        hello_dir = hello_bundle(Path(tmp) / "hello")
        hello = hello_dir / "main.py"
        hello_python = bundle_python(hello_dir, args.venvs.resolve())
        hello_ms: list[float] = []
        bare = {"PATH": os.environ.get("PATH", "")}
        # per function, per request path, the runs' times (the floor last)
        times: dict[str, list[list[tuple[float, ...]]]] = {
            n: [[] for _ in plans[n][0]] for n in names
        }
        for _ in range(args.runs):
            hello_ms.append(probe(hello_python, hello, {}, bare, args.clock)[0][0])
            for name in names:
                main_py = args.bundles / name / "main.py"
                steps, env = plans[name]
                for path, step in zip(times[name], steps, strict=True):
                    found, modules = probe(pythons[name], main_py, step, env, args.clock)
                    least = floor(pythons[name], main_py, modules, env, args.clock)
                    path.append((*found, least))
        hello_mb = bundle_bytes(hello_dir) / 2**20
    base = statistics.median(hello_ms)

    def measured(name: str) -> dict[str, float]:
        # the costliest path's medians: a first request takes one path, and may take that one
        medians = [tuple(statistics.median(x) for x in zip(*p, strict=True)) for p in times[name]]
        module, first, vendors, least = max(medians, key=lambda m: m[1])
        return {
            "import_ms": round(module, 1),
            "ratio": round(module / base, 3),
            "with_flows_ms": round(first, 1),
            "with_flows_ratio": round(first / base, 3),
            "floor_ms": round(least, 1),
            "floor_ratio": round(least / base, 3),
            "with_vendors_ms": round(vendors, 1),
            "with_vendors_ratio": round(vendors / base, 3),
            "installed_mb": round(bundle_bytes(args.bundles / name) / 2**20, 1),
            "paths": len(medians),
        }

    report = {name: measured(name) for name in names}
    print(
        json.dumps(
            {
                "bench": "cold_start",
                "runs": args.runs,
                "clock": args.clock,
                "bundles": str(args.bundles),
                "hello_world_ms": round(base, 1),
                "hello_world_installed_mb": round(hello_mb, 1),
                "functions": report,
                "max_ratio": max(r["ratio"] for r in report.values()),
                "max_with_flows_ratio": max(r["with_flows_ratio"] for r in report.values()),
                "max_with_vendors_ratio": max(r["with_vendors_ratio"] for r in report.values()),
                "max_installed_mb": max(r["installed_mb"] for r in report.values()),
            }
        )
    )


if __name__ == "__main__":
    main()
