"""A self-signed certificate for a local TLS stand-in on 127.0.0.1 (the SMTP server's
STARTTLS, an HTTPS JWKS): the certificate doubles as the root a client is told to trust."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(
    root: Path, name: str, *, hours: int = 24, dns_names: tuple[str, ...] | None = None
) -> tuple[Path, Path]:
    """``(cert, key)`` PEM files under ``root``, valid for 127.0.0.1 and localhost, or for
    ``dns_names`` alone when given (a stand-in reached by a hostname pinned to 127.0.0.1)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"colony local {name}")])
    now = dt.datetime.now(dt.UTC)
    names: list[x509.GeneralName] = (
        [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        if dns_names is None
        else [x509.DNSName(n) for n in dns_names]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=hours))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = root / f"{name}.crt", root / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_file.chmod(0o600)
    return cert_file, key_file
