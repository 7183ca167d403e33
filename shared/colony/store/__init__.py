"""PostgreSQL access: connection modes, org-scoped transactions, migrations."""

from colony.store.connection import connect_factory
from colony.store.db import Database
from colony.store.migrate import ensure_app_role_grants, migrate
from colony.store.rows import Row, fetch_all, fetch_one, fetch_value

__all__ = [
    "Database",
    "Row",
    "connect_factory",
    "ensure_app_role_grants",
    "fetch_all",
    "fetch_one",
    "fetch_value",
    "migrate",
]
