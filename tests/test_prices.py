"""The price table (``colony.registry.prices``): what a call costs, and a deployment's own
prices over the packaged ones."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from colony.context.budgets import load_budgets
from colony.errors import ConfigError
from colony.evals import prices as eval_prices
from colony.registry.prices import load_prices
from colony.settings import Settings


def test_every_model_the_registry_names_has_a_price_and_the_offline_one_costs_nothing() -> None:
    table = load_prices()
    budgets = load_budgets()
    named = set(budgets.models.values())
    named |= {m for limits in budgets.calls.values() for m in limits.models.values()}
    assert {"gpt-4o", "gemini-2.5-pro", "offline-deterministic-v1"} <= named
    assert [m for m in sorted(named) if table.price(m) is None] == []
    assert table.cost("offline-deterministic-v1", 10_000, 2_000, 5_000) == 0


def test_a_call_is_priced_from_its_fresh_cached_and_output_tokens_exactly() -> None:
    table = load_prices()
    # gpt-4o: 2.50 in, 1.25 cached, 10.00 out per million; 1,000 of 3,000 prompt tokens cached
    assert table.cost("gpt-4o", 3_000, 1_000, 500) == Decimal("0.01125")
    # a dated snapshot is its model; Gemini's prompt over 200k tokens takes the long rates
    assert table.cost("gpt-4o-2024-08-06", 3_000, 1_000, 500) == Decimal("0.01125")
    assert table.cost("gemini-2.5-pro", 200_000, 0, 0) == Decimal("0.25")
    assert table.cost("gemini-2.5-pro", 200_001, 1, 1_000) == Decimal("0.51500025")
    # more cached than the prompt (a provider's rounding) is never a negative fresh count
    assert table.cost("gpt-4o-mini", 100, 150, 0) == Decimal("0.0000075")


def test_a_model_the_table_does_not_name_has_no_price_never_a_guess() -> None:
    table = load_prices()
    for model in ("gpt-test", "gpt-4o-audio-preview", "gemini-2.5-pro-exp", "gpt-4o-20240806"):
        assert table.price(model) is None
        assert table.cost(model, 1_000, 0, 1_000) is None


def test_a_deployment_file_replaces_adds_and_removes_entries(tmp_path: Path) -> None:
    override = tmp_path / "prices.json"
    override.write_text(
        json.dumps(
            {
                "as_of": "2027-01-15",
                "models": {
                    "gpt-4o": {"input": 2, "cached_input": 1, "output": 8},
                    "house-model": {"input": 0.1, "cached_input": 0.01, "output": 0.2},
                    "gemini-2.5-flash": None,
                },
            }
        )
    )
    settings = Settings.from_env({"COLONY_PRICES_FILE": str(override)})
    assert settings.prices_file == override
    table = load_prices(settings.prices_file)
    assert table.as_of == "2027-01-15"
    assert table.cost("gpt-4o", 1_000_000, 0, 1_000_000) == Decimal(10)
    assert table.cost("house-model", 1_000_000, 500_000, 0) == Decimal("0.055")
    assert table.price("gemini-2.5-flash") is None
    assert table.price("gpt-4o-mini") is not None  # untouched entries stay


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "is not JSON"),
        ('{"prices": {}}', "with a 'models' object"),
        ('{"models": {}, "currency": "EUR"}', "unknown keys 'currency'"),
        ('{"models": {"m": {"input": 1, "output": 2}}}', "models 'm' has no cached_input price"),
        ('{"models": {"m": {"input": -1, "cached_input": 0, "output": 2}}}', "m' input must be"),
        ('{"models": {"m": {"input": "1", "cached_input": 0, "output": 2}}}', "not '1'"),
        ('{"models": {"m": {"input": 1, "cached_input": 0, "output": 2, "x": 1}}}', "'x'"),
        ('{"models": {"m": 3}}', "must be an object of prices"),
        (
            '{"models": {"m": {"input": 1, "cached_input": 0, "output": 2, '
            '"long_context": {"input": 1, "cached_input": 0, "output": 2}}}}',
            "above_input_tokens",
        ),
    ],
)
def test_a_bad_deployment_file_is_a_config_error_naming_the_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    override = tmp_path / "prices.json"
    override.write_text(text)
    with pytest.raises(ConfigError, match="COLONY_PRICES_FILE") as raised:
        load_prices(override)
    assert problem in str(raised.value)


def test_a_missing_deployment_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"COLONY_PRICES_FILE '.*nowhere\.json' is unreadable"):
        load_prices(tmp_path / "nowhere.json")


def test_eval_runs_are_priced_from_the_same_table() -> None:
    assert eval_prices.per_million("gpt-4o-2024-08-06") == (2.5, 10.0)
    assert eval_prices.per_million("gpt-test") is None
    assert eval_prices.per_million("gpt-test", local=True) == (0.0, 0.0)
