"""Provenance (issue 19 item 5): ``make run``'s scenario runs through real functions-framework
servers against the embedded PostgreSQL, then every output it produced (approval items of
each kind, the brief, the chat answer) is explained from what its model call recorded:
``colony explain`` and the /overview "Why?" endpoint over HTTP. The credits an outcome gives
the grounding chunks are checked on the same rows, inside and across orgs."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.transport_local import LocalTransport
from colony.context.assembler import AssemblyRequest, assemble
from colony.context.budgets import load_budgets
from colony.context.tokens import counter_for
from colony.contracts import Exemplar, OrgContext
from colony.errors import NotFound, ValidationFailed
from colony.flows.insights import explain
from colony.knowledge import KnowledgeStore
from colony.local.brief_demo import local_storage, run_brief_demo
from colony.local.campaign_demo import demo_functions, local_mail, run_demo_campaign
from colony.local.chat_demo import run_chat_demo
from colony.local.cli import main as colony
from colony.local.demo import load_demo
from colony.local.demo_context import DemoContext
from colony.local.knowledge_demo import knowledge_stand_ins, run_knowledge_demo
from colony.ports import Message
from colony.settings import Settings
from colony.store import fetch_all
from colony.store.knowledge import provenance
from colony.testing.inline import local_deps
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("ENT-011", "ENT-009", "AGT-001", "AGT-005", "AGT-010", "KC-08")

VERSION = re.compile(r"^[0-9a-f]{16}$")


def test_assembled_provenance_names_chunks_entities_turns_template_and_cuts() -> None:
    """Pure: what the assembler kept is what the record names (the dropped exemplar is a
    budget cut, not a grounding chunk)."""
    budgets = load_budgets()
    big = "word " * 4000
    exemplars = [
        Exemplar(
            domain="KC-08",
            content="short and best",
            similarity=0.9,
            chunk_id=7,
            content_hash="a" * 64,
        ),
        Exemplar(domain="KC-08", content=big, similarity=0.2, chunk_id=8, content_hash="b" * 64),
    ]
    request = AssemblyRequest(
        "AGT-005",
        "org-p",
        "run-p",
        OrgContext(org_name="P"),
        exemplars,
        {"contact": {"id": "c-1", "updated_at": "2026-12-01T10:00:00+00:00", "name": "Ann"}},
        [Message("assistant", "earlier", name="summary")],
        {
            "angle": "cost",
            "tier": "T2",
            "step": "1",
            "channel": "email",
            "guidance": "(none)",
            "competitors": [],
        },
    )
    assembled = assemble(request, budgets=budgets, counter=counter_for("offline"))
    prov = assembled.provenance
    assert prov["chunks"] == [
        {"id": 7, "domain": "KC-08", "similarity": 0.9, "content_hash": "a" * 64}
    ]
    # AGT-005's history budget is 0: the summary turn is cut, and said to be
    assert prov["budget_cuts"] == {"exemplars_dropped": 1, "history_dropped": 1}
    assert prov["entities"] == [
        {"name": "contact", "id": "c-1", "updated_at": "2026-12-01T10:00:00+00:00"}
    ]
    assert prov["history"] == []
    assert prov["template"]["name"] == "message_generator"
    assert VERSION.match(prov["template"]["version"])


def test_every_output_of_make_run_is_explained_and_its_outcome_credits_its_chunks(
    testdb: PgDB,
    tmp_path: Path,
    no_ambient_config: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = {
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_DB_OWNER_DSN": testdb.dsn("postgres"),
    }
    settings = Settings.from_env(env)
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    org = load_demo(db, knowledge, say=lambda _: None).org_id
    said: list[str] = []
    with (
        local_storage(settings, said.append),
        knowledge_stand_ins(settings, org) as stand_ins,
        local_mail(said.append) as mail,
        demo_functions(
            settings, org, testdb.dsn(APP_ROLE), said.append, extra_env={**stand_ins, **mail.env()}
        ) as (servers, token),
    ):
        demo = DemoContext(settings, db, knowledge, org, servers, token, said.append, mail)
        run_demo_campaign(demo)
        run_knowledge_demo(demo)
        run_brief_demo(settings, db, org, servers, token, said.append)
        run_chat_demo(settings, servers, token, said.append, serve=False)
        deps = local_deps(settings, db, LocalTransport(servers.urls))
        with db.transaction(org) as cur:
            items = fetch_all(
                cur,
                "SELECT id, kind, source_agent, llm_call_id, run_id FROM approval_items"
                " ORDER BY created_at, id",
            )
            turns = fetch_all(
                cur,
                "SELECT DISTINCT turn_id FROM chat_turns WHERE role = 'assistant'"
                " AND turn_id IS NOT NULL",
            )
            chunks = {
                int(r["id"]): hashlib.sha256(r["content"].encode()).hexdigest()
                for r in fetch_all(cur, "SELECT id, content FROM kc_chunks")
            }
        # every kind the model drafts was produced, and each names its call
        drafted = [i for i in items if i["kind"] != "tool_action" and i["run_id"]]
        kinds = {i["kind"] for i in drafted}
        assert {
            "outbound_message",
            "deal_update",
            "kc_update_candidate",
            "follow_up",
            "deployment_kit",
            "content_piece",
        } <= kinds, kinds
        assert all(i["llm_call_id"] for i in drafted), [i for i in drafted if not i["llm_call_id"]]
        for item in drafted:
            why = explain.explain(deps, org, item["id"])
            assert why["kind"] == item["kind"]
            assert {c["call_id"] for c in why["calls"]} == {item["llm_call_id"]}
            assert {c["agent_id"] for c in why["calls"]} == {item["source_agent"]}
            for call in why["calls"]:
                assert VERSION.match(call["template"]["version"])
                for chunk in call["chunks"]:  # the sha256 of the chunk's text in the KC
                    if chunk["id"] in chunks:
                        assert chunks[chunk["id"]] == chunk["content_hash"]
        outbound = next(i for i in drafted if i["kind"] == "outbound_message")
        first = explain.explain(deps, org, outbound["id"])["calls"][0]
        assert first["chunks"] and {c["domain"] for c in first["chunks"]} <= {
            f"KC-{n:02d}" for n in range(1, 11)
        }
        assert any(e["name"] == "contact" and e["updated_at"] for e in first["entities"])
        # the brief: its row and its AGT-010 call are linked by the call id it stored
        today = datetime.now(UTC).date().isoformat()
        with db.transaction(org) as cur:
            (stored_brief,) = fetch_all(
                cur,
                "SELECT id, llm_call_id FROM daily_briefs WHERE brief_date = %s::date",
                (today,),
            )
            answers = fetch_all(
                cur,
                "SELECT id, session_id, turn_id, llm_call_id FROM chat_turns"
                " WHERE role = 'assistant' ORDER BY id",
            )
            rows_of = {
                r["id"]: (r["session_id"], r["turn_id"])
                for r in fetch_all(cur, "SELECT id, session_id, turn_id FROM chat_turns")
            }
        assert stored_brief["llm_call_id"]
        for asked in (stored_brief["id"], today, f"brief:{today}"):
            why = explain.explain(deps, org, asked)
            assert why["kind"] == "brief"
            assert [c["call_id"] for c in why["calls"]] == [stored_brief["llm_call_id"]]
        # the chat answers (by turn id): the calls their rows stored, each naming the history
        # turns it was shown (by row id) and today's brief (by id)
        assert turns and answers and all(a["llm_call_id"] for a in answers)
        shown_earlier = 0
        for turn in turns:
            why = explain.explain(deps, org, turn["turn_id"])
            assert why["kind"] == "chat_turn"
            calls = why["calls"]
            assert {c["agent_id"] for c in calls} == {"AGT-001"}
            assert {c["call_id"] for c in calls} == {
                a["llm_call_id"] for a in answers if a["turn_id"] == turn["turn_id"]
            }
            session = next(a["session_id"] for a in answers if a["turn_id"] == turn["turn_id"])
            for call in calls:
                assert call["brief_id"] == stored_brief["id"]
                shown = [rows_of[int(h["id"])] for h in call["history"]]
                assert all(s == session for s, _ in shown)  # its own session's rows
                shown_earlier += any(t != turn["turn_id"] for _, t in shown)
        assert shown_earlier  # a later turn's call was shown the earlier turn's rows
        for action in (i for i in items if i["kind"] == "tool_action"):
            assert {c["agent_id"] for c in explain.explain(deps, org, action["id"])["calls"]} == {
                "AGT-001"
            }
        # the brief, by its date
        brief = explain.explain(deps, org, today)
        assert brief["kind"] == "brief"
        assert {c["agent_id"] for c in brief["calls"]} == {"AGT-010"}
        assert brief["calls"][0]["history"] == [{"role": "assistant", "name": "summary"}]
        # an item a person queued has no call: said so, not an empty answer
        person = next(i for i in items if not i["run_id"] and not i["llm_call_id"])
        with pytest.raises(NotFound, match="no model call on record"):
            explain.explain(deps, org, person["id"])

        # the "Why?" panel's endpoint, over HTTP, as the page asks for it
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(timeout=30) as http:
            answer = http.get(f"{servers.urls['chat']}/explain/{outbound['id']}", headers=auth)
            missing = http.get(f"{servers.urls['chat']}/explain/no-such-item", headers=auth)
            anonymous = http.get(f"{servers.urls['chat']}/explain/{outbound['id']}")
        assert answer.status_code == 200, answer.text
        assert answer.json()["calls"][0]["call_id"] == outbound["llm_call_id"]
        assert missing.status_code == 404 and "no model call" in missing.json()["error"]["message"]
        assert anonymous.status_code == 401

    # ``colony explain`` prints it readably
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert colony(["explain", outbound["id"], "--org", org]) == 0
    printed = capsys.readouterr().out
    assert f"{outbound['id']} (outbound_message): 1 call(s)" in printed
    assert "template: message_generator version " in printed
    assert f"{first['chunks'][0]['domain']} chunk {first['chunks'][0]['id']}" in printed
    assert colony(["explain", "no-such-item", "--org", org]) == 2
    assert "no model call on record" in capsys.readouterr().err

    # an outcome credits each chunk that grounded the call, once; another org sees none
    call_id = outbound["llm_call_id"]
    grounded = {c["id"] for c in first["chunks"]}
    with db.transaction(org) as cur:
        # the demo's own outcomes credit their drafts' chunks too (flows.outbound.delivery): an
        # outcome the system never records is counted on top of what came before
        before = {
            r["chunk_id"]: r["n"]
            for r in provenance.credits(cur, sorted(grounded))
            if r["outcome"] == "meeting_booked"
        }
        assert provenance.credit_outcome(cur, call_id, "meeting_booked") == len(grounded)
        assert provenance.credit_outcome(cur, call_id, "meeting_booked") == 0
        credited = provenance.credits(cur, sorted(grounded))
        with pytest.raises(ValidationFailed, match="lower-case word"):
            provenance.credit_outcome(cur, call_id, "Replied!")
    assert {(r["chunk_id"], r["n"]) for r in credited if r["outcome"] == "meeting_booked"} == {
        (c, before.get(c, 0) + 1) for c in grounded
    }
    assert {r["content_hash"] for r in credited} == {c["content_hash"] for c in first["chunks"]}
    with db.transaction("some-other-org") as cur:
        assert provenance.credit_outcome(cur, call_id, "meeting_booked") == 0
        assert provenance.credits(cur, sorted(grounded)) == []
    db.close()
