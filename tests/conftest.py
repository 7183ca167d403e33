"""Shared fixtures: one real embedded PostgreSQL 18 + pgvector per test session.

Each test that needs a database gets a fresh one, cloned from a template that was migrated
once (``CREATE DATABASE ... TEMPLATE`` takes milliseconds; migrating takes longer).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pg8000.dbapi
import pytest

from colony.local import embedded
from colony.local.browser import headless_chromium
from colony.local.db import connect_factory
from colony.settings import Settings
from colony.store import Database, ensure_app_role_grants, migrate
from colony.store.db import fetch_all, parse_dsn
from colony.testing.smtp_server import SmtpServer
from colony.testing.wire import WireServer

APP_ROLE = "colony_app"


def wait_for(condition: Callable[[], Any], timeout: float = 90.0, what: str = "condition") -> Any:
    """Poll observable state until ``condition()`` is truthy and return it, or fail at the
    deadline (functions work asynchronously: a push returns before the work is done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class PgDB:
    name: str
    pgdata: Path
    dim: int
    opened: list[Database] = field(default_factory=list)

    def dsn(self, user: str) -> str:
        return embedded.socket_dsn(self.pgdata, user, self.name)

    @property
    def settings(self) -> Settings:
        return Settings.from_env(
            {
                "COLONY_DB_MODE": "dsn",
                "COLONY_DB_DSN": self.dsn(APP_ROLE),
                "COLONY_DB_OWNER_DSN": self.dsn("postgres"),
                "COLONY_EMBEDDING_DIM": str(self.dim),
            }
        )

    def app(self) -> Database:
        """A pool for the application role; closed when the test ends."""
        db = Database(connect_factory(self.settings, "app"))
        self.opened.append(db)
        return db

    def owner_connection(self) -> pg8000.dbapi.Connection:
        return connect_factory(self.settings, "owner")()

    def as_owner(self, work: Callable[[pg8000.dbapi.Connection], Any]) -> Any:
        """``work(conn)`` on an owner connection, closed afterwards."""
        conn = self.owner_connection()
        try:
            return work(conn)
        finally:
            conn.close()

    def owner_rows(self, sql: str) -> list[dict[str, Any]]:
        return self.as_owner(lambda conn: fetch_all(conn.cursor(), sql))


def _admin(pgdata: Path) -> pg8000.dbapi.Connection:
    conn = pg8000.dbapi.connect(**parse_dsn(embedded.socket_dsn(pgdata, "postgres", "postgres")))
    conn.autocommit = True
    return conn


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Path]:
    # Not under pytest's tmp_path: pytest prunes old basetemp folders, and a second pytest
    # session on the machine would delete this one's data directory under the server.
    root = Path(tempfile.mkdtemp(prefix="colony-pg-"))
    pgdata = root / "data"
    embedded.ensure_database(pgdata, "colony", APP_ROLE)
    yield pgdata
    embedded.stop_cluster(pgdata)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def _templates(pg_cluster: Path) -> dict[int, str]:
    return {}


@pytest.fixture
def make_db(pg_cluster: Path, _templates: dict[int, str]) -> Iterator[Callable[..., PgDB]]:
    created: list[PgDB] = []
    admin = _admin(pg_cluster)

    def make(dim: int = 1536, *, migrated: bool = True) -> PgDB:
        name = f"t_{uuid.uuid4().hex[:12]}"
        if not migrated:
            admin.cursor().execute(f"CREATE DATABASE {name}")
        else:
            if dim not in _templates:
                template = f"tpl_{dim}"
                admin.cursor().execute(f"CREATE DATABASE {template}")
                owner = PgDB(template, pg_cluster, dim).owner_connection()
                migrate(owner, dim=dim)
                ensure_app_role_grants(owner, APP_ROLE)
                owner.close()
                _templates[dim] = template
            admin.cursor().execute(f"CREATE DATABASE {name} TEMPLATE {_templates[dim]}")
        db = PgDB(name, pg_cluster, dim)
        created.append(db)
        return db

    yield make
    for db in created:
        for pool in db.opened:
            pool.close()
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {db.name} WITH (FORCE)")
    admin.close()


