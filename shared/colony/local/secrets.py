"""Local-only secrets (approval-link key, delivery webhook secret), generated once per
machine into ``<data_dir>/secrets.json`` (mode 0600). Production reads Secret Manager.

The delivery webhook secret is a Svix ``whsec_`` secret, as the mail provider (Resend) issues
one; a file written before it was (a bare token) gets a new one."""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path


def local_secrets(data_dir: Path) -> dict[str, str]:
    path = data_dir / "secrets.json"
    if path.exists():
        values = dict(json.loads(path.read_text()))
        if values.get("COLONY_DELIVERY_WEBHOOK_SECRET", "").startswith("whsec_"):
            return values
        values["COLONY_DELIVERY_WEBHOOK_SECRET"] = _whsec()
        path.unlink()
    else:
        values = {
            "COLONY_APPROVAL_TOKEN_KEY": secrets.token_urlsafe(48),
            "COLONY_DELIVERY_WEBHOOK_SECRET": _whsec(),
        }
    data_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(values, handle)
    return values


def _whsec() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
