"""Flow 3: Drive push → transcript in GCS → AGT-006 two passes → AGT-007 follow-up.

Real parts: embedded PostgreSQL, the GCS emulator through the real adapter, a local server
speaking Drive v3's REST shapes, the offline provider. The LLM port is wrapped by a spy that
records each request (and can hold calls until several are in flight) — the only stand-in,
because no real model runs here.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from colony.adapters.drive import HttpDrive, drive_from_settings
from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.offline.prompt import parse
from colony.adapters.rest import RestClient
from colony.context.tokens import counter_for
from colony.errors import ProviderError, TemplateError, Unauthorized, ValidationFailed
from colony.flows.recordings import drive as drive_flow
from colony.flows.recordings import drive_folders, recording, transcripts
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.llm.runner import StructuredRunner
from colony.local.demo import DEMO_DIR, load_demo
from colony.runtime.faults import Faults
from colony.settings import Settings
from colony.store import claims, fetch_all, fetch_one
from colony.store.recordings import drive_channels
from colony.testing.drive_server import DriveServer, push_headers
from colony.testing.fakes import RecordingSleep
from colony.testing.inline import InlineTransport, local_deps, run_until_idle
from colony.testing.smtp_server import SmtpServer
from colony.webhooks import org_from_token, watch_token
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("ENT-006")

ORG = "org_zoomprop_demo"
SECRET = "drive-channel-secret"
FOLDER = "meetnotes01"
TITLE = "Mercy Ridge Health <> ZoomProp | Discovery Call"
TRANSCRIPT = (DEMO_DIR / "transcripts" / "discovery_mercy_ridge.txt").read_bytes()


class SpyModel:
    """Wraps the offline model: records requests and counts calls in flight.

    ``together=n`` holds the first ``n`` calls until all ``n`` are in flight at once (a
    barrier, not a sleep): it fails, rather than passes by luck, if they cannot be."""

    def __init__(self, inner, together: int = 0, fail: Exception | None = None) -> None:
        self.inner = inner
        self.fail = fail  # raised by every call: a provider that keeps failing
        self.requests: list = []
        self.active = self.peak = 0
        self._lock = threading.Lock()
        self._barrier = threading.Barrier(together) if together else None
        self._to_hold = together

    def request(self, request):
        with self._lock:
            self.requests.append(request)
            self.active += 1
            self.peak = max(self.peak, self.active)
            hold = self._to_hold > 0
            self._to_hold -= 1 if hold else 0
        try:
            if hold and self._barrier is not None:
                self._barrier.wait(timeout=30)
            if self.fail is not None:
                raise self.fail
            return self.inner.request(request)
        finally:
            with self._lock:
                self.active -= 1


@pytest.fixture
def world(testdb: PgDB, gcs):
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    add_channel(db, "chan-1")
    with DriveServer(page_size_cap=2) as drive_server:

        def make(
            parallelism: int = 4,
            faults: Faults | None = None,
            together: int = 0,
            fail: Exception | None = None,
        ):
            settings = Settings.from_env(
                {
                    "COLONY_DRIVE_CHANNEL_TOKEN": SECRET,
                    "COLONY_DRIVE_BASE_URL": drive_server.url,
                    "COLONY_RECORDING_PARALLELISM": str(parallelism),
                }
            )
            base = llm_from_settings(settings, db)
            spy = SpyModel(base.chat, together, fail)
            llm = replace(base, chat=spy, runner=StructuredRunner(spy))
            deps = local_deps(
                settings, db, InlineTransport(), llm, knowledge, blobs=gcs.store, faults=faults
            )
            return deps, spy

        yield make, drive_server, db


def add_channel(db, channel_id: str, folder: str = FOLDER) -> None:
    """The channel a watch created (``flows.recordings.drive_channels.watch``), as it stores it,
    with the folder bound to the org as the watch's proof left it
    (``flows.recordings.drive_folders``)."""
    expires = datetime.now(UTC) + timedelta(days=400)  # past every clock the tests use
    with db.transaction(ORG) as cur:
        claims.claim(cur, ORG, drive_folders.KIND, folder, drive_folders.METHOD, "u1")
        drive_channels.add(cur, channel_id, ORG, folder, f"res-{folder}", expires)


def notify(
    deps, number: int, token: str | None = None, state: str = "update", folder: str = FOLDER
):
    headers = push_headers(
        channel_id="chan-1",
        token=token or watch_token(SECRET, ORG, FOLDER),
        message_number=number,
        folder_id=folder,
        state=state,
    )
    drive = drive_from_settings(deps.settings)
    try:
        return drive_flow.ingest(deps, headers, drive)
    finally:
        drive.close()


def rows(db, sql: str, params=()):
    with db.transaction(ORG) as cur:
        return fetch_all(cur, sql, params)


@pytest.mark.covers("AGT-006", "AGT-007", "ENT-011")
def test_transcript_to_signals_summary_approvals_and_follow_up(world) -> None:
    make, drive, db = world
    deps, spy = make()
    drive.add_file(FOLDER, "doc-1", TITLE, TRANSCRIPT)
    drive.add_file(FOLDER, "vid-1", "Recording.mp4", b"\x00\x01", mime_type="video/mp4")
    assert notify(deps, 1, state="sync") == {"status": "sync"}
    first = notify(deps, 2)
    assert first["status"] == "accepted" and len(first["recordings"]) == 1
    stats = run_until_idle(deps, deps.transport)
    assert stats.retried == 0 and not stats.rejected and stats.delivered == 2

    rec = rows(db, "SELECT * FROM recordings")[0]
    assert rec["status"] == "processed" and rec["transcript_uri"].startswith("gs://")
    assert deps.blobs.get(f"transcripts/{ORG}/doc-1.txt") == TRANSCRIPT  # really in GCS
    assert rec["chunk_count"] >= 5 and rec["transcript_tokens"] > 9000
    types = {s["type"] for s in rec["signals"]}
    assert {"budget_signals", "timeline_signals", "objection_signals"} <= types
    assert all(s["chunks"] and s["quote"] in TRANSCRIPT.decode() for s in rec["signals"])
    assert len(rec["summary"]) > 50

    items = rows(db, "SELECT kind, source_agent, payload FROM approval_items ORDER BY kind")
    kinds = [i["kind"] for i in items]
    assert "deal_update" in kinds and "follow_up" in kinds and "kc_update_candidate" in kinds
    deal = next(i["payload"] for i in items if i["kind"] == "deal_update")
    assert set(deal) == {"deal_id", "changes", "source"} and deal["source"] == {
        "recording_id": rec["id"]
    }
    assert deal["deal_id"] == rec["deal_id"] and set(deal["changes"]) <= {
        "stage",
        "value",
        "next_action",
        "close_date",
    }
    follow = next(i["payload"] for i in items if i["kind"] == "follow_up")
    assert follow["to"] and "LeaseLogic" not in follow["body"]  # CONST-006: no competitor

    # No single LLM call receives the whole transcript; every pass-1 call is one chunk.
    text = TRANSCRIPT.decode()
    for request in spy.requests:
        prompt = "\n".join(m.content for m in request.messages)
        assert text[1000:-1000] not in prompt
    pass1 = [r for r in spy.requests if r.output_name == "call_signals"]
    assert len(pass1) == rec["chunk_count"]
    tokens = counter_for(deps.llm.model)
    chunks = [parse(r.messages).field_text("chunk") or "" for r in pass1]
    assert all(chunks) and max(map(tokens.count, chunks)) <= recording.chunk_tokens(deps)
    budget = deps.llm.budgets.for_profile("AGT-006/pass1")
    calls = rows(db, "SELECT agent_id, context_budget_used FROM llm_calls")
    for call in calls:
        if call["agent_id"] == "AGT-006":
            assert call["context_budget_used"]["task"] <= max(budget.task, 1500)

    # Replays: the same message is a duplicate; a later message finds the file known.
    assert notify(deps, 2) == {"status": "duplicate"}
    assert notify(deps, 3)["recordings"] == []
    assert not deps.transport.pending and len(rows(db, "SELECT id FROM recordings")) == 1


def test_wrong_channel_token_and_malformed_notifications(world) -> None:
    make, _drive, db = world
    deps, _ = make()
    with pytest.raises(Unauthorized):
        notify(deps, 1, token=watch_token("another-secret", ORG, FOLDER))
    with pytest.raises(Unauthorized):
        notify(deps, 1, token=f"org_other.{watch_token(SECRET, ORG, FOLDER).split('.')[-1]}")
    with pytest.raises(Unauthorized):
        org_from_token(SECRET, None, FOLDER)
    with pytest.raises(Unauthorized):  # no folder named: nothing to verify the token for
        org_from_token(SECRET, watch_token(SECRET, ORG, FOLDER), None)
    assert rows(db, "SELECT id FROM recordings") == []


def test_a_token_for_one_orgs_folder_cannot_read_another_orgs_folder(world) -> None:
    """X-Goog-Resource-URI is unauthenticated: org A's valid token sent with org B's folder
    in the URI must not list B's folder (read with our Drive credentials) into org A."""
    make, drive, db = world
    deps, _ = make()
    drive.add_file("org-b-folder", "b-doc", "Org B board call", TRANSCRIPT)
    with pytest.raises(Unauthorized):
        notify(deps, 1, folder="org-b-folder")  # ORG's token for FOLDER, B's folder
    assert drive.requests_to("drive.files.list") == []  # B's folder was never listed
    assert rows(db, "SELECT id FROM recordings") == [] and not deps.transport.pending
    # The same token with the folder it was issued for is accepted.
    assert notify(deps, 2)["status"] == "accepted"


