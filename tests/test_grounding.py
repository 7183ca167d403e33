"""Grounding enforced (issue 15 item 4): verbatim quotes, CONST-006 on AGT-007 and on edits.

Real parts: embedded PostgreSQL, the GCS emulator, the Drive stand-in and the offline
provider (``tests.test_drive_recording``'s world). The one stand-in beyond them is
``Inventing``: it wraps the offline model and adds a quote no transcript contains, as a
model that paraphrases or invents would; no real model runs here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from colony.contracts.admin import OrgSettingsReplace
from colony.contracts.outputs import OutboundMessage
from colony.errors import DataMissing, ValidationFailed
from colony.flows.approvals import approval
from colony.flows.campaigns import enrichment
from colony.flows.recordings import recording
from colony.flows.tenants import org_admin
from colony.llm.runner import StructuredRunner
from colony.policy.grounding import verbatim
from colony.policy.outbound import signal_matches
from colony.store import fetch_one
from colony.testing.hostile import RecordingTracer
from tests.conftest import PgDB
from tests.test_content_onboarding import make_deps
from tests.test_drive_recording import FOLDER, TITLE, TRANSCRIPT, notify, rows, world
from tests.test_offline_llm import MODEL, outbound_context
from tests.test_offline_llm import request as offline_request

__all__ = ["world"]  # the fixture, shared with the recording flow's own tests

ORG = "org_zoomprop_demo"
PERSON = approval.Actor("user_founder", "ui")
INVENTED = "We have already signed a twelve million dollar budget for this."


class Inventing:
    """The offline model, plus one invented quote in every pass-1 answer and the first real
    quote re-spaced (a line break where the transcript has a space: still verbatim)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def request(self, request: Any) -> Any:
        response = self.inner.request(request)
        if request.output_name != "call_signals":
            return response
        data = json.loads(response.text)
        if data["signals"]:
            first = data["signals"][0]
            first["quote"] = first["quote"].replace(" ", "\n  ", 1)
        data["signals"].append({"type": "budget_signals", "quote": INVENTED, "confidence": 0.9})
        return replace(response, text=json.dumps(data))


def test_verbatim_keeps_respaced_quotes_and_counts_the_rest() -> None:
    source = "Our budget is\n  about $400k.  We sign in March."
    signals = [
        {"type": "budget_signals", "quote": "Our budget is about $400k.", "confidence": 0.8},
        {"type": "timeline_signals", "quote": "we sign in march.", "confidence": 0.6},
        {"type": "budget_signals", "quote": "   ", "confidence": 0.6},
    ]
    kept, dropped = verbatim(signals, source)
    assert [s["quote"] for s in kept] == ["Our budget is about $400k."]
    assert dropped == 2  # case matters in a quote; a blank quote quotes nothing


@pytest.mark.covers("ENT-006", "CONST-004")  # AGT-006 through its recording
def test_a_quote_the_transcript_lacks_is_dropped_and_counted(world) -> None:
    make, drive, db = world
    deps, spy = make()
    spy.inner = Inventing(spy.inner)
    tracer = RecordingTracer()  # what reaches each call's trace after it (Tracer.annotate)
    deps = replace(deps, llm_deps=replace(deps.llm, tracer=tracer))
    drive.add_file(FOLDER, "doc-1", TITLE, TRANSCRIPT)
    notify(deps, 1)
    recording_id = rows(db, "SELECT id FROM recordings")[0]["id"]
    outcome = recording.analyse(deps, ORG, str(recording_id), "evt-grounding")
    rec = rows(db, "SELECT signals, chunk_count FROM recordings")[0]
    assert outcome["status"] == "processed"
    assert outcome["quotes_dropped"] == rec["chunk_count"]  # one invented per chunk
    calls = rows(
        db,
        "SELECT DISTINCT call_id FROM llm_calls WHERE provenance->'template'->>'name'"
        " = 'recording_pass1'",
    )
    assert sorted(tracer.annotations) == sorted(
        (c["call_id"], {"quotes_dropped": 1}) for c in calls
    )
    assert len(calls) == rec["chunk_count"]
    quotes = [s["quote"] for s in rec["signals"]]
    assert INVENTED not in quotes and quotes
    text = " ".join(TRANSCRIPT.decode().split())
    assert all(" ".join(q.split()) in text for q in quotes)
    assert any("\n  " in q for q in quotes)  # re-spaced, yet verbatim: kept


