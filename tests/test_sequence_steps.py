"""Sequence steps as the org wrote them (issue 39 item 1): real PostgreSQL, the offline model
(which answers from the prompt alone), a real SMTP server (aiosmtpd) behind the real SMTP
adapter, and the inline transport, whose scheduled tasks the tests deliver by hand, as Cloud
Tasks would once each delay has passed.

AGT-005 is told each step's number, channel and guidance and what the contact already got
(the thread); a LinkedIn or call step is a task for a person, never emailed, and a person's
"done" or "skip" moves the sequence on; a later email threads under the first ("Re: …",
In-Reply-To, References); each contact is written in the tier AGT-004 decided for it, and a
message whose tier disagrees with that is refused before it is sent, on the record.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from colony.adapters.offline.prompt import parse
from colony.context.assembler import assemble
from colony.context.budgets import load_budgets
from colony.context.tokens import counter_for
from colony.contracts import HandoffEnvelope
from colony.contracts.admin import GUIDANCE_CHARS, SequenceLibrary
from colony.errors import ValidationFailed
from colony.flows.approvals import approval, approval_queue
from colony.flows.campaigns.specialist import assembly_request, known_signals, load_contact
from colony.flows.outbound import sending, sequences
from colony.flows.tenants import org_admin
from colony.local.demo import sequence_library
from colony.ports import ModelRequest
from colony.registry.functions import SEND_QUEUE, SEQUENCE_QUEUE
from colony.runtime.deps import Deps
from colony.store import fetch_all, fetch_one
from colony.testing.smtp_server import SmtpServer
from tests.conftest import PgDB
from tests.test_sequences import (
    DAY,
    ORG,
    PERSON,
    SeenModel,
    demo_deps,
    enrollment,
    launch,
    run_tasks,
    tasks,
)

pytestmark = pytest.mark.covers("ENT-004", "ENT-012", "AGT-005")

FIRST_ASK = "Who owns the lease decision on your side?"
LAST_ASK = "Worth 15 minutes next week?"


def step(channel: str, delay: int, guidance: str) -> dict[str, Any]:
    return {"channel": channel, "delay_days": delay, "guidance": guidance}


def library(deps: Deps, *sequences_: dict[str, Any]) -> None:
    """Replace the demo org's library through the admin flow (the API's and the CLI's)."""
    org_admin.replace_sequences(
        deps, ORG, SequenceLibrary.model_validate({"sequences": list(sequences_)})
    )


def sequence(tier: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"name": f"Signal {tier}", "angle": "Signal", "tier": tier, "steps": list(steps)}


THREE_STEPS = sequence(
    "T1",
    step("email", 0, f'Open on the signal, then ask "{FIRST_ASK}"'),
    step("linkedin", 2, "Connect with a short note, no pitch."),
    step("email", 3, f'Reply in the thread with one proof point; close with "{LAST_ASK}"'),
)


@pytest.fixture
def deps(testdb: PgDB, smtp: SmtpServer) -> Deps:
    return demo_deps(testdb, smtp)


def items(deps: Deps, step_no: int, status: str = "pending") -> list[dict[str, Any]]:
    with deps.db.transaction(ORG) as cur:
        return fetch_all(
            cur,
            "SELECT a.id, a.kind, a.status, a.subject_id AS contact, a.payload, c.icp_tier"
            " FROM approval_items a JOIN contacts c ON c.id = a.subject_id"
            " WHERE a.status = %s AND (a.payload->>'sequence_step')::int = %s"
            " ORDER BY c.external_id",
            (status, step_no),
        )


def enrolled(deps: Deps, contact_id: str) -> dict[str, Any]:
    return enrollment(deps, contact_id, "tier, sequence_tier, step, steps, status, stop_reason")


