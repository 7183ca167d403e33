"""The Cloud SQL connector, for tools and people rather than functions.

The migration step in Cloud Build (``colony db migrate``) and people at a terminal reach the
instance through the Cloud SQL Python Connector (IAM-authorised, per-instance certificates,
IAM database login unless a password is set). Deployed functions do not: they connect to the
private IP over verified TLS (``COLONY_DB_MODE=dsn``), which keeps the connector, aiohttp and
its gRPC admin client out of every bundle (issue 12). This module is imported only when
``COLONY_DB_MODE=cloudsql``, and Settings refuses that mode inside a function.
"""

from __future__ import annotations

import threading
from typing import Any

import pg8000.dbapi

from colony.errors import ConfigError
from colony.settings import Settings
from colony.store.connection import Connect, Role

_connector: Any = None
_connector_lock = threading.Lock()


def _cloudsql_connector() -> Any:
    """This process's one Cloud SQL Connector, shared by every factory and role.

    A Connector runs its own event-loop thread and caches the instance's certificates and
    metadata: one per ``connect_factory`` call would leak a thread (and refetch certificates)
    each time.
    """
    global _connector
    with _connector_lock:
        if _connector is None:
            from google.cloud.sql.connector import Connector

            _connector = Connector(refresh_strategy="lazy")
        return _connector


def cloudsql_factory(settings: Settings, role: Role) -> Connect:
    if role == "app":
        user, password = settings.db_app_role, settings.db_password
    else:
        if not settings.db_owner_user:
            raise ConfigError("COLONY_DB_OWNER_USER is required to migrate in cloudsql mode")
        user, password = settings.db_owner_user, settings.db_owner_password
    instance = settings.cloudsql_instance
    assert instance  # Settings.from_env requires it in cloudsql mode

    def connect() -> pg8000.dbapi.Connection:
        extra: dict[str, Any] = {"password": password} if password else {"enable_iam_auth": True}
        conn: pg8000.dbapi.Connection = _cloudsql_connector().connect(
            instance, "pg8000", user=user, db=settings.db_name, **extra
        )
        return conn

    return connect
