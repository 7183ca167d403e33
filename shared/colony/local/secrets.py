"""Local-only secrets (approval-link key, delivery webhook secret), generated once per
machine into ``<data_dir>/secrets.json`` (mode 0600). Production reads Secret Manager."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path


def local_secrets(data_dir: Path) -> dict[str, str]:
    path = data_dir / "secrets.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    values = {
        "COLONY_APPROVAL_TOKEN_KEY": secrets.token_urlsafe(48),
        "COLONY_DELIVERY_WEBHOOK_SECRET": secrets.token_urlsafe(32),
    }
    data_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(values, handle)
    return values