def test_a_contact_with_a_blank_company_does_not_claim_every_call(world) -> None:
    """The call's deal is the open deal whose contact's company the title names; an empty
    company is a substring of every title and must not make the match ambiguous."""
    make, drive, db = world
    deps, _ = make()
    with db.transaction(ORG) as cur:
        cur.execute(
            "WITH c AS (INSERT INTO contacts (org_id, name, company) VALUES (%s, 'No Co', '')"
            " RETURNING id) INSERT INTO deals (org_id, contact_id, name, stage)"
            " SELECT %s, id, 'Unnamed', 'discovery' FROM c",
            (ORG, ORG),
        )
    drive.add_file(FOLDER, "doc-1", TITLE, TRANSCRIPT)
    notify(deps, 1)
    [rec] = rows(
        db,
        "SELECT c.company FROM recordings r JOIN deals d ON d.id = r.deal_id"
        " JOIN contacts c ON c.id = d.contact_id",
    )
    assert rec["company"] == "Mercy Ridge Health"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"   \n\n  ", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50, "binary"),
        (b"\xff\xfe\xfa not utf-8", "not UTF-8"),
        (("[00:00:01] Dana: we reviewed the budget again. " * 13_000).encode(), "tokens"),
    ],
)
def test_bad_transcripts_fail_visibly_without_llm_calls_or_retries(
    world, content: bytes, reason: str
) -> None:
    make, drive, db = world
    deps, spy = make()
    drive.add_file(FOLDER, "bad-1", "Broken notes", content, mime_type="text/plain")
    notify(deps, 1)
    stats = run_until_idle(deps, deps.transport)
    assert stats.retried == 0 and stats.dead_letters == [] and stats.rejected == []
    rec = rows(db, "SELECT status, error FROM recordings")[0]
    assert rec["status"] == "failed" and reason in rec["error"]
    assert spy.requests == []  # nothing was sent to a model
    assert rows(db, "SELECT id FROM approval_items") == []


