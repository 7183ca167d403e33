"""The ``colony`` command: local stack, migrations, demo scenario, Knowledge Core queries,
the local functions' logs."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from colony.errors import ColonyError
from colony.local.cli_admin import add_commands as add_org_data_commands
from colony.local.cli_crm import add_commands as add_crm_commands
from colony.local.cli_domains import add_commands as add_domain_commands
from colony.local.cli_eval import add_commands as add_eval_commands
from colony.local.cli_explain import add_commands as add_explain_commands
from colony.local.cli_imports import add_commands as add_import_commands
from colony.local.cli_mailboxes import add_commands as add_mailbox_commands
from colony.local.cli_research import add_commands as add_research_commands
from colony.local.cli_team import add_commands as add_team_commands
from colony.local.cli_usage import add_commands as add_usage_commands
from colony.settings import Settings
from colony.testing.lifeline import stopping_on_termination

if TYPE_CHECKING:
    from colony.knowledge import KnowledgeStore, Retrieved
    from colony.store import Database


def _say(message: str) -> None:
    print(message, flush=True)


def _migrate(settings: Settings) -> list[str]:
    from colony.local.db import connect_factory
    from colony.store import ensure_app_role_grants, migrate

    conn = connect_factory(settings, "owner")()
    try:
        applied = migrate(conn, dim=settings.embedding_dim, progress=lambda n: _say(f"  + {n}"))
        ensure_app_role_grants(conn, settings.db_app_role)
    finally:
        conn.close()
    return applied


def cmd_db_migrate(settings: Settings, _: argparse.Namespace) -> int:
    applied = _migrate(settings)
    _say(f"migrations: {len(applied)} applied" if applied else "migrations: up to date")
    return 0


def cmd_org_tier(settings: Settings, args: argparse.Namespace) -> int:
    """Move an org's Knowledge Core into its own partition now (normally automatic, past
    ``tiering.THRESHOLD`` chunks, by a background task)."""
    from colony.knowledge.tiering import promote
    from colony.local.db import connect_factory
    from colony.store import Database

    db = Database(connect_factory(settings, "app"))
    try:
        done = promote(db, args.org_id)
    finally:
        db.close()
    if not done.moved:
        _say(f"{args.org_id}: already in its own partition")
    else:
        _say(
            f"{args.org_id}: {done.caught_up} chunk(s) moved to its own partition with 10 HNSW"
            f" graphs (copy {done.stage_s:.1f}s, build {done.build_s:.1f}s,"
            f" cutover {done.cutover_s * 1000:.0f} ms)"
        )
    return 0


def _lifecycle_deps(settings: Settings) -> Any:
    """The parts an erasure runs with locally: the application role (RLS scopes every
    statement to the org), the assets bucket and, when its keys are set, Langfuse."""
    from colony.adapters.storage import blob_store_from_settings
    from colony.local.db import connect_factory
    from colony.runtime.deps import build_deps
    from colony.store import Database

    db = Database(connect_factory(settings, "app"))
    return build_deps(settings, db=db, blobs=blob_store_from_settings(settings))


def _run_erasure(settings: Settings, open_job: Callable[[Any], str]) -> int:
    import json

    from colony.flows.tenants import erasure
    from colony.runtime.compose.lifecycle import traces

    deps = _lifecycle_deps(settings)
    try:
        job_id = open_job(deps)
        _say(f"erasure job {job_id}: running (re-run the same command to resume it)")
        done = erasure.run_job(deps, job_id, traces(settings))
    finally:
        deps.db.close()
    _say(json.dumps(done["report"], indent=2, sort_keys=True))
    return 0 if done["report"]["complete"] else 1


def cmd_org_erase(settings: Settings, args: argparse.Namespace) -> int:
    """Erase an org everywhere (rows, KC chunks and indexes, GCS objects, Langfuse traces)."""
    from colony.flows.tenants import erasure

    return _run_erasure(settings, lambda d: erasure.request_org(d, args.org_id, args.requested_by))


def cmd_org_erase_contact(settings: Settings, args: argparse.Namespace) -> int:
    """Erase one prospect of an org (a data-subject request)."""
    from colony.flows.tenants import erasure

    return _run_erasure(
        settings,
        lambda d: erasure.request_contact(d, args.org_id, args.contact_id, args.requested_by),
    )


def cmd_org_retention(settings: Settings, args: argparse.Namespace) -> int:
    """Enforce an org's retention now (what the daily Scheduler job does)."""
    import json

    from colony.flows.tenants import retention

    deps = _lifecycle_deps(settings)
    try:
        _say(json.dumps(retention.enforce(deps, args.org_id), indent=2, sort_keys=True))
    finally:
        deps.db.close()
    return 0


