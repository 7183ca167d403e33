"""What the /overview browser tests share: the demo org loaded into the test database, the
real functions it needs started over HTTP against it, and a screenshot of each view written
to ``artifacts/`` (git-ignored). The headless Chromium itself is the ``browser`` fixture in
``tests/conftest.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colony.adapters.embedding import OfflineHashEmbedder
from colony.knowledge import KnowledgeStore
from colony.local.demo import load_demo
from colony.local.functions import REPO, FunctionServers
from colony.local.tokens import mint_local_token
from colony.store import Database
from tests.conftest import APP_ROLE, PgDB

ORG = "org_zoomprop_demo"
ARTIFACTS = REPO / "artifacts"


@dataclass(frozen=True)
class Stack:
    """The running functions: ``base`` is the chat function's URL, ``token`` a local token."""

    db: Database
    base: str
    token: str
    urls: dict[str, str]


def demo_db(testdb: PgDB) -> Database:
    """The app-role database with the demo org loaded (a test seeds its own items on top)."""
    db = testdb.app()
    load_demo(db, KnowledgeStore(db, OfflineHashEmbedder()), say=lambda _: None)
    return db


@contextmanager
def overview_stack(
    testdb: PgDB,
    db: Database,
    tmp_path: Path,
    chain: Iterable[str],
    env: Callable[[Mapping[str, str]], Mapping[str, str]] | None = None,
) -> Iterator[Stack]:
    """Start ``chain`` (the chat function first) against ``testdb`` with the local transport;
    ``env`` adds to their environment, given the functions' URLs (the page's origin)."""
    base = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
    }
    servers = FunctionServers(base, list(chain), log_dir=tmp_path)
    if env is not None:
        servers.add_env(env(servers.urls))
    with servers:
        yield Stack(db, servers.urls["chat"], mint_local_token(tmp_path, ORG), servers.urls)


def screenshot(driver: Any, name: str, of: Any = None) -> Path:
    """Save what the page shows now (or only the element ``of``, scrolled into view) as
    ``artifacts/<name>.png`` and check it is a picture."""
    path = ARTIFACTS / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    if of is None:
        assert driver.save_screenshot(str(path)), path
    else:
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", of)
        assert of.screenshot(str(path)), path
    assert path.stat().st_size > (10_000 if of is None else 3_000), f"{path} is near empty"
    return path