QUOTE = TRANSCRIPT.decode()[200:400]


@pytest.mark.parametrize(
    ("error", "attempts", "reason"),
    [
        # retried until the last attempt, then dead-lettered
        (
            ProviderError(f"the provider choked on {QUOTE}"),
            3,
            "gave up after 3 delivery attempts: ProviderError (provider_error)",
        ),
        # ours to fix (an InternalError): retried like an upstream failure, never rejected
        (
            TemplateError(f"template 'x' is missing {QUOTE}"),
            3,
            "gave up after 3 delivery attempts: TemplateError (template_error)",
        ),
        # a caller error is acknowledged at once and never retried
        (
            ValidationFailed(f"the provider refused {QUOTE}"),
            1,
            "rejected, not retried: ValidationFailed (validation_failed)",
        ),
    ],
)
def test_a_recording_whose_analysis_ends_for_good_is_failed_not_left_processing(
    world, error: Exception, attempts: int, reason: str
) -> None:
    """A delivery that will never run again must leave the recording ``failed`` with a
    reason naming the error's type and code, never its text (which may quote the call)."""
    make, drive, db = world
    deps, spy = make(fail=error)
    drive.add_file(FOLDER, "doc-1", TITLE, TRANSCRIPT)
    notify(deps, 1)
    stats = run_until_idle(deps, deps.transport, max_attempts=3)
    assert len(stats.dead_letters) + len(stats.rejected) == 1
    assert len({r.output_name for r in spy.requests}) == 1  # pass 1 only, every attempt
    rec = rows(db, "SELECT status, error, summary FROM recordings")[0]
    assert rec == {"status": "failed", "error": reason, "summary": None}
    assert stats.delivered == 0 and stats.retried == (attempts if attempts > 1 else 0)
    assert not deps.transport.pending  # no follow-up for a failed recording
    assert rows(db, "SELECT id FROM approval_items") == []