def cmd_graph(settings: Settings, args: argparse.Namespace) -> int:
    from colony.local.declared_tests import declared_tests
    from colony.registry.graph import build_graph, run_query

    _say(run_query(build_graph(test_specs=declared_tests()), args.query, args.id))
    return 0


def cmd_token(settings: Settings, args: argparse.Namespace) -> int:
    """Print a local bearer token (the chat and approval functions accept it locally)."""
    from colony.local.demo import read_json
    from colony.local.tokens import mint_token_command

    print(mint_token_command(settings, args.org or read_json("org.json")["id"]))
    return 0


def cmd_logs(settings: Settings, args: argparse.Namespace) -> int:
    """Pretty-print a local function's log (``.colony/logs/<function>.log``)."""
    from colony.local.log_view import show

    try:
        show(settings.data_dir / "logs", args.function, _say, follow=args.follow)
    except BrokenPipeError:  # e.g. piped into head
        sys.stderr.close()
    return 0


def cmd_db_stop(settings: Settings, _: argparse.Namespace) -> int:
    from colony.local.embedded import stop

    _say("embedded PostgreSQL stopped" if stop(settings) else "embedded PostgreSQL not running")
    return 0


def _stores(settings: Settings) -> tuple[Database, KnowledgeStore]:
    from colony.adapters.embedding import embedder_from_settings
    from colony.knowledge import KnowledgeStore
    from colony.local.db import connect_factory
    from colony.store import Database

    db = Database(connect_factory(settings, "app"))
    return db, KnowledgeStore(db, embedder_from_settings(settings))


def _print_hits(hits: dict[str, list[Retrieved]], elapsed_ms: float) -> None:
    for domain, items in hits.items():
        _say(f"    {domain}: {len(items)} hit(s) in {elapsed_ms:.1f} ms")
        for h in items:
            snippet = " ".join(h.content.split())[:96]
            _say(f"      {h.similarity:+.3f}  {h.title or h.source_id}: {snippet}…")


def cmd_kc_query(settings: Settings, args: argparse.Namespace) -> int:
    from colony.local.demo import read_json

    db, knowledge = _stores(settings)
    org = args.org or read_json("org.json")["id"]
    started = time.perf_counter()
    hits = knowledge.retrieve(org, args.text, args.domain, args.k)
    _print_hits(hits, (time.perf_counter() - started) * 1000)
    db.close()
    return 0


