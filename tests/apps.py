"""The real deployed functions (``functions/<name>/main.py``) as in-process test clients."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import functions_framework
import pytest

from colony.registry.functions import FUNCTIONS
from colony.settings import Settings

FUNCTIONS_DIR = Path(__file__).resolve().parents[1] / "functions"


def registered_app(name: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A test client of function ``name``'s real functions-framework app, loaded as
    ``functions-framework --source functions/<name>/main.py`` loads it, with ``K_SERVICE``
    set to its name as Cloud Run sets it."""
    spec = FUNCTIONS[name]
    monkeypatch.setenv("K_SERVICE", name)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the framework appends the source dir
    signature = "cloudevent" if spec.trigger == "pubsub" else "http"
    try:
        app = functions_framework.create_app(
            spec.entry_point, str(FUNCTIONS_DIR / name / "main.py"), signature
        )
    finally:
        sys.modules.pop("main", None)  # every function's module is called main
    return app.test_client()


SourceLoader = Callable[[str, str, str], tuple[Any, Any, str]]


def source_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SourceLoader:
    """``load(source, target, signature_type)``: write ``source`` to a module of its own, build
    the real functions-framework app over it with ``K_SERVICE`` set to that module's name, and
    return the app's test client, the loaded module and the name."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # the framework appends the source dir

    def load(source: str, target: str, signature_type: str) -> tuple[Any, Any, str]:
        name = f"fn_{uuid.uuid4().hex[:10]}"
        monkeypatch.setenv("K_SERVICE", name)
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        app = functions_framework.create_app(target, str(path), signature_type)
        module = sys.modules[name]
        monkeypatch.delitem(sys.modules, name)
        return app.test_client(), module, name

    return load


def org_settings(db: Any, data_dir: Path, *orgs: str, **env: str) -> Settings:
    """Settings of a function on ``db`` as the application role (``orgs`` inserted first),
    its data in ``data_dir``, plus ``env``."""
    from tests.conftest import APP_ROLE  # lazy: conftest imports the test doubles

    conn = db.owner_connection()
    for org in orgs:
        conn.cursor().execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    conn.commit()
    conn.close()
    base = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": db.dsn(APP_ROLE),
        "COLONY_EMBEDDING_DIM": str(db.dim),
        "COLONY_DATA_DIR": str(data_dir),
    }
    return Settings.from_env({**base, **env})


def session_token(data_dir: Path, org: str, user: str, role: str | None = "org:admin") -> str:
    """A Clerk v1 session token signed with the local key pair: ``user`` of ``org`` with
    ``role`` (``org_role``; None: no role claim), valid for an hour."""
    import jwt  # lazy: only the tests that call functions as a person need it

    from colony.local.tokens import ensure_local_keys

    keys = ensure_local_keys(data_dir)
    now = datetime.now(UTC)
    claims: dict[str, Any] = {"sub": user, "org_id": org, "iat": now}
    claims["exp"] = now + timedelta(hours=1)
    if role is not None:
        claims["org_role"] = role
    return jwt.encode(claims, keys.private_path.read_bytes(), algorithm="RS256")