def test_an_exhausted_pubsub_delivery_fails_the_recording_over_real_functions(
    testdb: PgDB, gcs, tmp_path: Path
) -> None:
    """The real edge: the local transport pushes Pub/Sub envelopes (with ``deliveryAttempt``)
    to the recording-intelligence server, whose provider (an OpenAI wire stand-in) answers
    every call 400. After the topic's last attempt the message is dead-lettered and the
    recording reads ``failed``, not ``processing``."""
    from colony.adapters.dead_letters import DbDeadLetters
    from colony.adapters.transport_local import LocalTransport
    from colony.contracts.events import RecordingReceived
    from colony.local.functions import FunctionServers
    from colony.registry.functions import AGENT_TOPICS, TOPICS
    from colony.testing.wire import Route, WireServer, error_reply
    from tests.conftest import APP_ROLE

    db = testdb.app()
    topic = AGENT_TOPICS["AGT-006"]
    limit = TOPICS[topic].max_delivery_attempts
    uri = gcs.store.put(f"transcripts/{ORG}/doc-1.txt", TRANSCRIPT, "text/plain; charset=utf-8")
    with db.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'ZoomProp')", (ORG,))
        recording_id = fetch_one(
            cur,
            "INSERT INTO recordings (org_id, source_file_id, title, transcript_uri, status)"
            " VALUES (%s, 'doc-1', %s, %s, 'received') RETURNING id",
            (ORG, TITLE, uri),
        )["id"]
    with WireServer() as wire:
        wire.add_route(
            Route.of("refuse", "POST", r"/v1/chat/completions", lambda _: error_reply(400))
        )
        env = {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_TRANSPORT": "local",
            "COLONY_DATA_DIR": str(tmp_path),
            "COLONY_LLM_PROVIDER": "openai",
            "OPENAI_API_KEY": "sk-local",
            "COLONY_OPENAI_BASE_URL": wire.openai_base_url,
            **gcs.env,
        }
        names = ["recording-intelligence"]
        sink = DbDeadLetters(db)
        with (
            FunctionServers(env, names, log_dir=tmp_path) as servers,
            LocalTransport(
                servers.urls, max_attempts=limit, backoff=(0.01, 0.02), dead_letter=sink
            ) as transport,
        ):
            event = RecordingReceived(org_id=ORG, recording_id=recording_id)
            transport.publish(topic, event.model_dump_json().encode(), {"org_id": ORG})
            assert transport.drain(120)
        assert wire.requests_to("refuse")  # the provider really was called, and refused
    [letter] = transport.dead_letters
    assert letter.attempts == limit and sink.unrecorded == []
    assert [r["attempts"] for r in rows(db, "SELECT attempts FROM dead_letters")] == [limit]
    rec = rows(db, "SELECT status, error FROM recordings")[0]
    assert rec["status"] == "failed"
    # the provider's own reason, as its error body gave it (issue 37 item 6)
    assert rec["error"] == (
        f"gave up after {limit} delivery attempts: ProviderError (provider_error): "
        "invalid_request_error: INVALID_ARGUMENT: 400: scripted 400 Bad Request"
    )