@pytest.fixture
def testdb(make_db: Callable[..., PgDB]) -> PgDB:
    return make_db()


@pytest.fixture(autouse=True, scope="session")
def _runtime_dir() -> None:
    path = Path(f"/tmp/colony-runtime-{os.getuid()}")
    path.mkdir(mode=0o700, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(path))


@pytest.fixture(autouse=True)
def _fresh_function_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """functions-framework keeps one process-wide map from a function's *name* to the type its
    decorator registered, and ``create_app`` prefers it to the signature type it is given (it
    also writes ``FUNCTION_SIGNATURE_TYPE`` into the environment). Every function's entry point
    is called ``handle``, so once a test imported a Pub/Sub function's ``main`` (a
    ``cloud_event`` ``handle``), an HTTP app built later in the same worker over another
    ``handle`` was served as a CloudEvent function and answered a plain JSON POST with 400.
    Each test starts with an empty map and that variable unset."""
    from functions_framework import _function_registry

    monkeypatch.setattr(_function_registry, "REGISTRY_MAP", {})
    monkeypatch.setattr(_function_registry, "INPUT_TYPE_MAP", {})
    monkeypatch.setattr(_function_registry, "ASGI_FUNCTIONS", set())
    monkeypatch.setenv("FUNCTION_SIGNATURE_TYPE", "")  # recorded, so the end restores it
    monkeypatch.delenv("FUNCTION_SIGNATURE_TYPE")


@pytest.fixture
def no_ambient_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proxies or SDK switches in the environment must not redirect requests to local
    wire-protocol servers."""
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "OPENAI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_API_VERSION",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    """A real SMTP server (aiosmtpd) on 127.0.0.1; ``received`` holds what it was sent."""
    with SmtpServer() as server:
        yield server


@pytest.fixture
def server() -> Iterator[WireServer]:
    """A local server speaking the OpenAI and Gemini wire protocols."""
    with WireServer() as wire:
        yield wire


# GCS (issue 7): one in-memory gcp-storage-emulator per session, a fresh bucket per test.
@pytest.fixture(scope="session")
def storage_emulator_url() -> Iterator[str]:
    """``http://host:port`` of a session-wide ``gcp-storage-emulator`` (STORAGE_EMULATOR_HOST)."""
    from colony.testing.emulators import storage_emulator

    with storage_emulator(bucket=None) as url:
        yield url


@dataclass
class Gcs:
    """A fresh bucket on the emulator, the key that signs its URLs, and a store for it."""

    url: str  # STORAGE_EMULATOR_HOST
    bucket: str
    key_file: Path  # service-account key (JSON) the signed URLs are signed with
    store: object  # colony.adapters.storage.GcsBlobStore

    @property
    def env(self) -> dict[str, str]:
        """Environment for a function process using this bucket."""
        return {
            "STORAGE_EMULATOR_HOST": self.url,
            "COLONY_ASSETS_BUCKET": self.bucket,
            "COLONY_SIGNING_KEY_FILE": str(self.key_file),
        }


@pytest.fixture
def gcs(storage_emulator_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Gcs:
    """``STORAGE_EMULATOR_HOST`` set for this test, a new bucket created, a GcsBlobStore on it
    (built by ``blob_store_from_settings``, so the same path as production code)."""
    from colony.adapters.storage import blob_store_from_settings

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", storage_emulator_url)
    bucket = f"t-{uuid.uuid4().hex[:12]}"
    key_file = tmp_path / "gcs-signing-key.json"
    settings = Settings.from_env(
        {"COLONY_ASSETS_BUCKET": bucket, "COLONY_SIGNING_KEY_FILE": str(key_file)}
    )
    store = blob_store_from_settings(settings)
    store.ensure_bucket()
    return Gcs(storage_emulator_url, bucket, key_file, store)


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium session (``colony.local.browser``) for the /overview browser tests;
    their stack and screenshots are in ``tests/overview_stack.py``."""
    driver = headless_chromium()
    try:
        yield driver
    finally:
        driver.quit()
