"""PostgreSQL access: connection modes, org-scoped transactions, migrations."""

from colony.store.db import Database, Row, connect_factory, fetch_all, fetch_one, fetch_value
from colony.store.migrate import ensure_app_role_grants, migrate

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
