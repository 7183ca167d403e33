"""Secret resolution: the real google-cloud-secret-manager client (REST transport) against a
local server speaking Secret Manager's REST protocol, and the SECRETS declaration; and a
planted secret kept out of Sentry's error-category events (seed §8.2)."""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from colony.errors import ConfigError, ContextBudgetExceeded, ToolCallInvalid
from colony.llm.agent_call import call_agent, llm_from_settings
from colony.observability.sentry import init_sentry, shutdown_sentry
from colony.observability.telemetry import flush_telemetry
from colony.registry.functions import FUNCTIONS
from colony.registry.secrets import SECRETS
from colony.runtime import secret_manager
from colony.settings import Settings
from colony.testing.sentry_server import SentryServer
from colony.testing.wire import (
    RecordedRequest,
    Reply,
    Route,
    WireServer,
    error_reply,
    openai_chat_reply,
)
from tests.test_error_categories import content_request, tiny_budgets

PROJECT = "colony-test"
REPO = Path(__file__).resolve().parents[1]


class SecretStore:
    """The values a stand-in Secret Manager holds: secret id → latest value."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.denied: set[str] = set()

    def access(self, request: RecordedRequest) -> Reply:
        project, secret = request.params["project"], request.params["secret"]
        if secret in self.denied:
            return error_reply(403, f"Permission denied on {secret}")
        if project != PROJECT or secret not in self.values:
            return error_reply(404, f"Secret [{secret}] not found or has no versions.")
        data = self.values[secret].encode()
        name = f"projects/{project}/secrets/{secret}/versions/1"
        return Reply(200, {"name": name, "payload": {"data": base64.b64encode(data).decode()}})


@pytest.fixture
def store() -> Iterator[tuple[SecretStore, WireServer]]:
    values = SecretStore()
    route = Route.of(
        "secretmanager.access",
        "GET",
        r"/v1/projects/(?P<project>[^/]+)/secrets/(?P<secret>[^/]+)/versions/latest:access",
        values.access,
    )
    secret_manager.clear_cache()
    with WireServer(routes=[route]) as server:
        yield values, server
    secret_manager.clear_cache()


def deployed_env(server: WireServer, names: str) -> dict[str, str]:
    return {
        "COLONY_SECRETS": names,
        "COLONY_GCP_PROJECT": PROJECT,
        "COLONY_SECRET_MANAGER_ENDPOINT": server.base_url,
    }


def test_secrets_come_from_secret_manager_once_per_instance(store) -> None:
    values, server = store
    values.values.update(
        {
            "colony-openai-api-key": "sk-from-secret-manager",
            "colony-approval-token-key": "approval-key-123",
            "colony-sentry-dsn": "https://abc@sentry.example/1",
        }
    )
    env = deployed_env(server, "OPENAI_API_KEY, COLONY_APPROVAL_TOKEN_KEY,SENTRY_DSN")
    first = Settings.from_env(env)
    second = Settings.from_env(env)
    assert first.openai_api_key == second.openai_api_key == "sk-from-secret-manager"
    assert first.approval_token_key == "approval-key-123"
    assert first.sentry_dsn == "https://abc@sentry.example/1"
    assert first.gemini_api_key is None  # not listed: not fetched, not set
    requests = server.requests_to("secretmanager.access")
    # once per instance: the second settings object cost no request
    assert sorted(r.params["secret"] for r in requests) == [
        "colony-approval-token-key",
        "colony-openai-api-key",
        "colony-sentry-dsn",
    ]
    assert all(r.path.startswith(f"/v1/projects/{PROJECT}/") for r in requests)
    assert "sk-from-secret-manager" not in repr(first)


def test_a_secret_without_version_is_unset_and_a_forbidden_one_fails(store) -> None:
    values, server = store
    # no version yet: the setting stays unset, and the settings' own rules decide
    settings = Settings.from_env(deployed_env(server, "GEMINI_API_KEY,SENTRY_DSN"))
    assert settings.gemini_api_key is None and settings.sentry_dsn is None
    needed = {**deployed_env(server, "GEMINI_API_KEY"), "COLONY_LLM_PROVIDER": "gemini"}
    unset = Settings.from_env(needed)  # start-up passes; the model client, built on first use,
    with pytest.raises(ConfigError, match="GEMINI_API_KEY is required"):  # names what is missing
        unset.api_key("gemini", "COLONY_LLM_PROVIDER")
    assert len(server.requests_to("secretmanager.access")) == 2  # absences are cached too
    values.values["colony-notion-signing-secret"] = "secret-notion-signing"
    values.denied.add("colony-notion-signing-secret")
    with pytest.raises(ConfigError, match="may not read 'colony-notion-signing-secret'") as raised:
        Settings.from_env(deployed_env(server, "COLONY_NOTION_SIGNING_SECRET"))
    assert "secret-notion-signing" not in str(raised.value)


def test_unknown_names_and_literal_values_are_refused(store) -> None:
    _, server = store
    with pytest.raises(ConfigError, match="COLONY_SECRETS names NOT_A_SECRET"):
        Settings.from_env(deployed_env(server, "NOT_A_SECRET"))
    env = {**deployed_env(server, "OPENAI_API_KEY"), "OPENAI_API_KEY": "sk-literal"}
    with pytest.raises(ConfigError, match="also set in the environment"):
        Settings.from_env(env)
    assert server.requests == []


def test_locally_the_environment_is_used_as_it_is(store) -> None:
    _, server = store
    env = {"OPENAI_API_KEY": "sk-local", "COLONY_NOTION_SIGNING_SECRET": "nt"}
    settings = Settings.from_env(env)
    assert settings.openai_api_key == "sk-local" and settings.notion_signing_secret == "nt"
    assert server.requests == []


def test_every_credential_setting_is_declared_a_secret() -> None:
    """Each environment name settings.py (and its mailbox apps' part) reads that looks like a
    credential is in SECRETS, and every SECRETS name is one that they actually read."""
    source = "".join(
        (REPO / "shared/colony" / name).read_text()
        for name in ("settings.py", "settings_mailboxes.py")
    )
    read = set(re.findall(r'get\("([A-Z0-9_]+)"\)', source))
    read |= set(re.findall(r'(?:require|bounded_int)\(\s*"([A-Z0-9_]+)"', source))
    read |= {"LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"}  # read through a loop over names
    credential = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|DSN$|JWKS|ISSUER")
    credentials = {n for n in read if credential.search(n)}
    not_secret = {
        "COLONY_DB_DSN",
        "COLONY_DB_OWNER_DSN",
        "COLONY_JWT_PUBLIC_KEY",
        "COLONY_SIGNING_KEY_FILE",
        "COLONY_GOOGLE_JWKS_URL",
        "COLONY_SECRET_MANAGER_ENDPOINT",  # where secrets live (a stand-in's URL), not one
    }  # DSNs
    # embed no password in production (cloudsql mode); the JWT public key, a key *file path*
    # and Google's published certificate URL (overridden only to point tests at a stand-in)
    # are not secrets
    assert credentials - not_secret <= set(SECRETS), credentials - not_secret - set(SECRETS)
    assert set(SECRETS) <= read
    assert len(set(SECRETS.values())) == len(SECRETS)
    assert all(re.fullmatch(r"colony-[a-z0-9-]+", s) for s in SECRETS.values())


def test_functions_declare_only_known_secrets() -> None:
    for function in FUNCTIONS.values():
        assert set(function.secrets) <= set(SECRETS), function.name


@pytest.mark.covers("TECH-007")
def test_a_planted_key_and_prompt_text_never_reach_sentry(store, monkeypatch) -> None:
    """The seed's error categories (§8.2) reported with Secret Manager's values in play: the
    OpenAI key (planted in Secret Manager) sent with a call whose tool call does not parse,
    and a transcript in the input of that call and of one whose context cannot be assembled.
    Both events arrive, through the real SDK to the Sentry stand-in (its DSN from Secret
    Manager too); neither the key nor the transcript is in any envelope."""
    values, server = store
    monkeypatch.setenv("SENTRY_RELEASE", "test")  # else the SDK runs git for one
    key = f"sk-planted-{uuid.uuid4().hex}"
    transcript = f"Customer: cancel it all, my card is 4111-{uuid.uuid4().hex}"
    with SentryServer() as sentry, WireServer() as wire:
        values.values.update({"colony-openai-api-key": key, "colony-sentry-dsn": sentry.dsn})
        env = {
            **deployed_env(server, "OPENAI_API_KEY,SENTRY_DSN"),
            "COLONY_LLM_PROVIDER": "openai",
            "COLONY_OPENAI_BASE_URL": wire.openai_base_url,
        }
        settings = Settings.from_env(env)
        assert init_sentry(settings)
        try:
            llm = llm_from_settings(settings)
            reply = openai_chat_reply(None, tool_calls=[("search_knowledge", {})])
            call = reply.body["choices"][0]["message"]["tool_calls"][0]
            call["function"]["arguments"] = f'{{"query": "{transcript} {key}'  # not JSON
            wire.script(reply)
            with pytest.raises(ToolCallInvalid):
                call_agent(llm, content_request(transcript))
            with pytest.raises(ContextBudgetExceeded):
                call_agent(tiny_budgets(llm), content_request(transcript))
            flush_telemetry()
        finally:
            shutdown_sentry()
        (sent,) = wire.requests_to("openai.chat.completions")
        assert sent.header("Authorization") == f"Bearer {key}"  # the key was in play
    got = sorted(e["tags"]["colony.category"] for e in sentry.events())
    assert got == ["context_assembly", "tool_call_parse"]
    for envelope in sentry.envelopes:
        assert key.encode() not in envelope.raw
        assert transcript.encode() not in envelope.raw
        assert b"4111-" not in envelope.raw
