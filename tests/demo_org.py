"""The ZoomProp demo org loaded into a test database as ``make run`` loads it, with the
settings a demo scene runs under (the data dir, the app and owner DSNs), for the tests that
run make run's scenes against real local servers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from colony.adapters.embedding import OfflineHashEmbedder
from colony.knowledge import KnowledgeStore
from colony.local.demo import load_demo
from colony.settings import Settings
from colony.store import Database
from tests.conftest import APP_ROLE, PgDB


@dataclass(frozen=True)
class DemoOrg:
    settings: Settings
    db: Database
    knowledge: KnowledgeStore
    org_id: str


def loaded_demo(testdb: PgDB, data_dir: Path) -> DemoOrg:
    settings = Settings.from_env(
        {
            "COLONY_DATA_DIR": str(data_dir),
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_DB_OWNER_DSN": testdb.dsn("postgres"),
        }
    )
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    org_id = load_demo(db, knowledge, say=lambda _: None).org_id
    return DemoOrg(settings, db, knowledge, org_id)
