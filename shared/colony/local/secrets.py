"""Local-only secrets (approval-link key, delivery and Clerk webhook secrets), generated once
per machine into ``<data_dir>/secrets.json`` (mode 0600). Production reads Secret Manager.

The delivery and Clerk webhook secrets are Svix ``whsec_`` secrets, as the mail provider
(Resend) and Clerk issue them; a file written before one was (a bare token, or none) gets a
new one, the others kept."""

from __future__ import annotations

import base64
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path


def _whsec() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


GENERATED: dict[str, Callable[[], str]] = {
    "COLONY_APPROVAL_TOKEN_KEY": lambda: secrets.token_urlsafe(48),
    "COLONY_DELIVERY_WEBHOOK_SECRET": _whsec,
    "COLONY_CLERK_WEBHOOK_SECRET": _whsec,  # the local Clerk webhook (``make run`` signs with it)
}
SVIX = ("COLONY_DELIVERY_WEBHOOK_SECRET", "COLONY_CLERK_WEBHOOK_SECRET")


def local_secrets(data_dir: Path) -> dict[str, str]:
    path = data_dir / "secrets.json"
    values = dict(json.loads(path.read_text())) if path.exists() else {}
    for name in SVIX:
        if not values.get(name, "").startswith("whsec_"):
            values.pop(name, None)
    missing = {name: make() for name, make in GENERATED.items() if name not in values}
    if not missing:
        return values
    values.update(missing)
    path.unlink(missing_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(values, handle)
    return values