@pytest.mark.covers("AGT-003", "CONST-004")
def test_agt003_quotes_are_checked_against_the_contact_data_it_was_given() -> None:
    """A quote names its source: the contact as imported (every text value, nested ones too,
    whitespace normalised; never a field this system wrote: its score, its earlier summary),
    or a stored page's passage by its ref, whose quote must be in that passage and whose
    signal then names the page's URL and the passage's date. A quote of fewer than three
    words, or no quote at all, is not one."""
    contact = {
        "name": "Dana Reyes",
        "icp_recommendation": "disqualify for now",
        "enrichment": {
            "recent_news": "Opened a second\n   clinic in Austin.",
            "summary": "Dana Reyes runs a growing clinic network.",
        },
        "signals": [{"detail": "Hiring three facility managers"}],
    }
    passages = [
        {
            "ref": "S1",
            "url": "https://reyes.example/news/funding",
            "published": "2026-10-01",
            "fetched": "2026-11-30",
            "text": "Reyes Health raised $40M in a Series C to open two clinics.",
        }
    ]
    found = [
        {"type": "hiring", "detail": "hiring", "quote": "Hiring three facility managers"},
        {"type": "expansion", "detail": "a clinic", "quote": "Opened a second clinic in Austin."},
        {
            "type": "funding",
            "detail": "raised",
            "quote": "raised $40M in a Series C",
            "source": "S1",
            "observed_on": "2020-01-01",
        },
        {"type": "funding", "detail": "raised", "quote": "Raised $40M in a Series C."},  # nowhere
        {
            "type": "funding",
            "detail": "raised",
            "quote": "raised $40M in a Series C",
            "source": "S9",
        },  # no such passage, and not the contact's words
        {"type": "expansion", "detail": "growing", "quote": "runs a growing clinic network"},
        {"type": "leadership_change", "detail": "x", "quote": "disqualify for now"},
        {"type": "expansion", "detail": "x", "quote": "Austin."},  # one word
        {"type": "tech_adoption", "detail": "moved to a new CAFM"},  # no quote
    ]
    kept, dropped = enrichment.grounded(found, contact, passages)
    assert [s["type"] for s in kept] == ["hiring", "expansion", "funding"]
    assert dropped == 6
    web = kept[2]
    assert web["source"] == "https://reyes.example/news/funding"
    assert web["observed_on"] == "2026-10-01"  # the passage's date, not the model's


@pytest.mark.covers("AGT-003", "CONST-006")
def test_agt003_keeps_signals_agt005_can_tell_apart() -> None:
    """AGT-005 must reference exactly one of a contact's signals (CONST-006), so AGT-003 keeps
    no two it would match to each other, the best ranked first: two postings of one job
    board in one city, an opening read in the feed and again on the news index, and (the
    cost) a company's short headlines, whose shared name makes CONST-006 read them as one.
    ``bench/research.py`` found drafts dead-lettered for each of these."""
    board = "http://api.ashbyhq.com/posting-api/job-board/prairievalley"
    details = [
        ("hiring", "Hiring a Facilities Project Manager in Spokane, WA.", board),
        ("hiring", "Hiring a Revenue Cycle Manager in Spokane, WA.", board),  # one to CONST-006
        ("hiring", "Hiring a Medical Assistant in Omaha, NE.", board),  # told apart: kept
        (
            "expansion",
            "Aspen Hill Medical Group opens a new clinic in Madison, WI · 2026-10-13",
            "",
        ),
        (
            "expansion",
            "Press release: Aspen Hill Medical Group opens a new clinic in Madison, WI (PDF)",
            "",
        ),
        ("funding", "Stone Park Imaging secures new funding", ""),
        ("expansion", "Stone Park Imaging opens a new clinic in Omaha, NE", ""),
    ]
    found = [{"type": t, "detail": d, "quote": d, "source": u} for t, d, u in details]
    kept = [s["detail"] for s in enrichment.one_per_event(found)]
    assert kept == [details[i][1] for i in (0, 2, 3, 5)]
    for detail in kept:  # a draft naming any kept signal names exactly one
        assert sum(signal_matches(detail, other) for other in kept) == 1, detail


