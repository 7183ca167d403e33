"""AGT-001's ``research_company`` (issue 33 item 1): the chat only proposes research.

Through the chat flow as the other chat tests drive it (real PostgreSQL, the offline model
choosing the tool from the rendered prompt, the in-process transport holding Cloud Tasks):
the call is held as a ``tool_action`` item and queues nothing; a person's approval queues
one task on ``colony-research`` in that person's name; a rejection, another org or a value
that names no company queues nothing. And the functions that apply it carry no reader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from colony.contracts.research import ResearchTask
from colony.deploy.imports import SharedPackage, import_graph
from colony.errors import NotFound, ValidationFailed
from colony.flows.approvals import approval
from colony.flows.chat import create_session, run_turn
from colony.registry.functions import RESEARCH_QUEUE
from colony.runtime.deps import Deps
from colony.store import fetch_all
from colony.testing.inline import InlineTransport
from tests.conftest import PgDB
from tests.test_content_onboarding import make_deps

pytestmark = pytest.mark.covers("AGT-001", "ENT-008")

REPO = Path(__file__).resolve().parents[1]
ORG = "org_zoomprop_demo"
OTHER = "org_research_other"
ASKER = "user_asker"  # who chats
APPROVER = "user_approver"  # who decides the held card


@dataclass
class Chat:
    deps: Deps
    transport: InlineTransport
    session: str

    def turn(self, message: str) -> list[Any]:
        events: list[Any] = []
        run_turn(self.deps, ORG, ASKER, self.session, message, sink=events.extend)
        return events

    def rows(self, sql: str, params: tuple = (), org: str = ORG) -> list[dict[str, Any]]:
        with self.deps.db.transaction(org) as cur:
            return fetch_all(cur, sql, params)

    def research_tasks(self) -> list[ResearchTask]:
        return [
            ResearchTask.model_validate(json.loads(t.body))
            for t in self.transport.tasks.values()
            if t.queue == RESEARCH_QUEUE
        ]

    def results(self, name: str) -> list[dict[str, Any]]:
        sql = (
            "SELECT data FROM chat_events WHERE session_id = %s AND type = 'tool_result' "
            "ORDER BY seq"
        )
        found = [r["data"] for r in self.rows(sql, (self.session,))]
        return [d for d in found if d["name"] == name]


@pytest.fixture
def chat(testdb: PgDB) -> Chat:
    deps = make_deps(testdb)  # the demo org, the offline model, the in-process transport
    with deps.db.transaction(OTHER) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'Other')", (OTHER,))
    assert isinstance(deps.transport, InlineTransport)
    return Chat(deps, deps.transport, create_session(deps, ORG, ASKER))


def held(events: list[Any]) -> dict[str, Any]:
    """The held action's card, once the turn paused on it."""
    assert [e.type for e in events][-3:] == ["tool_call", "approval_required", "done"], events
    assert events[-1].data["status"] == "paused"
    card: dict[str, Any] = events[-2].data["approval"]
    return card


def answered(events: list[Any]) -> str:
    return "".join(e.data["text"] for e in events if e.type == "delta")


def as_person(user_id: str) -> approval.Actor:
    return approval.Actor(user_id, "ui")


def test_research_is_held_until_a_person_approves_it_then_queued_once_in_their_name(
    chat: Chat,
) -> None:
    events = chat.turn("research brightsmile.com")
    card = held(events)
    # The offline model chose the tool from the prompt; the card shows the domain to be read.
    assert card["tool"] == "research_company"
    assert card["arguments"] == {"domain": "brightsmile.com", "force": False}
    (item,) = chat.rows(
        "SELECT kind, status, payload FROM approval_items WHERE id = %s", (card["id"],)
    )
    assert (item["kind"], item["status"]) == ("tool_action", "pending")
    assert item["payload"]["requested_by"] == ASKER
    assert chat.research_tasks() == [] and chat.rows("SELECT 1 FROM research_jobs") == []
    assert chat.results("research_company") == []

    decided = approval.decide(chat.deps, ORG, card["id"], "approve", actor=as_person(APPROVER))
    assert decided["status"] == "applied"
    (task,) = chat.research_tasks()
    assert (task.org_id, task.domain, task.pass_no) == (ORG, "brightsmile.com", 1)
    (job,) = chat.rows("SELECT domain, status, requested_by FROM research_jobs")
    assert job == {"domain": "brightsmile.com", "status": "running", "requested_by": APPROVER}
    (result,) = chat.results("research_company")
    assert result["ok"] and result["result"] == {
        "domain": "brightsmile.com",
        "state": "started",
        "force": False,
    }
    resumed = chat.rows(
        "SELECT type, data FROM chat_events WHERE session_id = %s AND turn_id <> %s ORDER BY seq",
        (chat.session, events[0].turn_id),
    )
    text = "".join(r["data"]["text"] for r in resumed if r["type"] == "delta")
    assert "Research of brightsmile.com: started" in text
    assert resumed[-1]["data"]["status"] == "completed"

    again = approval.decide(chat.deps, ORG, card["id"], "approve", actor=as_person(APPROVER))
    assert again["changed"] is False
    assert len(chat.research_tasks()) == 1 and len(chat.results("research_company")) == 1

    # Asked again while that pass runs: joined, not started twice.
    card = held(chat.turn("look up https://www.BrightSmile.com/about"))
    assert card["arguments"]["domain"] == "brightsmile.com"
    approval.decide(chat.deps, ORG, card["id"], "approve", actor=as_person(APPROVER))
    assert len(chat.research_tasks()) == 1
    assert chat.results("research_company")[-1]["result"]["state"] == "running"


