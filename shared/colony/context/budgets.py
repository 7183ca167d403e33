"""Per-section token budgets (SPEC §5): configuration with packaged defaults."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from colony.errors import ConfigError

SECTIONS: tuple[str, ...] = ("system", "kc", "entity", "history", "task")


@dataclass(frozen=True, slots=True)
class Budget:
    system: int
    kc: int
    entity: int
    history: int
    task: int

    def of(self, section: str) -> int:
        return int(getattr(self, section))

    def as_dict(self) -> dict[str, int]:
        return {s: self.of(s) for s in SECTIONS}


@dataclass(frozen=True)
class BudgetBook:
    budgets: dict[str, Budget]
    models: dict[str, str]

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


def load_budgets(override: Path | None = None) -> BudgetBook:
    """Packaged defaults, with ``override`` (``COLONY_BUDGETS_FILE``) merged over them."""
    default = json.loads(
        resources.files("colony.registry").joinpath("budgets.json").read_text(encoding="utf-8")
    )
    budgets, models = _parse(default, "packaged budgets.json")
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
    if "default" not in budgets:
        raise ConfigError("budgets must define a 'default' profile")
    return BudgetBook(budgets, models)