def cmd_demo(settings: Settings, args: argparse.Namespace) -> int:
    from colony.local.demo import load_demo, read_json
    from colony.local.stack import update_stack

    if settings.db_mode == "embedded":
        from colony.local.embedded import embedded_dsn

        started = time.perf_counter()
        _say("starting the embedded PostgreSQL 18 + pgvector…")
        dsns = {role: embedded_dsn(settings, role) for role in ("app", "owner")}
        _say(f"  ready in {time.perf_counter() - started:.2f}s")
        update_stack(settings, database={"mode": "embedded", **dsns})
    _say("migrating…")
    applied = _migrate(settings)
    _say(f"  {len(applied)} migration(s) applied" if applied else "  schema up to date")
    _say("loading the ZoomProp demo org…")
    db, knowledge = _stores(settings)
    summary = load_demo(db, knowledge, say=_say)
    update_stack(settings, demo_org_id=summary.org_id)
    _say(f"querying the Knowledge Core ({knowledge.model}, offline embedder is not semantic)…")
    for domain, queries in read_json("queries.json").items():
        for text in queries:
            _say(f"  [{domain}] {text!r}")
            started = time.perf_counter()
            hits = knowledge.retrieve(summary.org_id, text, [domain], 2)
            _print_hits(hits, (time.perf_counter() - started) * 1000)
    _print_bundles(db, knowledge, summary.org_id)
    from colony.local.campaign_demo import demo_functions, run_demo_campaign
    from colony.local.demo_context import DemoContext

    app_dsn = settings.db_dsn or ""
    if settings.db_mode == "embedded":
        from colony.local.embedded import embedded_dsn

        app_dsn = embedded_dsn(settings, "app")
    from colony.local.brief_demo import local_storage, run_brief_demo
    from colony.local.chat_demo import run_chat_demo
    from colony.local.crm_demo import connect_hubspot, hubspot_stand_in, run_crm_demo
    from colony.local.customer_demo import run_new_customer_demo
    from colony.local.knowledge_demo import knowledge_stand_ins, run_knowledge_demo
    from colony.local.mailbox_demo import connect_mailboxes, demo_mail, run_mailbox_demo
    from colony.local.research_demo import research_web
    from colony.local.team_demo import run_team_demo, slack_stand_in

    org_id = summary.org_id
    with (
        local_storage(settings, _say),
        knowledge_stand_ins(settings, org_id) as stand_ins,
        research_web(_say) as web,
        demo_mail(_say) as mail,
        hubspot_stand_in(_say) as (hubspot, crm),
        slack_stand_in(_say) as slack,  # before the functions: they inherit its address
        demo_functions(
            settings, org_id, app_dsn, _say, extra_env={**stand_ins, **web, **mail.env(), **crm}
        ) as (servers, token),
    ):
        demo = DemoContext(settings, db, knowledge, org_id, servers, token, _say, mail.smtp)
        connect_hubspot(demo, hubspot)  # first: what the campaign sends is logged there
        boxes = connect_mailboxes(demo, mail)  # and goes from the org's own mailboxes
        run_demo_campaign(demo)
        run_knowledge_demo(demo)
        run_new_customer_demo(demo)
        run_brief_demo(settings, db, org_id, servers, token, _say)
        run_crm_demo(demo, hubspot)
        run_mailbox_demo(demo, mail, boxes)
        run_team_demo(demo, slack)
        db.close()
        _say(f"the local stack is described in {settings.data_dir / 'stack.json'}")
        run_chat_demo(settings, servers, token, _say, serve=args.serve)
    _say("done.")
    return 0