def test_a_rejected_or_foreign_decision_queues_nothing(chat: Chat) -> None:
    card = held(chat.turn("look up acme.example's website"))
    assert card["arguments"]["domain"] == "acme.example"

    # Another org's admin cannot see the item, let alone approve it (the org's RLS scope).
    with pytest.raises(NotFound):
        approval.decide(chat.deps, OTHER, card["id"], "approve", actor=as_person("other_admin"))
    status = "SELECT status FROM approval_items WHERE id = %s"
    assert chat.rows(status, (card["id"],)) == [{"status": "pending"}]
    assert chat.research_tasks() == []

    rejected = approval.decide(chat.deps, ORG, card["id"], "reject", actor=as_person(APPROVER))
    assert rejected["status"] == "rejected"
    assert chat.research_tasks() == [] and chat.rows("SELECT 1 FROM research_jobs") == []
    assert chat.results("research_company") == []
    assert chat.rows(status, (card["id"],)) == [{"status": "rejected"}]


def test_a_person_may_edit_only_the_domain_and_only_to_a_company(chat: Chat) -> None:
    card = held(chat.turn("research brightsmile.com"))
    item = card["id"]

    def edit(arguments: dict[str, Any]) -> dict[str, Any]:
        edited = {"arguments": {**card["arguments"], **arguments}}
        actor = as_person(APPROVER)
        return approval.decide(chat.deps, ORG, item, "edit", actor=actor, edited=edited)

    with pytest.raises(ValidationFailed, match="force of research_company cannot be edited"):
        edit({"force": True})
    for bad in ("http://169.254.169.254/latest/meta-data", "metadata.google.internal"):
        with pytest.raises(ValidationFailed, match="names no company domain"):
            edit({"domain": bad})
    assert chat.research_tasks() == []

    assert edit({"domain": "https://brightsmile.org/"})["status"] == "applied"
    (task,) = chat.research_tasks()
    assert task.domain == "brightsmile.org"
    (job,) = chat.rows("SELECT domain, requested_by FROM research_jobs")
    assert job == {"domain": "brightsmile.org", "requested_by": APPROVER}


@pytest.mark.parametrize(
    "message",
    [
        "research http://127.0.0.1/",
        "research http://localhost:8080/",
        "research metadata.google.internal",
        "look up http://169.254.169.254/latest/meta-data",
    ],
)
def test_what_names_no_company_is_refused_at_the_call_with_no_item(
    chat: Chat, message: str
) -> None:
    events = chat.turn(message)
    types = [e.type for e in events]
    assert "approval_required" not in types and events[-1].data["status"] == "completed"
    call = next(e.data for e in events if e.type == "tool_call")
    assert call["name"] == "research_company"  # the model asked; the argument check refused
    error = next(e.data["error"] for e in events if e.type == "error")
    assert error["code"] == "invalid_tool_arguments"
    assert "names no company domain" in error["message"]
    assert "could not run research_company" in answered(events)
    assert chat.rows("SELECT 1 FROM approval_items WHERE kind = 'tool_action'") == []
    assert chat.research_tasks() == []


@pytest.mark.parametrize("function", ["chat", "approval"])
def test_the_functions_that_apply_it_ask_for_research_without_the_reader(function: str) -> None:
    """Either function decides a held action, so either runs the tool: its bundle carries
    ``flows.research.requests`` but not the runner, the reader or its parsers."""
    graph = import_graph(REPO / "functions" / function / "main.py", SharedPackage(REPO / "shared"))
    assert "colony.flows.research.requests" in graph.modules
    reader = {m for m in graph.modules if m.split(".")[:2] == ["colony", "research"]}
    assert reader == set() and "colony.flows.research.runner" not in graph.modules
    third_party = {name.split(".")[0] for name in graph.external}
    assert not third_party & {"trafilatura", "lxml", "pypdf", "feedparser", "htmldate"}
