"""True streaming in the chat turn: the model's own deltas reach the client as they arrive.

The turn runs in-process (``run_turn``) on the real embedded PostgreSQL, its model the real
OpenAI or Gemini adapter through the official SDK's streaming API, talking HTTP to the wire
stand-in (``colony.testing.wire``), which streams real-shaped SSE chunks. The sink is the
client: what it hears live must be exactly what a replay of the session's log gives, ids
included, whether the turn answers, calls a tool or dies mid-answer.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import replace
from typing import Any

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.flows.chat import create_session, run_turn
from colony.flows.chat import events as ev
from colony.flows.chat.turn_io import AnswerDeltas
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.llm.partial_json import FieldText
from colony.llm.runner import StructuredRunner
from colony.local.chat_demo import answer_text
from colony.settings import Settings
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.wire import (
    Route,
    WireServer,
    gemini_content_stream,
    openai_chat_stream,
)
from tests.conftest import PgDB

pytestmark = [
    pytest.mark.usefixtures("no_ambient_config"),
    pytest.mark.covers("AGT-001", "ENT-008"),
]

ORG = "org_stream"
ANSWER = 'Pipeline: 3 deals — "Acme" leads.\nNext: call P-004 \\ today 😀'


def _stream(provider: str, text: str | None = None, **kwargs: Any) -> Any:
    if provider == "openai":
        return openai_chat_stream(text, **kwargs)
    calls = kwargs.pop("tool_calls", ())
    return gemini_content_stream(text, function_calls=calls, **kwargs)


def _answers(server: WireServer, provider: str, *replies: Any) -> None:
    """The model's next streamed answers, in order (on the streaming route only: Gemini's
    token counter asks the same server too)."""
    queue = deque(replies)
    path = (
        r"/v1/chat/completions"
        if provider == "openai"
        else r"/v1(?:alpha|beta)?/models/[^/:]+:streamGenerateContent"
    )
    server.add_route(Route.of("test.answers", "POST", path, lambda _: queue.popleft()))


def _cut(reply: Any, keep: int) -> Any:
    """The stream dying after ``keep`` events: no finish, no usage, no [DONE]."""
    return replace(reply, events=reply.events[:keep])


def _turn(db: Any, server: WireServer, provider: str, message: str) -> tuple[list, list]:
    env = {"COLONY_LLM_PROVIDER": provider}
    if provider == "openai":
        env |= {"OPENAI_API_KEY": "sk-test", "COLONY_OPENAI_BASE_URL": server.openai_base_url}
    else:
        env |= {"GEMINI_API_KEY": "g-test", "COLONY_GEMINI_BASE_URL": server.gemini_base_url}
    settings = Settings.from_env(env)
    llm = llm_from_settings(settings, db)
    # The runner's own back-off, shortened: a retry here is the subject, not a wait.
    llm = replace(llm, runner=StructuredRunner(llm.chat, base_delay=0.001))
    deps = local_deps(
        settings, db, InlineTransport(), llm, KnowledgeStore(db, OfflineHashEmbedder())
    )
    session = create_session(deps, ORG, "founder")
    live: list[ev.Event] = []
    run_turn(deps, ORG, "founder", session, message, sink=live.extend)
    with db.transaction(ORG) as cur:
        stored = ev.after(cur, session, 0)
    return live, stored


@pytest.fixture
def db(testdb: PgDB) -> Any:
    db = testdb.app()
    with db.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'Streamers')", (ORG,))
    return db


def _same(live: list[ev.Event], stored: list[ev.Event]) -> None:
    assert [(e.seq, e.type, e.data) for e in live] == [(e.seq, e.type, e.data) for e in stored]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_the_answer_streams_as_the_model_writes_it(db: Any, provider: str) -> None:
    with WireServer() as server:
        _answers(server, provider, _stream(provider, json.dumps({"answer": ANSWER})))
        live, stored = _turn(db, server, provider, "How is the pipeline?")
        [sent] = server.requests_to("test.answers")
    if provider == "openai":
        assert sent.body["stream"] is True and sent.body["stream_options"]["include_usage"]
    else:
        assert sent.path.endswith(":streamGenerateContent") and sent.query["alt"] == ["sse"]
    deltas = [e for e in live if e.type == "delta"]
    # The stand-in sends 5 characters a chunk: the answer arrives in many deltas, each as
    # its chunk came (escapes decoded, nothing re-cut), before the turn is done.
    assert len(deltas) > 10 and answer_text(live) == ANSWER
    assert live[0].type == "accepted" and live[-1].type == "done"
    assert live[-1].data["status"] == "completed"
    _same(live, stored)  # a replay from 0 is exactly what was heard live


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_streamed_tool_call_is_assembled_and_run(db: Any, provider: str) -> None:
    with WireServer() as server:
        _answers(
            server,
            provider,
            _stream(provider, None, tool_calls=[("list_approvals", {"limit": 3})]),
            _stream(provider, json.dumps({"answer": "The queue is empty."})),
        )
        live, stored = _turn(db, server, provider, "Show the approval queue")
    types = [e.type for e in live]
    assert types[:3] == ["accepted", "tool_call", "tool_result"], types
    assert live[1].data["name"] == "list_approvals" and live[1].data["arguments"] == {"limit": 3}
    assert live[2].data["ok"] is True and answer_text(live) == "The queue is empty."
    _same(live, stored)


def test_a_stream_that_dies_is_retried_without_repeating_what_was_shown(db: Any) -> None:
    whole = openai_chat_stream(json.dumps({"answer": ANSWER}))
    with WireServer() as server:
        _answers(server, "openai", _cut(whole, 12), whole)  # a drop mid-answer, then a retry
        live, stored = _turn(db, server, "openai", "How is the pipeline?")
        assert len(server.requests_to("test.answers")) == 2
    assert answer_text(live) == ANSWER
    assert not any(e.data.get("reset") for e in live), "the retry repeated the shown text"
    assert "".join(e.data["text"] for e in live if e.type == "delta") == ANSWER
    _same(live, stored)


def test_a_turn_that_dies_mid_answer_keeps_what_it_streamed_in_the_log(db: Any) -> None:
    cut = _cut(openai_chat_stream(json.dumps({"answer": ANSWER})), 12)
    with WireServer() as server:
        _answers(server, "openai", *[cut] * 4)  # every attempt dies mid-answer
        live, stored = _turn(db, server, "openai", "How is the pipeline?")
    types = [e.type for e in live]
    assert "delta" in types and types[-2:] == ["error", "done"]
    assert live[-2].data["error"]["code"] == "provider_unavailable"
    # The deltas the client saw are in the log under the ids it saw, before the error: a
    # client reconnecting with any of them replays the rest, nothing missed or repeated.
    _same(live, stored)


# -- the pieces, without a database -------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
def test_the_answer_field_is_decoded_from_any_cut_of_the_json(size: int) -> None:
    for doc in ({"answer": ANSWER}, {"other": {"answer": "no"}, "answer": ANSWER, "n": [1]}):
        for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False)):
            reader = FieldText("answer")
            got = "".join(reader.feed(text[i : i + size]) for i in range(0, len(text), size))
            assert got == ANSWER
    assert FieldText("answer").feed('{"answer": 42, "x": "y"}') == ""
    assert FieldText("answer").feed("not json at all") == ""


class _Heard:
    """The turn's side of ``AnswerDeltas``: what it streamed."""

    def __init__(self) -> None:
        self.deltas: list[tuple[str, bool]] = []

    def stream_delta(self, text: str, *, reset: bool = False) -> None:
        self.deltas.append((text, reset))


def test_a_new_attempt_sends_only_what_goes_past_the_shown_text_or_replaces_it() -> None:
    heard = _Heard()
    deltas = AnswerDeltas(heard)  # type: ignore[arg-type]
    deltas.feed('{"answer": "Hello wor')
    deltas.restart()
    for piece in ('{"answer": "Hel', "lo world", ', friend"}'):
        deltas.feed(piece)
    assert heard.deltas == [("Hello wor", False), ("ld", False), (", friend", False)]
    assert deltas.closing("Hello world, friend") == []
    deltas.restart()
    deltas.feed('{"answer": "Goodbye"}')
    assert heard.deltas[-1] == ("Goodbye", True)
    assert deltas.closing("Goodbye!") == [("delta", {"text": "Goodbye!", "reset": True})]
