"""The people in the soak: each org's person deciding its approval queue, and the
recipients who reply or unsubscribe.

The person acts as one does in /overview: a POST to the approval function with the bearer
token of a person of that org (signed with the local key pair, as Clerk's are verified);
never a model, never the database. Per item, a seeded draw: most are approved, a share is
rejected and a share left waiting (the person never gets to them). A click that meets a
dead server or a 5xx is made again on the next round, as a person clicks again.

Recipients read what the SMTP server received: a share reply (the reply reaches
``replies.ingest`` as the org's mailbox poll hands it over) and a share use the one-click
``List-Unsubscribe`` link (an HTTP POST to the delivery-events function, RFC 8058).
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import httpx

from colony.flows.outbound import replies
from colony.local.tokens import mint_local_token
from colony.ports import InboundMail
from colony.runtime.deps import Deps
from colony.store import Database
from colony.store import soak as rows
from colony.testing.smtp_server import Received, SmtpServer

PERSON = "soak-person"
Decision = Literal["approve", "reject", "wait"]


@dataclass
class People:
    db: Database
    deps: Deps
    approval_url: str
    tokens: dict[str, str]  # org → a person's bearer token
    smtp: SmtpServer
    seed: int
    reject_rate: float = 0.03
    wait_rate: float = 0.05
    reply_rate: float = 0.10
    unsubscribe_rate: float = 0.02
    decided: dict[str, Decision] = field(default_factory=dict)  # item → what the person did
    clicks: Counter[str] = field(default_factory=Counter)  # outcome of each click
    reacted: dict[str, str] = field(default_factory=dict)  # Message-ID → replied/unsubscribed
    failed_reactions: int = 0
    _seen: int = 0
    _client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=60))

    @classmethod
    def for_orgs(
        cls,
        db: Database,
        deps: Deps,
        approval_url: str,
        smtp: SmtpServer,
        orgs: list[str],
        seed: int,
    ) -> People:
        data_dir = deps.settings.data_dir
        tokens = {org: mint_local_token(data_dir, org, PERSON) for org in orgs}
        return cls(db, deps, approval_url, tokens, smtp, seed)

    def _decision(self, item_id: str) -> Decision:
        draw = random.Random(f"{self.seed}:person:{item_id}").random()
        if draw < self.wait_rate:
            return "wait"
        return "reject" if draw < self.wait_rate + self.reject_rate else "approve"

    def decide_queues(self, pool: ThreadPoolExecutor) -> int:
        """One look at every org's queue; each item not yet decided is decided (or left to
        wait). Returns how many clicks went through."""
        due: list[tuple[str, str, Decision]] = []
        for org in self.tokens:
            try:
                with self.db.transaction(org) as cur:
                    pending = rows.pending_items(cur)
            except Exception:  # the database restarting: the next look sees the queue
                self.clicks["queue_unreadable"] += 1
                continue
            for item in pending:
                decision = self.decided.get(item) or self._decision(item)
                if decision == "wait":
                    self.decided[item] = "wait"
                    continue
                due.append((org, item, decision))
        done = 0
        for _org, item, decision, ok in pool.map(lambda d: (*d, self._click(*d)), due):
            if ok:
                self.decided[item] = decision
                done += 1
        return done

    def _click(self, org: str, item: str, decision: Decision) -> bool:
        try:
            response = self._client.post(
                self.approval_url,
                json={"item_id": item, "action": decision},
                headers={"Authorization": f"Bearer {self.tokens[org]}"},
            )
        except httpx.HTTPError:
            self.clicks["no_answer"] += 1
            return False
        self.clicks[str(response.status_code)] += 1
        # 409: decided already (an earlier click went through before its answer was lost)
        return response.status_code in (200, 409)

    def react(self, say: Callable[[str], None]) -> None:
        """Recipients read what arrived since the last look (and retry what failed)."""
        received = self.smtp.received
        for message in received:
            mid = str(message.message["Message-ID"])
            if mid in self.reacted:
                continue
            draw = random.Random(f"{self.seed}:recipient:{mid}").random()
            if draw < self.unsubscribe_rate:
                ok = self._unsubscribe(message)
                what = "unsubscribed"
            elif draw < self.unsubscribe_rate + self.reply_rate:
                ok = self._reply(message)
                what = "replied"
            else:
                ok, what = True, "read"
            if ok:
                self.reacted[mid] = what
            else:
                self.failed_reactions += 1

    def _unsubscribe(self, message: Received) -> bool:
        link = str(message.message["List-Unsubscribe"]).strip("<>")
        try:
            response = self._client.post(link, data={"List-Unsubscribe": "One-Click"})
        except httpx.HTTPError:
            return False
        return response.status_code < 300

    def _reply(self, message: Received) -> bool:
        sent = message.message
        mid = str(sent["Message-ID"])
        reply = InboundMail(
            message_id=f"<reply-{hashlib.sha256(mid.encode()).hexdigest()[:24]}@soak.example>",
            sender=message.rcpt_tos[0],
            subject=f"Re: {sent['Subject']}",
            text="Sounds interesting, send me times next week.\n\n> earlier message\n",
            in_reply_to=mid,
        )
        try:
            replies.ingest(self.deps, reply, event_id=f"soak-reply-{mid}")
        except Exception:  # the database restarting: the recipient's mail is polled again
            return False
        return True

    def close(self) -> None:
        self._client.close()
