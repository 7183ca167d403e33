from pathlib import Path

import pytest

from colony.errors import ConfigError
from colony.settings import Settings


def test_defaults_need_no_cloud_and_no_key() -> None:
    s = Settings.from_env({})
    assert (s.env, s.db_mode, s.embedding_provider) == ("local", "embedded", "offline")
    assert s.embedding_dim == 1536 and s.data_dir == Path(".colony")


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"COLONY_DB_MODE": "dsn"}, "COLONY_DB_DSN"),
        ({"COLONY_DB_MODE": "cloudsql"}, "COLONY_CLOUDSQL_INSTANCE"),
        ({"COLONY_LLM_PROVIDER": "claude"}, "COLONY_LLM_PROVIDER"),
        ({"COLONY_DB_MODE": "sqlite"}, "COLONY_DB_MODE"),
        ({"COLONY_EMBEDDING_DIM": "12x"}, "COLONY_EMBEDDING_DIM"),
        ({"COLONY_DB_APP_ROLE": "app; drop table x"}, "COLONY_DB_APP_ROLE"),
        ({"COLONY_ENV": "production"}, "COLONY_DB_MODE"),
    ],
)
def test_bad_or_missing_values_name_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        Settings.from_env(env)


@pytest.mark.parametrize(
    ("env", "provider", "chosen_by", "named"),
    [
        (
            {"COLONY_EMBEDDING_PROVIDER": "openai"},
            "openai",
            "COLONY_EMBEDDING_PROVIDER",
            "OPENAI_API_KEY",
        ),
        (
            {"COLONY_EMBEDDING_PROVIDER": "gemini"},
            "gemini",
            "COLONY_EMBEDDING_PROVIDER",
            "GEMINI_API_KEY",
        ),
        ({"COLONY_LLM_PROVIDER": "openai"}, "openai", "COLONY_LLM_PROVIDER", "OPENAI_API_KEY"),
        ({"COLONY_LLM_PROVIDER": "gemini"}, "gemini", "COLONY_LLM_PROVIDER", "GEMINI_API_KEY"),
    ],
)
def test_a_provider_key_is_required_where_the_provider_is_built_not_at_start_up(
    env: dict[str, str], provider: str, chosen_by: str, named: str
) -> None:
    # Model-free functions (webhooks, task targets) start without any provider key ...
    s = Settings.from_env(env)
    assert s.openai_api_key is None and s.gemini_api_key is None
    # ... and building the provider's adapter names the missing variable and its reason.
    with pytest.raises(ConfigError, match=f"{named} is required when {chosen_by}={provider}"):
        s.api_key(provider, chosen_by)  # type: ignore[arg-type]
    keyed = Settings.from_env({**env, named: "sk-x"})
    assert keyed.api_key(provider, chosen_by) == "sk-x"  # type: ignore[arg-type]


def test_provider_picks_its_default_model() -> None:
    s = Settings.from_env({"COLONY_EMBEDDING_PROVIDER": "openai", "OPENAI_API_KEY": "sk-x"})
    assert s.embedding_model == "text-embedding-3-small"


def test_repr_never_shows_secrets() -> None:
    s = Settings.from_env(
        {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": "postgresql://u:hunter2@h/db",
            "OPENAI_API_KEY": "sk-secret-123",
        }
    )
    text = repr(s)
    assert "hunter2" not in text and "sk-secret-123" not in text
    assert "db_mode='dsn'" in text


def test_the_deployed_function_is_named_by_cloud_run() -> None:
    """Cloud Run sets K_SERVICE to a gen2 function's name; it sizes the connection pool."""
    assert Settings.from_env({}).function_name is None
    assert Settings.from_env({"K_SERVICE": "chat"}).function_name == "chat"


PRODUCTION = {
    "COLONY_ENV": "production",
    "COLONY_DB_MODE": "cloudsql",
    "COLONY_CLOUDSQL_INSTANCE": "p:r:i",
    "COLONY_INVOKER_SERVICE_ACCOUNT": "invoker@p.iam.gserviceaccount.com",
}


def test_the_research_stand_in_web_is_local_only_and_parsed_strictly() -> None:
    web = '{"address": "127.0.0.1:41775", "hosts": ["Acme.example", "www.acme.example."]}'
    s = Settings.from_env(
        {"COLONY_RESEARCH_WEB": web, "COLONY_RESEARCH_CONTACT_URL": "http://colony.localhost/r"}
    )
    assert s.research_web is not None
    assert (s.research_web.ip, s.research_web.port) == ("127.0.0.1", 41775)
    assert s.research_web.hosts == {"acme.example", "www.acme.example"}
    assert s.research_contact_url == "http://colony.localhost/r"
    assert Settings.from_env({}).research_web is None
    for bad in [
        '{"address": "acme:80", "hosts": []}',
        "127.0.0.1:80",
        '{"hosts": ["a"]}',
        '{"address": "127.0.0.1:99999", "hosts": ["a"]}',
    ]:
        with pytest.raises(ConfigError, match="COLONY_RESEARCH_WEB must be JSON"):
            Settings.from_env({"COLONY_RESEARCH_WEB": bad})
    with pytest.raises(ConfigError, match=r"COLONY_RESEARCH_WEB .*COLONY_ENV=production"):
        Settings.from_env({**PRODUCTION, "COLONY_RESEARCH_WEB": web})
    with pytest.raises(ConfigError, match="COLONY_RESEARCH_CONTACT_URL must be an https"):
        Settings.from_env({**PRODUCTION, "COLONY_RESEARCH_CONTACT_URL": "http://colony.example"})
    with pytest.raises(ConfigError, match="COLONY_RESEARCH_CONTACT_URL"):
        Settings.from_env({"COLONY_RESEARCH_CONTACT_URL": "colony.example/about us"})
