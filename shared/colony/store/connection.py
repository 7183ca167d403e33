"""How a connection to PostgreSQL is opened: one pg8000 code path for every database mode.

``connect_factory(settings, role)`` returns a zero-argument callable that opens a pg8000 DB-API
connection, for the application role or the owner role:

- ``dsn``: any ``postgresql://`` URL (``?host=/dir`` for a unix socket, ``sslmode`` as in
  libpq, ``parse_dsn``): what deployed functions use, over Cloud SQL's private IP with
  ``verify-ca``;
- ``cloudsql``: the Cloud SQL Python Connector (``colony.local.cloudsql``), for tools such as
  the migration step and for people; never inside a function;
- ``embedded``: the local stack's PostgreSQL (``colony.local``), started on first use.

Only ``dsn`` is served here; ``colony.local.db.connect_factory`` serves all three, so deployed
code never imports local-only code. What is done with a connection once open is
``colony.store.db``'s (the pool and its scoped transactions).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlparse

import pg8000.dbapi

from colony.errors import ConfigError
from colony.settings import Settings

Connect = Callable[[], pg8000.dbapi.Connection]
Role = Literal["app", "owner"]

SSL_MODES = ("disable", "prefer", "require", "verify-ca", "verify-full")


def parse_dsn(dsn: str, *, root_cert: str | None = None) -> dict[str, Any]:
    """Turn a ``postgresql://`` URL into pg8000 keyword arguments.

    ``sslmode`` has libpq's meanings: ``disable``; ``prefer`` (the default over TCP: TLS if
    the server offers it, unverified); ``require`` (TLS, unverified); ``verify-ca`` (TLS, the
    server's chain checked against the CA, not its name: Cloud SQL's per-instance CA names
    the instance, not its private IP); ``verify-full`` (chain and host name). The CA is the
    file ``sslrootcert`` names, else ``root_cert`` (PEM text, ``COLONY_DB_SSL_ROOT_CERT``).
    A unix socket never uses TLS.
    """
    url = urlparse(dsn)
    if url.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"database URL must start with postgresql://, got {url.scheme!r}")
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    kwargs: dict[str, Any] = {
        "user": unquote(url.username or query.get("user", "postgres")),
        "database": unquote(url.path.lstrip("/")) or query.get("dbname", "postgres"),
    }
    password = url.password or query.get("password")
    if password:
        kwargs["password"] = unquote(password)
    port = url.port or int(query.get("port", 5432))
    socket_dir = query.get("host")
    mode = query.get("sslmode", "prefer")
    if mode not in SSL_MODES:
        raise ConfigError(f"sslmode={mode!r} in the database URL is not one of {SSL_MODES}")
    if socket_dir and socket_dir.startswith("/"):
        kwargs["unix_sock"] = f"{socket_dir}/.s.PGSQL.{port}"
        kwargs["ssl_context"] = False
    else:
        kwargs["host"] = url.hostname or socket_dir or "localhost"
        kwargs["port"] = port
        kwargs["ssl_context"] = _ssl_context(mode, query.get("sslrootcert"), root_cert)
    return kwargs


def _ssl_context(mode: str, root_file: str | None, root_pem: str | None) -> Any:
    """pg8000's ``ssl_context``: False (never), None (try, unverified) or a context (must)."""
    if mode == "disable":
        return False
    if mode == "prefer":
        return None
    if mode == "require":  # encrypted, nothing verified: no CA to load
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if not root_file and not root_pem:
        raise ConfigError(
            f"sslmode={mode} needs the server's CA: sslrootcert=<file> in the database URL"
            " or its PEM text in COLONY_DB_SSL_ROOT_CERT"
        )
    # That CA alone, as libpq trusts sslrootcert alone: not the system's public CAs as well
    # (with verify-ca no name is checked, so any of them could vouch for an impostor), and
    # not read either (parsing the system store took 15 ms of every cold start).
    try:
        if root_file:
            context = ssl.create_default_context(cafile=root_file)
        else:
            context = ssl.create_default_context(cadata=root_pem)
    except (OSError, ssl.SSLError) as error:
        where = f"sslrootcert={root_file}" if root_file else "COLONY_DB_SSL_ROOT_CERT"
        raise ConfigError(f"cannot read the database server's CA from {where}: {error}") from error
    context.check_hostname = mode == "verify-full"
    return context


def connect_factory(settings: Settings, role: Role = "app") -> Connect:
    """Return a callable opening a connection for ``role`` in ``dsn`` mode.

    ``dsn`` is what deployed functions use (Cloud SQL's private IP over verified TLS, the
    password from Secret Manager). ``cloudsql`` (the Cloud SQL connector) and ``embedded``
    are for tools, laptops and tests: ``colony.local.db.connect_factory`` serves all three,
    and lives in ``colony.local``, which no bundle carries.
    """
    if settings.db_mode != "dsn":
        raise ConfigError(
            f"COLONY_DB_MODE={settings.db_mode} is for tools and the local stack"
            " (colony.local.db.connect_factory); a deployed function connects with"
            " COLONY_DB_MODE=dsn"
        )
    dsn = settings.db_dsn if role == "app" else settings.db_owner_dsn
    if not dsn:
        raise ConfigError(
            "COLONY_DB_OWNER_DSN is required to migrate in dsn mode (the owner role's URL)"
        )
    kwargs = parse_dsn(dsn, root_cert=settings.db_ssl_root_cert)
    password = settings.db_password if role == "app" else settings.db_owner_password
    if password and "password" not in kwargs:
        kwargs["password"] = password
    return lambda: pg8000.dbapi.connect(**kwargs)
