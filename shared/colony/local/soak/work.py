"""The soak's other work, beside the campaigns: a recording (a Meet transcript landing in
the first org's watched Drive folder: AGT-006, then AGT-007's follow-up draft), Notion edits
(the demo's pages edited in the first org's workspace: re-embedded into the Knowledge
Core) and chat turns (two in one session, by each org's person), as ``make run``'s
knowledge and chat steps make them, through the same stand-ins and webhooks.

Each is an HTTP request to a function, made again until it is answered 2xx (Drive and
Notion redeliver a failed notification; a person asks again), so a server killed under one
delays it and loses nothing. ``check`` reads the outcome from the database and the streams.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from colony.local.chat_demo import post_turn
from colony.local.knowledge_demo import (
    DRIVE_SECRET,
    FOLDER,
    NOTION_SECRET,
    bind_demo_folder,
    connect_demo_workspace,
    notion_pages,
)
from colony.settings import Settings
from colony.store import Database
from colony.store import soak as rows
from colony.testing.drive_server import push_headers
from colony.testing.notion_server import signed_headers, webhook_event
from colony.webhooks import watch_token

QUESTIONS = ("What does our pipeline look like?", "Which prospects replied this week?")


@dataclass
class Work:
    urls: dict[str, str]
    tokens: dict[str, str]  # org → its person's bearer token
    first_org: str
    due: list[tuple[str, Callable[[httpx.Client], bool]]] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    failures: int = 0
    sessions: dict[str, str] = field(default_factory=dict)

    @classmethod
    def plan(
        cls, settings: Settings, db: Database, urls: dict[str, str], tokens: dict[str, str]
    ) -> Work:
        first = next(iter(tokens))
        connect_demo_workspace(settings, db, first)
        bind_demo_folder(db, first)
        work = cls(urls, tokens, first)
        work.due.append(("recording", work._drive_push))
        for page in notion_pages()["pages"]:
            work.due.append((f"notion:{page['id']}", work._notion_edit(page)))
        for org in tokens:
            for n, question in enumerate(QUESTIONS):
                work.due.append((f"chat:{org}:{n}", work._turn(org, question)))
        return work

    def _drive_push(self, http: httpx.Client) -> bool:
        headers = push_headers(
            channel_id="demo-channel",
            token=watch_token(DRIVE_SECRET, self.first_org, FOLDER),
            message_number=1,
            folder_id=FOLDER,
        )
        return http.post(self.urls["drive-webhook"], headers=headers).status_code < 300

    def _notion_edit(self, page: dict[str, Any]) -> Callable[[httpx.Client], bool]:
        def edit(http: httpx.Client) -> bool:
            body = webhook_event(page["id"], parent_database=page["database"])
            headers = signed_headers(NOTION_SECRET, body)
            return http.post(self.urls["notion-webhook"], content=body, headers=headers).is_success

        return edit

    def _turn(self, org: str, question: str) -> Callable[[httpx.Client], bool]:
        def ask(http: httpx.Client) -> bool:
            session, events = post_turn(
                http, self.urls["chat"], self.tokens[org], question, self.sessions.get(org)
            )
            self.sessions[org] = session
            return any(e.type == "done" for e in events)

        return ask

    def step(self, http: httpx.Client) -> None:
        """Make each request not yet answered once more (in order: a session's turns)."""
        waiting = []
        blocked: set[str] = set()
        for name, act in self.due:
            group = name.rsplit(":", 1)[0]
            if group in blocked:
                waiting.append((name, act))
                continue
            try:
                ok = act(http)
            except httpx.HTTPError:
                ok = False
            if ok:
                self.done.append(name)
            else:
                self.failures += 1
                waiting.append((name, act))
                blocked.add(group)
        self.due = waiting

    def settled(self, db: Database) -> bool:
        if self.due:
            return False
        with db.transaction(self.first_org) as cur:
            outcome = rows.other_work(cur)
        return outcome["recording"] in ("processed", "failed") and outcome[
            "notion_pages_embedded"
        ] >= len(notion_pages()["pages"])

    def check(self, db: Database) -> dict[str, Any]:
        with db.transaction(self.first_org) as cur:
            outcome = rows.other_work(cur)
        pages = len(notion_pages()["pages"])
        turns = sum(1 for n in self.done if n.startswith("chat:"))
        return {
            "ok": not self.due
            and outcome["recording"] == "processed"
            and outcome["notion_pages_embedded"] >= pages
            and turns == len(self.tokens) * len(QUESTIONS),
            **outcome,
            "chat_turns": turns,
            "requests_made_again": self.failures,
            "unanswered": [n for n, _ in self.due],
        }
