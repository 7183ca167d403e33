"""DKIM key pairs we make for an org's sending domain (issue 39 item 3), with ``cryptography``.

RSA, 2,048 bits: what RFC 8301 asks signers to use (1,024 at the least) and what every
receiver verifies; Ed25519 (RFC 8463) is not yet verified everywhere. The private key is
PKCS#8 PEM, which ``dkimpy`` reads, and is handed straight to the secret store; the public key
is the base64 DER SubjectPublicKeyInfo that goes in the ``p=`` tag of the DNS record.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

BITS = 2048


@dataclass(frozen=True, slots=True)
class KeyPair:
    private_pem: str = field(repr=False)
    public_key: str  # base64, as published in p=


def new_key() -> KeyPair:
    """A fresh key pair."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=BITS)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return KeyPair(private.decode("ascii"), base64.b64encode(public).decode("ascii"))
