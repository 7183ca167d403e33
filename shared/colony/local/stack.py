"""``.colony/stack.json``: what the local stack runs and how to reach it (SPEC §10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from colony.settings import Settings


def stack_path(settings: Settings) -> Path:
    return settings.data_dir / "stack.json"


def read_stack(settings: Settings) -> dict[str, Any]:
    path = stack_path(settings)
    return json.loads(path.read_text()) if path.exists() else {}


def update_stack(settings: Settings, **parts: Any) -> Path:
    """Merge ``parts`` into the stack file (written atomically)."""
    path = stack_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    stack = {**read_stack(settings), **parts}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(stack, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path
