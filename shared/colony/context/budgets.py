"""Per-section token budgets (SPEC §5): configuration with packaged defaults."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from colony.errors import ConfigError

SECTIONS: tuple[str, ...] = ("system", "kc", "entity", "history", "task")


@dataclass(frozen=True, slots=True)
class Budget:
    """One profile's token budget per context section."""

    system: int
    kc: int
    entity: int
    history: int
    task: int

    def of(self, section: str) -> int:
        return int(getattr(self, section))

    def as_dict(self) -> dict[str, int]:
        return {s: self.of(s) for s in SECTIONS}


@dataclass(frozen=True, slots=True)
class CallLimits:
    """What one profile's model call may spend beyond its prompt: ``output`` tokens (sized
    to the largest answer its contract allows: tests/test_budgets.py), ``thinking`` tokens
    (Gemini 2.5's thinking budget, set explicitly and added to the output cap, since Gemini
    counts thoughts against ``maxOutputTokens``), and per-provider model overrides."""

    output: int
    thinking: int
    models: dict[str, str]


@dataclass(frozen=True)
class BudgetBook:
    """Every profile's budget, each provider's default model and each call's limits (read
    from ``budgets.json``)."""

    budgets: dict[str, Budget]
    models: dict[str, str]
    calls: dict[str, CallLimits] = field(default_factory=dict)

    def call_for(self, profile: str) -> CallLimits:
        """The call limits of ``profile``, else of its agent, else the default."""
        return (
            self.calls.get(profile)
            or self.calls.get(profile.split("/")[0])
            or self.calls.get("default")
            or CallLimits(1024, 0, {})
        )

    def model_for_profile(self, provider: str, profile: str) -> str:
        """``profile``'s own model for ``provider`` when it names one, else the default."""
        return self.call_for(profile).models.get(provider) or self.model_for(provider)

    def for_profile(self, profile: str) -> Budget:
        """The budget of ``profile`` ("AGT-006/pass1"), else of its agent, else the default."""
        return (
            self.budgets.get(profile)
            or self.budgets.get(profile.split("/")[0])
            or self.budgets["default"]
        )

    def model_for(self, provider: str) -> str:
        try:
            return self.models[provider]
        except KeyError:
            raise ConfigError(f"no default model configured for provider {provider!r}") from None


def _parse(raw: dict[str, Any], origin: str) -> tuple[dict[str, Budget], dict[str, str]]:
    budgets: dict[str, Budget] = {}
    for profile, sections in raw.get("budgets", {}).items():
        if not isinstance(sections, dict) or set(sections) != set(SECTIONS):
            raise ConfigError(
                f"{origin}: budget {profile!r} must set exactly {', '.join(SECTIONS)}"
            )
        if not all(isinstance(v, int) and v >= 0 for v in sections.values()):
            raise ConfigError(f"{origin}: budget {profile!r} values must be integers ≥ 0")
        budgets[profile] = Budget(**sections)
    models = raw.get("models", {})
    if not isinstance(models, dict):
        raise ConfigError(f"{origin}: 'models' must map provider → model name")
    return budgets, {str(k): str(v) for k, v in models.items()}


def _parse_calls(raw: dict[str, Any], origin: str, base: dict[str, CallLimits]) -> None:
    """``calls``: profile → {"output", "thinking", "models"}; a profile's missing keys come
    from its entry in ``base`` (the packaged file's), else from ``default``."""
    calls = raw.get("calls", {})
    if not isinstance(calls, dict):
        raise ConfigError(f"{origin}: 'calls' must map profile → limits")
    for profile, limits in calls.items():
        if not isinstance(limits, dict) or not set(limits) <= {"output", "thinking", "models"}:
            raise ConfigError(
                f"{origin}: calls {profile!r} may set only output, thinking and models"
            )
        before = base.get(profile) or base.get("default") or CallLimits(1024, 0, {})
        output, thinking = (
            limits.get("output", before.output),
            limits.get("thinking", before.thinking),
        )
        if not (isinstance(output, int) and 1 <= output <= 65_536):
            raise ConfigError(f"{origin}: calls {profile!r} output must be 1..65536 tokens")
        if not (isinstance(thinking, int) and 0 <= thinking <= 32_768):
            raise ConfigError(f"{origin}: calls {profile!r} thinking must be 0..32768 tokens")
        models = limits.get("models", before.models)
        if not isinstance(models, dict):
            raise ConfigError(f"{origin}: calls {profile!r} models must map provider → model")
        base[profile] = CallLimits(output, thinking, {str(k): str(v) for k, v in models.items()})


def load_budgets(override: Path | None = None) -> BudgetBook:
    """Packaged defaults, with ``override`` (``COLONY_BUDGETS_FILE``) merged over them."""
    default = json.loads(
        resources.files("colony.registry").joinpath("budgets.json").read_text(encoding="utf-8")
    )
    budgets, models = _parse(default, "packaged budgets.json")
    calls: dict[str, CallLimits] = {}
    _parse_calls(default, "packaged budgets.json", calls)
    if override is not None:
        try:
            raw = json.loads(override.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ConfigError(
                f"COLONY_BUDGETS_FILE {str(override)!r} is unreadable: {error}"
            ) from error
        more_budgets, more_models = _parse(raw, str(override))
        budgets.update(more_budgets)
        models.update(more_models)
        _parse_calls(raw, str(override), calls)
    if "default" not in budgets:
        raise ConfigError("budgets must define a 'default' profile")
    return BudgetBook(budgets, models, calls)
