"""A real model's failure modes end a contact with an outcome that says what happened
(issue 15 item 3): a refusal is ``failed:refused:<the provider's reason>`` after one request,
an answer truncated twice is ``failed:truncated``, and neither is "not JSON"; a provider
failing every delivery is given up on at the last (issue 37 item 6).

Real parts: the campaign chain's flows on embedded PostgreSQL with the demo org, the OpenAI
SDK (the production adapter, ``COLONY_LLM_PROVIDER=openai``) over HTTP to the local wire
stand-in, which answers every other agent from the schema it is sent and refuses or
truncates one agent's contract. Stood in: the OpenAI API (``colony.testing.wire``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.flows.campaigns import campaign
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.llm.runner import StructuredRunner
from colony.local.demo import load_demo
from colony.settings import Settings
from colony.store import fetch_all
from colony.testing.inline import InlineTransport, local_deps, run_until_idle
from colony.testing.wire import Reply, Route, WireServer, error_reply, openai_chat_reply
from colony.testing.wire.openai import openai_chat_completions
from colony.testing.wire.replies import RecordedRequest
from tests.conftest import PgDB

ORG = "org_zoomprop_demo"
# What llama-cpp-python's server answered our response_format with (issue 37 item 4).
REFUSED_FORMAT = 'response_format type must be one of "text" or "json_object", but got: json_schema'


def contract_of(request: RecordedRequest) -> str:
    return str(request.body["response_format"]["json_schema"]["name"])


def answering(contract: str, failure: Callable[[], Reply]) -> Route:
    """The chat completions route: ``failure`` for ``contract``, the schema's sample else."""

    def respond(request: RecordedRequest) -> Reply:
        return failure() if contract_of(request) == contract else openai_chat_completions(request)

    return Route.of("openai.chat.completions", "POST", r"/v1/chat/completions", respond)


@dataclass
class Outcome:
    """What a campaign run of four demo contacts left, its model answering through ``route``."""

    done: list[dict[str, Any]]  # each contact's ``done:`` step output
    asked: list[RecordedRequest]  # the requests for the failing contract
    drafts: list[dict[str, Any]]
    status: list[dict[str, Any]]
    dead_letters: int


def run_campaign(testdb: PgDB, contract: str, failure: Callable[[], Reply]) -> Outcome:
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    with WireServer() as wire:
        wire.add_route(answering(contract, failure))
        settings = Settings.from_env(
            {
                "COLONY_LLM_PROVIDER": "openai",
                "OPENAI_API_KEY": "sk-test",
                "COLONY_OPENAI_BASE_URL": wire.openai_base_url,
            }
        )
        base = llm_from_settings(settings, db)
        llm = replace(base, runner=StructuredRunner(base.chat, sleep=lambda _: None))
        deps = local_deps(settings, db, InlineTransport(), llm, knowledge)
        with db.transaction(ORG) as cur:
            # the same four every run (ids are random UUIDs: ordered by them, a run could pick
            # four anti-ICP contacts and ask the model nothing); P-001 is never anti-ICP
            ids = [
                r["id"]
                for r in fetch_all(cur, "SELECT id FROM contacts ORDER BY external_id LIMIT 4")
            ]
        campaign_id = campaign.create_campaign(
            deps, ORG, name="Real model", angle="Signal", tier="T1", contact_ids=ids
        )
        run_id = campaign.launch(deps, ORG, campaign_id)
        stats = run_until_idle(deps, deps.transport)
        asked = [r for r in wire.requests if contract_of(r) == contract]
    with db.transaction(ORG) as cur:
        done = fetch_all(
            cur,
            "SELECT step_key, output FROM run_steps WHERE run_id = %s AND step_key LIKE 'done:%%'",
            (run_id,),
        )
        drafts = fetch_all(cur, "SELECT id FROM approval_items WHERE kind = 'outbound_message'")
        status = fetch_all(cur, "SELECT status FROM campaign_runs WHERE id = %s", (run_id,))
    outputs = [d["output"] for d in done]
    return Outcome(outputs, asked, drafts, status, len(stats.dead_letters))


@pytest.mark.parametrize(
    ("contract", "failure", "outcome", "calls_each"),
    [
        (
            "qualification_score",
            lambda: openai_chat_reply(None, refusal="I can't score this prospect."),
            "failed:refused:refusal",
            1,  # never retried, never repaired
        ),
        (
            "qualification_score",
            lambda: openai_chat_reply('{"total_score": 7', finish_reason="length"),
            "failed:truncated",
            2,  # once more with twice the cap, then truncated
        ),
    ],
)
def test_a_contact_whose_model_call_fails_ends_with_what_happened(
    testdb: PgDB,
    contract: str,
    failure: Callable[[], Reply],
    outcome: str,
    calls_each: int,
) -> None:
    run = run_campaign(testdb, contract, failure)
    outcomes = [d["outcome"] for d in run.done]
    assert len(outcomes) == 4  # every contact finished its chain
    # an anti-ICP match is decided by our rules before any model call; every other contact
    # was asked, and ended with what the model did
    failed = [o for o in outcomes if o != "anti_icp"]
    assert failed and set(failed) == {outcome}
    assert len(run.asked) == len(failed) * calls_each
    if calls_each == 2:  # the second ask had twice the first's cap
        caps = [r.body["max_completion_tokens"] for r in run.asked]
        assert sorted(set(caps)) == [caps[0], caps[0] * 2]
    assert run.drafts == []  # nothing was drafted from a refused or cut answer
    assert run.status == [{"status": "completed"}]  # the run still finishes


def test_a_contact_given_up_on_finishes_its_run_with_the_providers_reason(testdb: PgDB) -> None:
    """A provider that refuses every call with a 500 saying why (what llama-cpp-python's
    server answered our ``response_format`` with, issue 37 item 6): each call is made once
    (the body says the request is invalid: not worth a retry), the message is dead-lettered
    after the topic's five deliveries, and the contact is counted as finished on the last,
    with the provider's own words, instead of pending forever."""
    run = run_campaign(testdb, "prospect_enrichment", lambda: error_reply(500, REFUSED_FORMAT))
    given_up = [d for d in run.done if d["outcome"] != "anti_icp"]
    assert given_up and len(run.done) == 4  # every contact was counted
    assert run.dead_letters == len(given_up)  # still kept for inspection and replay
    assert len(run.asked) == len(given_up) * 5  # once per delivery, never retried within one
    for output in given_up:
        assert output["outcome"] == "failed:provider_error"
        assert output["reason"].startswith("gave up after 5 delivery attempts: ProviderError")
        assert "but got: json_schema" in output["reason"]
    assert run.status == [{"status": "completed"}]