def test_oversized_download_is_recorded_as_failed_at_the_webhook(world, monkeypatch) -> None:
    make, drive, db = world
    deps, _ = make()
    monkeypatch.setattr(drive_flow, "MAX_TRANSCRIPT_BYTES", 10_000)
    drive.add_file(FOLDER, "big-1", TITLE, b"a line of talk. " * 2_000, mime_type="text/plain")
    assert notify(deps, 1)["recordings"] == []
    rec = rows(db, "SELECT status, error, transcript_uri FROM recordings")[0]
    assert rec["status"] == "failed" and "larger than" in rec["error"]
    assert rec["transcript_uri"] is None and not deps.transport.pending


def test_pass1_chunks_are_durable_steps_and_parallelism_is_bounded(world) -> None:
    make, drive, db = world
    deps, spy = make(
        parallelism=3,
        faults=Faults(frozenset({"recording-intelligence.after_chunk"})),
        together=3,  # the first three pass-1 calls must all be in flight at once
    )
    drive.add_file(FOLDER, "doc-1", TITLE, TRANSCRIPT)
    notify(deps, 1)
    stats = run_until_idle(deps, deps.transport, max_attempts=20)
    rec = rows(db, "SELECT status, chunk_count FROM recordings")[0]
    assert rec["status"] == "processed"
    assert stats.retried >= 1  # the injected crashes forced redeliveries...
    pass1 = [r for r in spy.requests if r.output_name == "call_signals"]
    assert len(pass1) == rec["chunk_count"]  # ...yet no finished chunk was recomputed
    assert len([r for r in spy.requests if r.output_name == "call_summary"]) == 1
    assert spy.peak == 3  # parallel, and never past the configured bound


def test_split_overlaps_so_a_boundary_signal_is_read_whole() -> None:
    tokens = counter_for("gpt-4o")
    filler = "[00:00:01] Tomas: We walked the Westerville building with the contractor today.\n"
    signal = (
        "[00:05:00] Dana: Our CFO needs to approve anything over two hundred thousand"
        " dollars a year before the board meeting in March.\n"
    )
    text = filler * 12 + signal + filler * 12
    chunks = transcripts.split(text, tokens, max_tokens=220, overlap=60)
    assert len(chunks) >= 3 and all(c.tokens <= 220 for c in chunks)
    assert all(b.start < a.end for a, b in itertools.pairwise(chunks))  # overlap
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    holding = [c.index for c in chunks if signal.strip() in c.text]
    assert holding  # the signal line is whole in at least one chunk
    # One enormous sentence: cut by tokens, yet the overlap hands its cut words on.
    long = "budget " * 400 + "and the CFO signs off in March."
    cut = transcripts.split(long, tokens, max_tokens=100, overlap=30)
    assert all(c.tokens <= 100 for c in cut) and "CFO signs off in March." in cut[-1].text
    assert all(b.start < a.end for a, b in itertools.pairwise(cut))
    # Speaker turns longer than the overlap (a monologue): the next chunk still starts with
    # the previous chunk's last ~overlap tokens, cut inside the turn at a word boundary.
    turn = "[00:01:00] Dana: " + "We reviewed the budget and the CFO wants numbers. " * 14 + "\n"
    assert tokens.count(turn) > 120
    text = turn * 40
    monologue = transcripts.split(text, tokens, max_tokens=1500, overlap=120)
    assert len(monologue) >= 3 and all(c.tokens <= 1500 for c in monologue)
    for a, b in itertools.pairwise(monologue):
        carried = tokens.count(text[b.start : a.end]) if b.start < a.end else 0
        assert 60 <= carried <= 120, (a.index, carried)
        assert text[b.start - 1].isspace()  # cut between words, never inside one
    # The same quote seen by two chunks is one signal with both chunks as provenance.
    merged = transcripts.aggregate(
        [
            [{"type": "budget_signals", "quote": "Our CFO needs to approve it", "confidence": 0.8}],
            [
                {
                    "type": "budget_signals",
                    "quote": "Our  CFO needs to approve it",
                    "confidence": 0.9,
                },
                {
                    "type": "timeline_signals",
                    "quote": "before the board meeting",
                    "confidence": 0.9,
                },
            ],
        ]
    )
    assert len(merged) == 2 and merged[0]["chunks"] == [0, 1] and merged[0]["confidence"] == 0.9


