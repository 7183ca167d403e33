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
