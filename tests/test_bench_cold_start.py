"""``bench/cold_start.py``'s request paths: what a first request through each branch of a
function's handler imports, and the event a Pub/Sub function's first request decodes (the
bench charges the costliest path; it runs over built bundles, so only its plans are tested
here)."""

from __future__ import annotations

import base64
import json
import runpy
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from colony.registry.functions import FUNCTIONS
from colony.runtime.edge.pubsub import decode_push

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench" / "cold_start.py"


def request_paths(main: Path) -> list[list[str]]:
    found: Callable[[Path], Any] = runpy.run_path(str(BENCH))["request_paths"]
    return list(found(main))


MAIN = """
import functions_framework


@functions_framework.http
def handle(request):
    from colony.a import always
    if request.path == "/x":
        from colony.x import x
        return _helper(x)
    for _ in range(2):
        from colony.loop import looped
    if request.path == "/y":
        from colony.y import y
        return y
    if request.path == "/quiet":  # does not end: what it imports counts from here on
        from colony.maybe import maybe
    from colony.rest import rest
    return rest


def _helper(value):
    from colony.helper import helped
    return helped(value)
"""


def test_each_branch_that_returns_is_a_path_with_what_came_before(tmp_path: Path) -> None:
    main = tmp_path / "main.py"
    main.write_text(textwrap.dedent(MAIN))
    assert request_paths(main) == [
        ["colony.a.always", "colony.helper.helped", "colony.x.x"],
        ["colony.a.always", "colony.loop.looped", "colony.y.y"],
        ["colony.a.always", "colony.loop.looped", "colony.maybe.maybe", "colony.rest.rest"],
    ]


def test_a_path_inside_another_is_not_measured_twice(tmp_path: Path) -> None:
    main = tmp_path / "main.py"
    main.write_text(
        "import functions_framework\n\n\n@functions_framework.http\ndef handle(request):\n"
        "    from colony.a import a\n    if request.path == '/':\n        return a\n"
        "    if request.method != 'POST':\n        raise ValueError\n"
        "    from colony.b import b\n    return b\n"
    )
    assert request_paths(main) == [["colony.a.a", "colony.b.b"]]


def test_the_data_lifecycle_tasks_are_measured_one_by_one() -> None:
    paths = request_paths(REPO / "functions" / "data-lifecycle" / "main.py")
    common = {"colony.contracts.lifecycle.LifecycleBody", "colony.runtime.auth.verify_google_oidc"}
    # schedule, replies.poll, research.sweep, domains.check, import, approvals.escalate, the
    # Drive tasks (erasure and drive.renew share a helper) and kc.tier with retention (the
    # tail): one path each
    assert len(paths) == 8 and all(common <= set(p) for p in paths)
    assert sum("colony.flows.outbound.sending_domains" in p for p in paths) == 1
    assert sum("colony.flows.research.requests" in p for p in paths) == 1
    erasure = next(p for p in paths if "colony.flows.tenants.erasure" in p)
    assert "colony.adapters.drive.drive_from_settings" in erasure  # through its helper
    assert sum("colony.flows.tenants.schedules" in p for p in paths) == 1


def test_every_function_is_planned_and_each_pubsub_one_decodes_real_events() -> None:
    """The bench plans a first request for every function the registry deploys, and a Pub/Sub
    function's first request decodes a valid event of each kind its topic carries."""
    bench = runpy.run_path(str(BENCH))
    plan, events = bench["plan"], bench["EVENTS"]
    pubsub = {name for name, spec in FUNCTIONS.items() if spec.trigger == "pubsub"}
    assert set(events) == pubsub
    for name in FUNCTIONS:
        steps, env = plan(REPO / "functions" / name)
        assert steps and env["K_SERVICE"] == name
        sent = [step["event"] for step in steps if step["event"] is not None]
        assert {e["kind"] for e in sent} == ({e["kind"] for e in events[name]} if sent else set())
        assert bool(sent) == (name in pubsub)
        for event in sent:
            data = base64.b64encode(json.dumps(event).encode()).decode()
            push = type("CloudEvent", (), {"data": {"message": {"messageId": "1", "data": data}}})
            assert decode_push(push()).problem is None, (name, event["kind"])


def test_the_floor_imports_what_it_is_given_and_passes_over_what_will_not_load() -> None:
    """The floor probe imports the listed modules in order in a fresh interpreter and times
    them; a name that cannot be imported alone costs nothing and stops nothing."""
    floor = runpy.run_path(str(BENCH))["FLOOR"]
    probe = floor.replace(
        "print(time.perf_counter() - started, flush=True)",
        ("print(time.perf_counter() - started, 'fractions' in sys.modules, flush=True)"),
    )
    modules = ["no_such_module_anywhere", "fractions"]
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe, json.dumps(modules)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, loaded = done.stdout.split()
    assert float(seconds) > 0 and loaded == "True"


def test_either_clock_times_every_step() -> None:
    """``--clock cpu`` swaps the probes' clock: every time they take is on the clock asked for."""
    bench = runpy.run_path(str(BENCH))
    for script in (bench["PROBE"], bench["FLOOR"]):
        for clock in bench["CLOCKS"].values():
            swapped = script.replace("time.perf_counter", clock)
            others = set(bench["CLOCKS"].values()) - {clock}
            assert clock + "()" in swapped and not any(o in swapped for o in others)
