"""Connections in every database mode, for tools, the local stack and tests.

``colony.store.connect_factory`` serves ``dsn`` only (what deployed functions use); this adds
``cloudsql`` (the Cloud SQL connector, ``colony.local.cloudsql``) and ``embedded`` (the local
PostgreSQL, started on first use), which live in ``colony.local`` so no bundle carries them.
"""

from __future__ import annotations

import pg8000.dbapi

from colony.local.cloudsql import cloudsql_factory
from colony.local.embedded import embedded_dsn
from colony.settings import Settings
from colony.store import connection


def connect_factory(settings: Settings, role: connection.Role = "app") -> connection.Connect:
    """A callable opening a connection for ``role`` in the configured mode."""
    if settings.db_mode == "cloudsql":
        return cloudsql_factory(settings, role)
    if settings.db_mode == "embedded":
        kwargs = connection.parse_dsn(embedded_dsn(settings, role))
        return lambda: pg8000.dbapi.connect(**kwargs)
    return connection.connect_factory(settings, role)