def _print_bundles(db: Database, knowledge: KnowledgeStore, org_id: str) -> None:
    from colony.context.assembler import assemble
    from colony.context.budgets import SECTIONS, load_budgets
    from colony.context.tokens import counter_for
    from colony.local.scenario import demo_requests

    budgets = load_budgets()
    counter = counter_for(budgets.model_for("openai"))
    _say(f"assembling one context bundle per agent (tokens: {counter.label}, used/budget)…")
    _say(f"  {'profile':<16}" + "".join(f"{s:>13}" for s in SECTIONS) + "   trimmed")
    for profile, request in demo_requests(db, knowledge, org_id).items():
        out = assemble(request, budgets=budgets, counter=counter)
        cells = "".join(f"{f'{out.account[s]}/{out.budget.of(s)}':>13}" for s in SECTIONS)
        cut = ", ".join(f"{k}={v}" for k, v in out.trimmed.items() if v) or "-"
        _say(f"  {profile:<16}{cells}   {cut}")
    _say("  (AGT-002 makes no LLM call: its anti-ICP filter and handoffs are deterministic)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="colony", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="set up the local stack and run the demo scenario")
    demo.add_argument(
        "--no-serve",
        dest="serve",
        action="store_false",
        help="stop after the scenario instead of serving /overview until Ctrl-C",
    )
    demo.set_defaults(run=cmd_demo)
    add_crm_commands(sub)
    db = sub.add_parser("db", help="database commands").add_subparsers(dest="db", required=True)
    db.add_parser("migrate", help="apply pending migrations as the owner role").set_defaults(
        run=cmd_db_migrate
    )
    db.add_parser("stop", help="stop the embedded PostgreSQL").set_defaults(run=cmd_db_stop)
    org = sub.add_parser("org", help="org administration").add_subparsers(dest="org", required=True)
    tier = org.add_parser(
        "tier", help="move an org's Knowledge Core to its own partition and HNSW graphs now"
    )
    tier.add_argument("org_id")
    tier.set_defaults(run=cmd_org_tier)
    erase = org.add_parser("erase", help="erase an org everywhere, ending with a report")
    erase.add_argument("org_id")
    erase.add_argument("--requested-by", default="cli", help="who asked (kept on the job)")
    erase.set_defaults(run=cmd_org_erase)
    erase_contact = org.add_parser(
        "erase-contact", help="erase one prospect (a data-subject request)"
    )
    erase_contact.add_argument("org_id")
    erase_contact.add_argument("contact_id")
    erase_contact.add_argument("--requested-by", default="cli", help="who asked")
    erase_contact.set_defaults(run=cmd_org_erase_contact)
    keep = org.add_parser("retention", help="enforce an org's retention periods now")
    keep.add_argument("org_id")
    keep.set_defaults(run=cmd_org_retention)
    add_org_data_commands(org)
    add_domain_commands(org)
    add_mailbox_commands(org)
    add_usage_commands(org)
    add_team_commands(org)
    add_import_commands(sub)
    add_explain_commands(sub)
    add_research_commands(sub)
    add_eval_commands(sub)
    graph = sub.add_parser("graph", help="query the knowledge graph of the system itself")
    graph.add_argument(
        "query",
        choices=(
            "who-reads",
            "what-constrains",
            "impact",
            "tested-by",
            "untested",
            "export",
            "summary",
        ),
    )
    graph.add_argument(
        "id",
        nargs="?",
        default=None,
        help="a node id (ENT-007, AGT-005, KC-08, fn:onboarding), or for export:"
        " json | mermaid | dot",
    )
    graph.set_defaults(run=cmd_graph)
    logs = sub.add_parser("logs", help="show a local function's log lines, readably")
    logs.add_argument("function", help="a function name, e.g. qualification or chat")
    logs.add_argument(
        "-f", "--follow", action="store_true", help="keep printing new lines until Ctrl-C"
    )
    logs.set_defaults(run=cmd_logs)
    token = sub.add_parser("token", help="mint a local bearer token (JWT) for an org")
    token.add_argument("--org", help="org id (default: the demo org)")
    token.set_defaults(run=cmd_token)
    kc = sub.add_parser("kc", help="Knowledge Core").add_subparsers(dest="kc", required=True)
    query = kc.add_parser("query", help="retrieve the top-k chunks per domain")
    query.add_argument("text")
    query.add_argument("--domain", action="append", required=True, help="KC-01..KC-10")
    query.add_argument("--k", type=int, default=3)
    query.add_argument("--org", help="org id (default: the demo org)")
    query.set_defaults(run=cmd_kc_query)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:  # SIGTERM and SIGHUP stop what a command started as Ctrl-C does
        with stopping_on_termination():
            settings = Settings.from_env()
            return int(args.run(settings, args))
    except ColonyError as error:
        print(f"colony: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