def effects(deps: Deps, item_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(
            cur,
            "SELECT event, action, detail FROM audit_log WHERE approval_item_id = %s ORDER BY id",
            (item_id,),
        )
    return [(r["event"], r["action"], r["detail"]) for r in rows]


def agent_calls(deps: Deps) -> list[ModelRequest]:
    seen = deps.llm.chat
    assert isinstance(seen, SeenModel)
    return [r for r in seen.requests if r.metadata.get("agent_id") == "AGT-005"]


def call_for(deps: Deps, contact_id: str) -> ModelRequest:
    """The latest AGT-005 request about ``contact_id`` (read back as the model read it)."""
    mine = [r for r in agent_calls(deps) if parse(r.messages).entity("contact")["id"] == contact_id]
    return mine[-1]


def outbox(deps: Deps) -> list[dict[str, Any]]:
    with deps.db.transaction(ORG) as cur:
        return fetch_all(
            cur,
            "SELECT approval_item_id, sequence_step, subject, status, send_error FROM outbox"
            " ORDER BY created_at",
        )


@pytest.mark.covers("fn:send", "fn:campaign-resume")
def test_an_email_a_linkedin_task_and_a_threaded_follow_up_as_written(
    deps: Deps, smtp: SmtpServer
) -> None:
    library(deps, THREE_STEPS)
    launch(deps)
    first = items(deps, 1)[0]
    contact = first["contact"]
    told = parse(call_for(deps, contact).messages)
    assert "Sequence step: 1  |  Channel: email" in told.task
    assert FIRST_ASK in told.task  # the step's guidance, as the org wrote it
    assert first["kind"] == "outbound_message" and first["payload"]["channel"] == "email"
    assert first["payload"]["body"].split("\n\n")[1].endswith(FIRST_ASK)  # the model used it

    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    (sent,) = run_tasks(deps, SEND_QUEUE)
    assert sent["status"] == "sent" and sent["next_step"] == 2
    (due,) = tasks(deps, SEQUENCE_QUEUE).values()
    assert due.delay_seconds == 2 * DAY  # the LinkedIn step's own delay

    before = len(agent_calls(deps))
    assert run_tasks(deps, SEQUENCE_QUEUE) == [{"handed_to": "AGT-005", "step": 2}]
    (linkedin,) = items(deps, 2)
    payload = linkedin["payload"]
    assert linkedin["kind"] == "sequence_task" and payload["channel"] == "linkedin"
    assert payload["to"] is None and payload["subject"].startswith("LinkedIn: ")
    assert payload["guidance"] == "Connect with a short note, no pitch."
    (call_2,) = agent_calls(deps)[before:]
    told = parse(call_2.messages)
    assert "Sequence step: 2  |  Channel: linkedin" in told.task
    assert "Connect with a short note, no pitch." in told.task
    thread = told.entity("thread")  # what step 1 said, as sent
    assert [(t["step"], t["channel"], t["outcome"]) for t in thread] == [(1, "email", "sent")]
    assert thread[0]["subject"] == first["payload"]["subject"]
    assert thread[0]["text"] == first["payload"]["body"]
    # a task is never queued to send, nor can it be (its applier refuses another channel)
    assert tasks(deps, SEND_QUEUE) == {} and len(outbox(deps)) == 1
    with deps.db.transaction(ORG) as cur, pytest.raises(ValidationFailed, match="never emailed"):
        sending.queue_approved(deps, cur, ORG, linkedin["id"], payload)

    # on /overview: a task card, done or skipped, with what a person needs to do it
    cards = approval_queue.pending_cards(deps, ORG, kind="sequence_task", detail=True)["items"]
    (card,) = cards
    assert card["detail"]["labels"] == {"approve": "Done", "reject": "Skip"}
    assert card["detail"]["channel"] == "linkedin" and card["detail"]["step"] == 2
    assert card["detail"]["body"] == payload["body"] and "to" not in card["detail"]
    assert card["detail"]["checks"][0]["ok"], card["detail"]["checks"]

    approval.decide(deps, ORG, linkedin["id"], "approve", actor=PERSON)  # the person did it
    assert [(e, a) for e, a, _ in effects(deps, linkedin["id"])] == [
        ("decision", "approve"),
        ("effect", "task_done"),
        ("effect", "sequence_advanced"),
    ]
    moved = effects(deps, linkedin["id"])[-1][2]
    assert (moved["task"], moved["next_step"]) == ("done", 3)
    assert tasks(deps, SEND_QUEUE) == {}
    (due,) = tasks(deps, SEQUENCE_QUEUE).values()
    assert due.delay_seconds == 3 * DAY

    before = len(agent_calls(deps))
    run_tasks(deps, SEQUENCE_QUEUE)
    (third,) = items(deps, 3)
    (call_3,) = agent_calls(deps)[before:]
    thread = parse(call_3.messages).entity("thread")
    assert [(t["step"], t["channel"], t["outcome"]) for t in thread] == [
        (1, "email", "sent"),
        (2, "linkedin", "done"),
    ]
    assert thread[1]["text"] == payload["body"]  # the follow-up knows the note was sent too
    assert third["kind"] == "outbound_message"
    assert third["payload"]["subject"] == "Re: " + first["payload"]["subject"]
    assert LAST_ASK in third["payload"]["body"]
    approval.decide(deps, ORG, third["id"], "approve", actor=PERSON)
    assert run_tasks(deps, SEND_QUEUE)[0]["sequence"] == "completed"
    assert enrolled(deps, contact)["status"] == "completed"

    # at the SMTP server: the two emails, the second threaded under the first; no LinkedIn
    one, two = (m.message for m in smtp.received)
    assert two["Subject"] == "Re: " + one["Subject"]
    assert two["In-Reply-To"] == one["Message-ID"]
    assert two["References"].split() == [one["Message-ID"]]
    assert all(payload["body"] not in m.raw.decode() for m in smtp.received)


def test_a_skipped_call_moves_the_sequence_on_and_no_approval_covers_a_task(
    deps: Deps, smtp: SmtpServer
) -> None:
    library(
        deps,
        sequence(
            "T1",
            step("email", 0, "Open on the signal."),
            step("call", 1, "A ten-minute call about the signal."),
            step("email", 2, "Reply in the thread with one proof point."),
        ),
    )
    with deps.db.transaction(ORG) as cur:  # one approval of step 1 covers the later emails
        cur.execute("UPDATE org_settings SET sequence_approval = 'once' WHERE org_id = %s", (ORG,))
    launch(deps, contacts=2)
    first = items(deps, 1)[0]
    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    run_tasks(deps, SEND_QUEUE)
    run_tasks(deps, SEQUENCE_QUEUE)
    (call,) = items(deps, 2)  # still waiting: a person makes the call, or chooses not to
    talking = call["payload"]["body"].splitlines()
    assert call["kind"] == "sequence_task" and call["payload"]["subject"].startswith("Call: ")
    assert len(talking) == 3 and all(line.startswith("- ") for line in talking)
    assert not call["payload"]["body"].startswith("Hi ")  # points to say, not a letter

    approval.decide(deps, ORG, call["id"], "reject", actor=PERSON, reason="out of office")
    assert enrolled(deps, first["contact"])["status"] == "active"  # skipped, not stopped
    moved = effects(deps, call["id"])[-1]
    assert moved[:2] == ("effect", "sequence_advanced") and moved[2]["task"] == "skipped"
    before = len(agent_calls(deps))
    run_tasks(deps, SEQUENCE_QUEUE)
    thread = parse(agent_calls(deps)[before].messages).entity("thread")
    assert [(t["channel"], t["outcome"]) for t in thread] == [
        ("email", "sent"),
        ("call", "skipped"),
    ]
    assert items(deps, 3) == []  # the email step was covered by the step-1 approval
    (sent,) = run_tasks(deps, SEND_QUEUE)
    assert sent["status"] == "sent" and sent["sequence"] == "completed"
    assert len(smtp.received) == 2


@pytest.mark.parametrize("t2_library", [True, False], ids=["own-sequence", "campaign-default"])
def test_each_contact_is_written_in_the_tier_agt004_decided(deps: Deps, t2_library: bool) -> None:
    own = sequence("T2", step("email", 0, "Tier two opener."), step("email", 4, "Tier two next."))
    library(deps, THREE_STEPS, *([own] if t2_library else []))
    launch(deps)
    drafts = items(deps, 1)
    assert {d["icp_tier"] for d in drafts} == {"T1", "T2"}  # the demo qualifies both
    for draft in drafts:
        decided = draft["icp_tier"]
        assert draft["payload"]["tier"] == decided  # not the campaign's T1
        told = parse(call_for(deps, draft["contact"]).messages)
        assert f"Tier: {decided}" in told.task
        walked = "T2" if decided == "T2" and t2_library else "T1"
        guidance = "Tier two opener." if walked == "T2" else FIRST_ASK
        assert guidance in told.task
        assert enrolled(deps, draft["contact"]) == {
            "tier": decided,
            "sequence_tier": None if walked == decided else walked,
            "step": 1,
            "steps": 2 if walked == "T2" else 3,
            "status": "active",
            "stop_reason": None,
        }


def test_a_message_whose_tier_disagrees_is_refused_before_sending(
    deps: Deps, smtp: SmtpServer
) -> None:
    library(deps, THREE_STEPS)
    launch(deps, contacts=1)
    (first,) = items(deps, 1)
    wrong = "T3" if first["payload"]["tier"] != "T3" else "T4"
    with deps.db.transaction(ORG) as cur:  # as a draft queued in another tier would carry
        cur.execute(
            "UPDATE approval_items SET payload = payload || %s::jsonb WHERE id = %s",
            (json.dumps({"tier": wrong}), first["id"]),
        )
    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    (result,) = run_tasks(deps, SEND_QUEUE)
    assert result["status"] == "refused"
    assert wrong in result["reason"] and first["icp_tier"] in result["reason"]
    (row,) = outbox(deps)  # kept, never sent, not retried, and says why
    assert (row["status"], row["send_error"]) == ("suppressed", f"refused: {result['reason']}")
    refused = [d for e, a, d in effects(deps, first["id"]) if a == "message_refused"]
    assert refused and refused[0]["reason"] == result["reason"]
    assert enrolled(deps, first["contact"])["stop_reason"] == "refused: tier"
    assert tasks(deps, SEQUENCE_QUEUE) == {} and smtp.received == []


def test_the_org_context_carries_the_sequence_and_the_deal_stage(deps: Deps) -> None:
    library(deps, THREE_STEPS)
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(cur, "SELECT id FROM contacts WHERE external_id = 'P-001'")  # D-002
        walked = sequences.library(cur, "Signal", "T1")
    contact, known = known_signals(deps, ORG, load_contact(deps, ORG, row["id"]))
    envelope = HandoffEnvelope(
        parent_run_id="run-ctx",
        downstream_agent="message-generator",
        entity_ids=[row["id"]],
        angle="Signal",
        tier="T1",
    )
    task = {
        "angle": "Signal",
        "tier": "T1",
        "step": 1,
        "channel": "email",
        "guidance": walked.step(1).guidance,
        "competitors": [],
    }
    request = assembly_request(
        deps,
        ORG,
        "run-ctx",
        "AGT-005",
        envelope,
        {"contact": contact},
        task,
        signals=known,
        sequence=walked.as_context(),
    )
    org = request.org
    assert org.deal_stage == "discovery"
    assert [(s.step, s.channel, s.delay_days) for s in org.sequence_library] == [
        (1, "email", 0),
        (2, "linkedin", 2),
        (3, "email", 3),
    ]
    assembled = assemble(request, budgets=load_budgets(), counter=counter_for("gpt-4o"))
    assert parse(assembled.messages).entity("deal") == {"stage": "discovery"}


def test_guidance_and_the_thread_fit_agt005s_budgets() -> None:
    """The longest guidance the contract allows fits the task section beside three
    competitors, even counted as an estimate (x1.1); a longer one is refused where it is
    written. A thread over the entity budget loses its oldest steps, never its newest."""
    budgets = load_budgets()
    words = "Reply in the thread with one quantified proof point from a comparable customer. "
    guidance = (words * 10)[:GUIDANCE_CHARS]
    task = {
        "angle": "PatternBreak",
        "tier": "T3",
        "step": 12,
        "channel": "linkedin",
        "guidance": guidance,
        "competitors": ["CareSpace Analytics", "FacilityIQ", "LeaseLogic Health"],
    }
    from colony.context.assembler import AssemblyRequest
    from colony.contracts import OrgContext

    contact = {"id": "c-1", "name": "Dana Whitfield", "title": "VP Real Estate"}
    body = "Hi Dana,\n\n" + "One sentence about the expansion and what it means. " * 6
    thread = [
        {"id": f"o-{n}", "step": n, "channel": "email", "subject": f"S{n}", "text": body}
        for n in range(1, 12)
    ]
    request = AssemblyRequest(
        "AGT-005", "org", "run", OrgContext(), (), {"contact": contact}, (), task, thread=thread
    )
    for model in ("gpt-4o", "gemini-2.5-pro"):
        counter = counter_for(model)
        out = assemble(request, budgets=budgets, counter=counter)
        assert out.account["task"] <= budgets.for_profile("AGT-005").task, model
        assert guidance in out.messages[-1].content
        kept = parse(out.messages).entity("thread")
        assert 1 <= len(kept) < len(thread) and kept[-1]["step"] == 11  # the newest stays
        assert [t["step"] for t in kept] == list(range(12 - len(kept), 12))  # oldest went
        assert out.trimmed["thread_dropped"] == len(thread) - len(kept)
        assert [e["name"] for e in out.provenance["entities"]].count("thread") == len(kept)
    too_long = step("email", 0, "x" * (GUIDANCE_CHARS + 1))
    with pytest.raises(ValueError, match="guidance"):
        SequenceLibrary.model_validate({"sequences": [sequence("T1", too_long)]})


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"channel": "fax"}, "channel"),
        ({"delay_days": -1}, "delay_days"),
        ({"guidance": "g" * (GUIDANCE_CHARS + 1)}, "guidance"),
    ],
)
def test_the_demo_library_is_checked_by_the_same_contract(
    change: dict[str, Any], named: str
) -> None:
    rows = [
        {"angle": "Signal", "tier": "T1", "step": 1, "delay_days": 0, "guidance": "Open."},
        {"angle": "Signal", "tier": "T1", "step": 2, "delay_days": 3, "guidance": "Follow."},
    ]
    assert [s.name for s in sequence_library(rows).sequences] == ["Signal T1"]
    rows[1] |= change
    with pytest.raises(ValidationFailed, match=named):
        sequence_library(rows)


def test_the_table_refuses_a_negative_delay_whoever_writes_it(testdb: PgDB) -> None:
    conn = testdb.owner_connection()
    cur = conn.cursor()
    cur.execute("INSERT INTO organizations (id, name) VALUES ('org_d', 'D')")
    conn.commit()
    with pytest.raises(Exception, match="sequences_delay_days_check"):
        cur.execute(
            "INSERT INTO sequences (org_id, angle, tier, step, delay_days, guidance, channel)"
            " VALUES ('org_d', 'Signal', 'T1', 1, -2, 'x', 'email')"
        )
    conn.rollback()
    with pytest.raises(Exception, match="sequences_channel_check"):
        cur.execute(
            "INSERT INTO sequences (org_id, angle, tier, step, delay_days, guidance, channel)"
            " VALUES ('org_d', 'Signal', 'T1', 1, 0, 'x', 'fax')"
        )
    conn.rollback()
    conn.close()