def test_drive_client_paginates_and_honours_retry_after() -> None:
    with DriveServer(page_size_cap=2) as server:
        for n in range(5):
            server.add_file("f1", f"doc-{n}", f"Call {n}", f"[00:00:0{n}] A: hi.".encode())
        server.add_file("f2", "elsewhere", "Other", b"x")
        sleep = RecordingSleep()
        drive = HttpDrive(RestClient("Drive", server.url, lambda: "t", sleep=sleep))
        server.rate_limit(times=2, retry_after=3)
        files = list(drive.list_folder("f1"))
        assert [f.id for f in files] == [f"doc-{n}" for n in range(5)]
        assert sleep.delays == [3.0, 3.0]
        lists = server.requests_to("drive.files.list")
        assert [r.query.get("pageToken") for r in lists[2:]] == [None, ["2"], ["4"]]
        assert all(r.header("authorization") == "Bearer t" for r in lists)
        assert "'f1' in parents" in lists[-1].query["q"][0]
        assert drive.download_text(files[0], 1000) == b"[00:00:00] A: hi."
        assert server.requests[-1].path == "/drive/v3/files/doc-0/export"
        drive.close()


@pytest.mark.covers("fn:drive-webhook", "fn:recording-intelligence", "fn:follow-up")
def test_recording_over_real_functions(testdb: PgDB, gcs, tmp_path: Path) -> None:
    """drive-webhook → recording-intelligence → follow-up as functions-framework servers,
    the local transport pushing Pub/Sub envelopes between them; then approve the follow-up."""
    from colony.local.functions import FunctionServers
    from colony.local.tokens import mint_local_token
    from tests.conftest import APP_ROLE, wait_for

    db = testdb.app()
    load_demo(db, KnowledgeStore(db, OfflineHashEmbedder()), say=lambda _: None)
    add_channel(db, "c1")
    with DriveServer() as drive:
        drive.add_file(FOLDER, "doc-1", TITLE, TRANSCRIPT)
        env = {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_TRANSPORT": "local",
            "COLONY_DATA_DIR": str(tmp_path),
            "COLONY_DRIVE_CHANNEL_TOKEN": SECRET,
            "COLONY_DRIVE_BASE_URL": drive.url,
            "COLONY_APPROVAL_TOKEN_KEY": "k",
            **gcs.env,
        }
        names = ["drive-webhook", "recording-intelligence", "follow-up", "approval", "send"]
        names.append("delivery-events")  # its /unsubscribe is every message's link
        with (
            SmtpServer() as smtp,
            FunctionServers({**env, **smtp.env()}, names, log_dir=tmp_path) as servers,
            httpx.Client() as http,
        ):
            url = servers.urls["drive-webhook"]
            ok = push_headers(
                channel_id="c1",
                token=watch_token(SECRET, ORG, FOLDER),
                message_number=7,
                folder_id=FOLDER,
            )
            bad = http.post(url, headers={**ok, "X-Goog-Channel-Token": f"{ORG}.deadbeef"})
            assert bad.status_code == 401 and bad.json()["error"]["code"] == "unauthorized"
            reply = http.post(url, headers=ok, timeout=30)
            assert reply.status_code == 200 and len(reply.json()["recordings"]) == 1
            assert http.post(url, headers=ok, timeout=30).json() == {"status": "duplicate"}
            item = wait_for(
                lambda: next(
                    iter(rows(db, "SELECT id FROM approval_items WHERE kind = 'follow_up'")), None
                ),
                what="the follow-up draft",
            )
            assert rows(db, "SELECT status FROM recordings")[0]["status"] == "processed"
            auth = {"Authorization": f"Bearer {mint_local_token(tmp_path, ORG)}"}
            decided = http.post(
                servers.urls["approval"],
                headers=auth,
                timeout=30,
                json={"item_id": item["id"], "action": "approve"},
            )
            assert decided.status_code == 200 and decided.json()["status"] == "applied"
            # the approved follow-up is sent, once, to the deal's contact
            (got,) = wait_for(lambda: smtp.received, what="the follow-up at the SMTP server")
    outbox = rows(db, "SELECT subject, contact_id, to_address, status FROM outbox")
    assert len(outbox) == 1 and outbox[0]["contact_id"] and outbox[0]["subject"].startswith("Recap")
    assert (
        got.rcpt_tos == (outbox[0]["to_address"],)
        and got.message["Subject"] == outbox[0]["subject"]
    )