def _set_competitors(deps: Any, names: list[str]) -> None:
    current = org_admin.settings(deps, ORG)
    update = OrgSettingsReplace(competitors=names, sending=current["sending"])
    org_admin.replace_settings(deps, ORG, update)


def _message_item(deps: Any, kind: str) -> tuple[str, str]:
    """A pending ``kind`` item for a demo contact with signals, and that contact's first
    signal."""
    with deps.db.transaction(ORG) as cur:
        contact = fetch_one(
            cur,
            "SELECT id, signals FROM contacts WHERE jsonb_array_length(signals) > 1"
            " ORDER BY external_id LIMIT 1",
        )
        signal = str(contact["signals"][0]["detail"])
        payload = {
            "subject": "A quick question",
            "body": f"Hi Dana,\n\nI saw {signal}. Could we talk?\n\nBest,\nMarcus",
            "angle_used": "Signal",
            "signal_referenced": signal,
            "tier": "T1",
            "to": "dana@example.com",
        }
        row = fetch_one(
            cur,
            "INSERT INTO approval_items (org_id, kind, source_agent, payload, subject_id)"
            " VALUES (%s, %s, 'AGT-005', %s::jsonb, %s) RETURNING id",
            (ORG, kind, json.dumps(payload), contact["id"]),
        )
    return str(row["id"]), signal


@pytest.mark.covers("ENT-011", "CONST-006")
@pytest.mark.parametrize("kind", ["outbound_message", "follow_up"])
def test_an_edit_is_held_to_the_orgs_competitor_list(testdb: PgDB, kind: str) -> None:
    deps = make_deps(testdb)
    _set_competitors(deps, ["Rivalry Spaces"])
    item, signal = _message_item(deps, kind)
    body = f"Hi Dana,\n\nI saw {signal}. Unlike Rivalry Spaces, we start fast.\n\nBest,\nMarcus"
    with pytest.raises(ValidationFailed, match="names competitor 'Rivalry Spaces'"):
        approval.decide(deps, ORG, item, "edit", actor=PERSON, edited={"body": body})
    four = " ".join(f"Sentence {n} is here." for n in range(4))
    long_body = f"Hi Dana,\n\nI saw {signal}. {four}\n\nBest,\nMarcus"
    with pytest.raises(ValidationFailed, match="sentences"):  # the T1 / T3 sentence limits
        approval.decide(
            deps, ORG, item, "edit", actor=PERSON, edited={"body": long_body + " " + four}
        )
    fine = f"Hi Dana,\n\nI saw {signal}. Could we talk on Tuesday?\n\nBest,\nMarcus"
    result = approval.decide(deps, ORG, item, "edit", actor=PERSON, edited={"body": fine})
    assert result["status"] == "applied"


@pytest.mark.covers("ENT-011", "CONST-006")
def test_an_edited_outbound_message_must_still_reference_one_of_its_signals(
    testdb: PgDB,
) -> None:
    deps = make_deps(testdb)
    item, _signal = _message_item(deps, "outbound_message")
    body = "Hi Dana,\n\nWe help hospitals plan their space. Could we talk?\n\nBest,\nMarcus"
    with pytest.raises(ValidationFailed, match="does not reference the signal"):
        approval.decide(deps, ORG, item, "edit", actor=PERSON, edited={"body": body})


@pytest.mark.covers("CONST-004")
def test_a_missing_data_answer_is_data_missing_naming_the_fields_not_a_repair() -> None:
    """The real offline model, sent an AGT-005 prompt whose contact has no name, answers
    ``missing_data``; the runner makes that ``DataMissing`` after one call, never a repair."""
    context = outbound_context("P-001")
    context["contact"].pop("name")
    calls: list[Any] = []

    class Counting:
        def request(self, request: Any) -> Any:
            calls.append(request)
            return MODEL.request(request)

    with pytest.raises(DataMissing, match=r"contact\.name") as raised:
        StructuredRunner(Counting()).run(
            offline_request("outbound_message", context), OutboundMessage
        )
    assert raised.value.fields == ("contact.name",) and raised.value.code == "missing_data"
    assert len(calls) == 1
