"""PostgreSQL access: connection modes, org-scoped transactions, migrations.

The migrations (``migrator``, ``migrations``) are a deploy step's and the local stack's, never
a function's: they load on first use (PEP 562), so a function's cold start does not create
their registry (issue 32 item 4).
"""

from typing import TYPE_CHECKING

from colony.lazy import lazy_names
from colony.store.connection import connect_factory
from colony.store.db import Database
from colony.store.rows import Row, fetch_all, fetch_one, fetch_value

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.store.migrator import ensure_app_role_grants, migrate

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


__getattr__ = lazy_names(
    __name__,
    {"ensure_app_role_grants": "colony.store.migrator", "migrate": "colony.store.migrator"},
)
