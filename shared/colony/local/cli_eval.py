"""``colony eval``: run the eval sets against a model and gate on the result, compare two
runs, list the sets (``colony.evals``; docs/quality.md "Eval sets").

    colony eval run [--agent AGT-004 …] [--tag planted_instruction …] [--per-agent N]
                    [--provider offline|openai|gemini] [--model M] [--base-url URL]
                    [--judge none|offline|openai|gemini|URL] [--judge-model M]
                    [--min-pass AGT-004=0.9 …] [--jobs N] [--call-seconds S] [--out DIR]
    colony eval compare A B [--fail-on-regression]     (report.json files or run folders)
    colony eval sets

``run`` writes ``<out>/<run id>/report.json`` and ``report.html`` and exits 1 when the gate
falls (an agent's pass rate under its threshold: ``colony/evals/gates.json`` and
``--min-pass``). AGT-010's cases write their rows to a scratch database of the embedded
cluster, dropped afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from colony.errors import ConfigError
from colony.settings import Settings


def _say(message: str) -> None:
    print(message, flush=True)


def _pairs(given: list[str] | None) -> dict[str, float]:
    out = {}
    for item in given or []:
        agent, _, value = item.partition("=")
        try:
            out[agent.strip()] = float(value)
        except ValueError:
            raise ConfigError(
                f"--min-pass takes AGENT=RATE (e.g. AGT-004=0.9), not {item!r}"
            ) from None
    return out


@contextlib.contextmanager
def _database(settings: Settings, needed: bool) -> Iterator[Any]:
    if not needed:
        yield None
        return
    if settings.db_mode != "embedded":
        raise ConfigError(
            "AGT-010's cases write rows to a scratch database of the embedded cluster: run them"
            " with COLONY_DB_MODE=embedded, or leave them out (--agent)"
        )
    from colony.local.embedded import scratch_database
    from colony.store import Database, connect_factory

    with scratch_database(settings, "colony_eval") as scratch:
        db = Database(connect_factory(scratch, "app"))
        try:
            yield db
        finally:
            db.close()


def cmd_run(settings: Settings, args: argparse.Namespace) -> int:
    from colony.evals.cases import load
    from colony.evals.session import Target, execute

    cases = load().select(args.agent or (), args.tag or (), args.case or (), args.per_agent)
    if not cases.cases:
        raise ConfigError("no case matches that selection (colony eval sets lists them)")
    target = Target(args.provider, args.model, args.base_url)
    price = (args.price_in, args.price_out) if args.price_in is not None else None
    selection = {k: getattr(args, k) for k in ("agent", "tag", "case", "per_agent")}
    _say(f"running {len(cases.cases)} case(s) against {args.base_url or args.provider}…")

    def progress(result: Any) -> None:
        if args.verbose or not result.passed:
            mark = "ok  " if result.passed else "FAIL"
            _say(f"  {mark} {result.case.id} ({result.outcome.status}, {result.latency_ms:.0f} ms)")

    with _database(settings, any(c.agent == "AGT-010" for c in cases.cases)) as db:
        report, folder = execute(
            settings,
            cases,
            target,
            out=Path(args.out),
            db=db,
            judge=args.judge,
            judge_model=args.judge_model,
            jobs=args.jobs,
            price=price,
            gates=_pairs(args.min_pass),
            selection=selection,
            progress=progress,
            call_seconds=args.call_seconds,
        )
    for agent, s in report["agents"].items():
        limit = report["gate"]["thresholds"][agent]["pass_rate"]
        lat = s["latency_ms"]
        _say(
            f"  {agent}: {100 * (s['pass_rate'] or 0):5.1f}% of {s['cases']:>3} (gate"
            f" {100 * limit:.0f}%), tokens {s['tokens_in']}/{s['tokens_out']}, p50"
            f" {lat['p50']} ms, p95 {lat['p95']} ms"
        )
    if report["judge"]:
        j = report["judge"]
        trust = "trusted" if j["trusted"] else "not trusted: rubric not counted"
        _say(f"  judge {j['judge']}: agrees with {j['agreement']:.0%} of labels ({trust})")
    _say(f"report: {folder / 'report.json'} and {folder / 'report.html'}")
    if not report["gate"]["passed"]:
        fallen = ", ".join(
            f"{f['agent']} {f.get('property', 'pass rate')}"
            f" {f['pass_rate']:.1%} < {f['threshold']:.1%}"
            for f in report["gate"]["fallen"]
        )
        _say(f"the gate fell: {fallen}")
        return 1
    _say("the gate holds")
    return 0


def _report_path(given: str) -> Path:
    path = Path(given)
    return path / "report.json" if path.is_dir() else path


def cmd_compare(settings: Settings, args: argparse.Namespace) -> int:
    from colony.evals import compare, report

    diff = compare.compare(report.read(_report_path(args.a)), report.read(_report_path(args.b)))
    _say(compare.render(diff))
    return 1 if args.fail_on_regression and diff["regressed"] else 0


def cmd_sets(settings: Settings, args: argparse.Namespace) -> int:
    from colony.evals.cases import load

    found = load()
    _say(f"{len(found.cases)} cases (sets {found.digest})")
    for agent in sorted({c.agent for c in found.cases}):
        mine = found.of(agent)
        tags: dict[str, int] = {}
        for case in mine:
            for tag in case.tags:
                tags[tag] = tags.get(tag, 0) + 1
        hand = sum(c.source == "hand" for c in mine)
        listed = ", ".join(f"{t} {n}" for t, n in sorted(tags.items()))
        _say(f"  {agent}: {len(mine)} ({hand} by hand); {listed}")
    return 0


def add_commands(sub: Any) -> None:
    """Register ``colony eval``."""
    evals = sub.add_parser("eval", help="run the eval sets against a model (docs/quality.md)")
    verbs = evals.add_subparsers(dest="eval", required=True)
    run = verbs.add_parser("run", help="run the sets, write a report, exit 1 if the gate falls")
    run.add_argument("--agent", action="append", help="only this agent's cases (repeatable)")
    run.add_argument("--tag", action="append", help="only cases with this tag (repeatable)")
    run.add_argument("--case", action="append", help="only this case id (repeatable)")
    run.add_argument("--per-agent", type=int, help="each agent's first N cases (hand ones first)")
    run.add_argument("--provider", choices=("offline", "openai", "gemini"), default="offline")
    run.add_argument("--model", help="the model (default: the budgets file's for the provider)")
    run.add_argument("--base-url", help="an OpenAI-compatible server (through the OpenAI adapter)")
    run.add_argument("--judge", default="offline", help="none | offline | openai | gemini | URL")
    run.add_argument("--judge-model", help="the judge's own model")
    run.add_argument("--min-pass", action="append", help="AGENT=RATE, over gates.json")
    run.add_argument("--jobs", type=int, default=1, help="cases in flight at once")
    run.add_argument(
        "--call-seconds",
        type=float,
        help="each case's model window (default: none, each attempt cut at the default 100 s)",
    )
    run.add_argument("--price-in", type=float, help="USD per 1M input tokens (else the table)")
    run.add_argument("--price-out", type=float, default=0.0, help="USD per 1M output tokens")
    run.add_argument("--out", default=".colony/evals", help="where run folders are written")
    run.add_argument("-v", "--verbose", action="store_true", help="print every case, not failures")
    run.set_defaults(run=cmd_run)
    diff = verbs.add_parser("compare", help="compare two runs case by case")
    diff.add_argument("a", help="the earlier run: its report.json or folder")
    diff.add_argument("b", help="the later run")
    diff.add_argument("--fail-on-regression", action="store_true", help="exit 1 on any regression")
    diff.set_defaults(run=cmd_compare)
    verbs.add_parser("sets", help="list the eval sets").set_defaults(run=cmd_sets)
