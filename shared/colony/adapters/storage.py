"""``GcsBlobStore``: the assets bucket (``colony.ports.BlobStore``) on ``google-cloud-storage``.

Agents are handed V4 signed URLs, never raw bytes (seed §3.4). Two ways to sign:

- locally, offline, with a service-account key file (``COLONY_SIGNING_KEY_FILE``, else one
  generated once into ``<data_dir>/gcs-signing-key.json``, mode 0600). The key never leaves
  the machine and no Google API is called to sign;
- in production, with the function's own service account through IAM ``signBlob``
  (``generate_signed_url(service_account_email=..., access_token=...)``): no key file exists.

``STORAGE_EMULATOR_HOST`` (``http://host:port``) is read by the SDK itself and points the
client at ``gcp-storage-emulator`` (``colony.testing.emulators.storage_emulator``).

Errors: a missing object is ``NotFound``; 429/5xx, timeouts and unreachable hosts are
``ProviderUnavailable`` (the caller's transport retries the whole step); any other refusal is
``ProviderError``. The SDK's own retry is bounded by ``retry_seconds`` so a dead store fails
the step quickly instead of holding the function for minutes.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from colony.errors import (
    ConfigError,
    NotFound,
    ProviderError,
    ProviderUnavailable,
    ValidationFailed,
)

if TYPE_CHECKING:
    from colony.settings import Settings

SIGNING_KEY_NAME = "gcs-signing-key.json"
LOCAL_SIGNER_EMAIL = "colony-local-signer@colony-local.iam.gserviceaccount.com"
_MAX_TTL = 7 * 24 * 3600  # V4 signed URLs live at most seven days
_TRANSIENT = (
    "ServiceUnavailable",
    "InternalServerError",
    "BadGateway",
    "GatewayTimeout",
    "TooManyRequests",
    "RetryError",
    "DeadlineExceeded",
)


def _translate(error: BaseException, what: str) -> Exception:
    """An SDK / transport error, re-expressed as ours (messages carry no object bytes)."""
    import requests
    from google.api_core import exceptions as gexc
    from google.auth import exceptions as auth_exc

    if isinstance(error, gexc.NotFound):
        return NotFound(f"{what}: not found")
    transient = tuple(getattr(gexc, name) for name in _TRANSIENT if hasattr(gexc, name))
    if isinstance(
        error,
        (
            *transient,
            requests.ConnectionError,
            requests.Timeout,
            auth_exc.TransportError,
            TimeoutError,
            ConnectionError,
        ),
    ):
        return ProviderUnavailable(f"{what} failed transiently: {type(error).__name__}")
    if isinstance(error, gexc.GoogleAPICallError):
        return ProviderError(f"{what} failed: {error.code} {error.message}")
    return ProviderError(f"{what} failed: {type(error).__name__}: {error}")


def ensure_local_signing_key(path: Path) -> Path:
    """Write a fresh service-account key file at ``path`` unless one exists (local only).

    Shaped like a key downloaded from IAM, so ``service_account.Credentials`` loads it; the
    RSA key is generated here and is good for signing URLs against the emulator only.
    """
    if path.exists():
        return path
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "colony-local",
        "private_key_id": os.urandom(20).hex(),
        "private_key": pem,
        "client_email": LOCAL_SIGNER_EMAIL,
        "client_id": "0",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process wrote it first: use theirs
        return path
    with os.fdopen(descriptor, "w") as handle:
        json.dump(info, handle)
    return path


class KeySigner:
    """Signs offline with a service-account key file (local mode)."""

    def __init__(self, key_file: Path) -> None:
        from google.oauth2 import service_account

        self.credentials = service_account.Credentials.from_service_account_file(str(key_file))
        self.email: str = self.credentials.service_account_email

    def sign_kwargs(self) -> dict[str, Any]:
        return {"credentials": self.credentials}


class IamSigner:
    """Signs through IAM ``signBlob`` as the runtime's service account (production)."""

    def __init__(self, credentials: Any = None) -> None:
        self._credentials = credentials
        self._lock = threading.Lock()

    def _fresh(self) -> Any:
        import google.auth
        from google.auth.transport.requests import Request

        with self._lock:
            if self._credentials is None:
                self._credentials, _ = google.auth.default(
                    scopes=["https://www.googleapis.com/auth/cloud-platform"]
                )
            if not self._credentials.valid:
                self._credentials.refresh(Request())
            return self._credentials

    def sign_kwargs(self) -> dict[str, Any]:
        credentials = self._fresh()
        email = getattr(credentials, "service_account_email", None)
        if not email or email == "default":
            raise ProviderError(
                "cannot sign URLs: the runtime credentials have no service-account email"
            )
        return {"service_account_email": email, "access_token": credentials.token}


class GcsBlobStore:
    """``colony.ports.BlobStore`` on one GCS bucket."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        signer: KeySigner | IamSigner,
        *,
        timeout: float = 30.0,
        retry_seconds: float = 20.0,
    ) -> None:
        from google.cloud.storage.retry import DEFAULT_RETRY

        self.bucket = bucket
        self._client = client
        self._bucket = client.bucket(bucket)
        self._signer = signer
        self._timeout = timeout
        self._retry = DEFAULT_RETRY.with_timeout(retry_seconds) if retry_seconds > 0 else None

    @staticmethod
    def _check_name(name: str) -> None:
        if not name or name.startswith("/") or len(name.encode()) > 1024 or "\n" in name:
            raise ValidationFailed(f"object name {name!r} is not a valid GCS object name")

    def put(self, name: str, data: bytes, content_type: str) -> str:
        """Store ``data`` under ``name`` (overwriting: same name, same bytes is idempotent)."""
        self._check_name(name)
        blob = self._bucket.blob(name)
        try:
            blob.upload_from_string(
                data, content_type=content_type, timeout=self._timeout, retry=self._retry
            )
        except Exception as error:
            raise _translate(error, f"storing gs://{self.bucket}/{name}") from error
        return f"gs://{self.bucket}/{name}"

    def get(self, name: str) -> bytes:
        self._check_name(name)
        try:
            return bytes(
                self._bucket.blob(name).download_as_bytes(timeout=self._timeout, retry=self._retry)
            )
        except Exception as error:
            raise _translate(error, f"reading gs://{self.bucket}/{name}") from error

    def signed_url(self, name: str, ttl_seconds: int) -> str:
        """A V4 signed GET URL; the host is the client's endpoint (the emulator locally)."""
        self._check_name(name)
        if not 1 <= ttl_seconds <= _MAX_TTL:
            raise ValidationFailed(f"ttl_seconds={ttl_seconds} must be in 1..{_MAX_TTL}")
        try:
            return str(
                self._bucket.blob(name).generate_signed_url(
                    version="v4",
                    expiration=timedelta(seconds=ttl_seconds),
                    method="GET",
                    **self._signer.sign_kwargs(),
                )
            )
        except (ProviderError, ValidationFailed):
            raise
        except Exception as error:
            raise _translate(error, f"signing a URL for gs://{self.bucket}/{name}") from error

    def ensure_bucket(self) -> None:
        """Create the bucket if it is missing (local emulator; production has Terraform)."""
        try:
            if self._client.lookup_bucket(self.bucket, timeout=self._timeout) is None:
                self._client.create_bucket(self.bucket, timeout=self._timeout)
        except Exception as error:
            raise _translate(error, f"creating bucket {self.bucket}") from error


def local_signing_key_path(settings: Settings) -> Path:
    return settings.signing_key_file or settings.data_dir / SIGNING_KEY_NAME


def blob_store_from_settings(settings: Settings, **kwargs: Any) -> GcsBlobStore:
    """The assets bucket for ``settings``: offline key signing locally (the key is generated
    on first use), IAM signing as the runtime service account in production."""
    from google.auth.exceptions import DefaultCredentialsError
    from google.cloud.storage import Client

    signer: KeySigner | IamSigner
    if settings.env == "production" and settings.signing_key_file is None:
        signer = IamSigner()
    else:
        key_file = local_signing_key_path(settings)
        if settings.env == "production" and not key_file.exists():
            raise ConfigError(f"COLONY_SIGNING_KEY_FILE={key_file} does not exist")
        signer = KeySigner(ensure_local_signing_key(key_file))
    try:
        client = Client(project=settings.gcp_project)
    except DefaultCredentialsError as error:
        raise ConfigError(
            "no Google credentials for the assets bucket: set STORAGE_EMULATOR_HOST to a local "
            "gcp-storage-emulator (http://host:port) or run with application default credentials"
        ) from error
    return GcsBlobStore(client, settings.assets_bucket, signer, **kwargs)
