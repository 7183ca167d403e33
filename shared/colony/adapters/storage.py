"""``GcsBlobStore``: the assets bucket (``colony.ports.BlobStore``) on GCS's JSON API.

A few calls, each one request over ``colony.adapters.google_api`` (why not
``google-cloud-storage``: it brings ``google-api-core`` and protobuf, a sixth of a webhook's
bundle, for an upload): ``objects.insert`` (``uploadType=media``), ``objects.get``
(``alt=media``), ``objects.list`` (``prefix``, ``pageToken``) and ``objects.delete`` for
erasure and retention, and, locally, ``buckets.insert``. ``STORAGE_EMULATOR_HOST``
(``http://host:port``) points them at ``gcp-storage-emulator``
(``colony.testing.emulators.storage_emulator``), which serves the same JSON API.

Agents are handed V4 signed URLs, never raw bytes (seed §3.4). ``signed_url`` builds the V4
canonical request and string to sign (Google's "V4 signing process", path-style
``https://storage.googleapis.com/<bucket>/<object>``); the signature comes from one of:

- ``KeySigner``: locally, offline, a service-account key file (``COLONY_SIGNING_KEY_FILE``,
  else one generated once into ``<data_dir>/gcs-signing-key.json``, mode 0600). The key never
  leaves the machine and no Google API is called to sign;
- ``IamSigner``: in production, the function's own service account through IAM Credentials'
  ``signBlob``: no key file exists.

Errors: a missing object is ``NotFound``; 429/5xx, timeouts and unreachable hosts are
``ProviderUnavailable`` (the caller's transport retries the whole step); any other refusal is
``ProviderError``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlsplit

from colony.adapters.google_api import CLOUD_PLATFORM, GoogleApi, GoogleApiError
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
MAX_SIGNED_URL_TTL = 7 * 24 * 3600  # V4 signed URLs live at most seven days


def check_object_name(name: str) -> None:
    """What GCS accepts as an object name (here: not empty, no leading ``/`` or newline,
    at most 1024 bytes); ``ValidationFailed`` otherwise."""
    if not name or name.startswith("/") or len(name.encode()) > 1024 or "\n" in name:
        raise ValidationFailed(f"object name {name!r} is not a valid GCS object name")


def check_prefix(prefix: str) -> None:
    """A listing prefix names a folder: a valid object name ending with ``/``."""
    check_object_name(prefix)
    if not prefix.endswith("/"):
        raise ValidationFailed(f"prefix {prefix!r} must end with '/' (a folder)")


def check_ttl(ttl_seconds: int) -> None:
    if not 1 <= ttl_seconds <= MAX_SIGNED_URL_TTL:
        raise ValidationFailed(f"ttl_seconds={ttl_seconds} must be in 1..{MAX_SIGNED_URL_TTL}")


def _translate(error: GoogleApiError, what: str) -> Exception:
    """A failed call, re-expressed as ours (messages carry no object bytes)."""
    if error.status == 404:
        return NotFound(f"{what}: not found")
    if error.transient:
        return ProviderUnavailable(f"{what} failed transiently: {error.status or error.reason}")
    return ProviderError(f"{what} failed: {error.status} {error.reason}")


def ensure_local_signing_key(path: Path) -> Path:
    """Write a fresh service-account key file at ``path`` unless one exists (local only).

    Shaped like a key downloaded from IAM, so ``service_account.Credentials`` loads it; the
    RSA key is generated here and is good for signing URLs against the emulator only.
    """
    if path.exists():
        return path
    # lazy: cryptography, only to make a local signing key (never deployed)
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


class Signer(Protocol):
    """Signs V4 strings to sign as one service account."""

    def email(self) -> str: ...

    def sign(self, payload: bytes) -> bytes: ...


class KeySigner:
    """Signs offline with a service-account key file (local mode)."""

    def __init__(self, key_file: Path) -> None:
        # lazy: cryptography, only for local key-file signing (never deployed)
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        info = json.loads(key_file.read_text())
        key = serialization.load_pem_private_key(info["private_key"].encode(), password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ConfigError(f"{key_file} does not hold an RSA service-account key")
        self._key, self._email = key, str(info["client_email"])

    def email(self) -> str:
        return self._email

    def sign(self, payload: bytes) -> bytes:
        # lazy: cryptography, loaded only to sign a URL
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        return self._key.sign(payload, padding.PKCS1v15(), hashes.SHA256())


class IamSigner:
    """Signs through IAM Credentials ``signBlob`` as the runtime's service account
    (production). The account's email is learnt from its credentials (the metadata server
    names it on the first refresh); signing needs ``iam.serviceAccounts.signBlob`` on itself
    (``roles/iam.serviceAccountTokenCreator``, terraform)."""

    def __init__(self, credentials: Any = None, api: GoogleApi | None = None) -> None:
        self._credentials = credentials
        self._api = api or GoogleApi("iamcredentials")
        self._lock = threading.Lock()

    def email(self) -> str:
        # lazy: google-auth, loaded on the first signed URL
        import google.auth
        from google.auth.transport.requests import Request

        with self._lock:
            if self._credentials is None:
                self._credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM])
            if not self._credentials.valid:
                self._credentials.refresh(Request())
            email = getattr(self._credentials, "service_account_email", None)
        if not email or email == "default":
            raise ProviderError(
                "cannot sign URLs: the runtime credentials have no service-account email"
            )
        return str(email)

    def sign(self, payload: bytes) -> bytes:
        path = f"/v1/projects/-/serviceAccounts/{quote(self.email(), safe='@.')}:signBlob"
        try:
            answer = self._api.call("POST", path, {"payload": base64.b64encode(payload).decode()})
        except GoogleApiError as error:
            raise _translate(error, "signing a URL through IAM") from error
        return base64.b64decode(answer["signedBlob"])


def _v4_quote(value: str) -> str:
    return quote(value, safe="-_.~")


class GcsBlobStore:
    """``colony.ports.BlobStore`` on one GCS bucket."""

    def __init__(
        self, api: GoogleApi, bucket: str, signer: Signer, *, project: str = "colony-local"
    ) -> None:
        self.bucket = bucket
        self._api, self._signer, self._project = api, signer, project

    def _object_path(self, name: str) -> str:
        return f"/storage/v1/b/{self.bucket}/o/{quote(name, safe='')}"

    def put(self, name: str, data: bytes, content_type: str) -> str:
        """Store ``data`` under ``name`` (overwriting: same name, same bytes is idempotent)."""
        check_object_name(name)
        try:
            self._api.send(
                "POST",
                f"/upload/storage/v1/b/{self.bucket}/o",
                params={"uploadType": "media", "name": name},
                data=data,
                headers={"Content-Type": content_type},
            )
        except GoogleApiError as error:
            raise _translate(error, f"storing gs://{self.bucket}/{name}") from error
        return f"gs://{self.bucket}/{name}"

    def get(self, name: str) -> bytes:
        check_object_name(name)
        try:
            response = self._api.send("GET", self._object_path(name), params={"alt": "media"})
        except GoogleApiError as error:
            raise _translate(error, f"reading gs://{self.bucket}/{name}") from error
        return bytes(response.content)

    def names(self, prefix: str) -> list[str]:
        """``objects.list`` under ``prefix``, every page (``nextPageToken``), sorted."""
        check_prefix(prefix)
        found: list[str] = []
        params: dict[str, str] = {"prefix": prefix, "fields": "items(name),nextPageToken"}
        while True:
            try:
                page = self._api.send("GET", f"/storage/v1/b/{self.bucket}/o", params=params)
            except GoogleApiError as error:
                raise _translate(error, f"listing gs://{self.bucket}/{prefix}") from error
            body = page.json() if page.content else {}
            found += [str(item["name"]) for item in body.get("items") or ()]
            token = body.get("nextPageToken")
            if not token:
                return sorted(found)
            params["pageToken"] = str(token)

    def delete(self, name: str) -> bool:
        """``objects.delete``; a 404 is False (already gone: a re-run erasure goes on)."""
        check_object_name(name)
        try:
            self._api.send("DELETE", self._object_path(name))
        except GoogleApiError as error:
            if error.status == 404:
                return False
            raise _translate(error, f"deleting gs://{self.bucket}/{name}") from error
        return True

    def size(self, name: str) -> int:
        """The object's size in bytes, from its metadata (nothing of it is downloaded)."""
        check_object_name(name)
        try:
            response = self._api.send("GET", self._object_path(name), params={"fields": "size"})
        except GoogleApiError as error:
            raise _translate(error, f"looking up gs://{self.bucket}/{name}") from error
        return int(response.json()["size"])

    def signed_url(self, name: str, ttl_seconds: int, *, now: datetime | None = None) -> str:
        """A V4 signed GET URL; the host is the API's (the emulator locally)."""
        return self._signed("GET", name, ttl_seconds, {}, now)

    def signed_upload(
        self, name: str, ttl_seconds: int, max_bytes: int, *, now: datetime | None = None
    ) -> tuple[str, dict[str, str]]:
        """A V4 signed PUT URL and the headers the upload must send: GCS refuses a body
        outside ``x-goog-content-length-range`` (a signed header, so it cannot be dropped)."""
        headers = {"x-goog-content-length-range": f"0,{int(max_bytes)}"}
        return self._signed("PUT", name, ttl_seconds, headers, now), headers

    def _signed(
        self,
        method: str,
        name: str,
        ttl_seconds: int,
        headers: dict[str, str],
        now: datetime | None,
    ) -> str:
        check_object_name(name)
        check_ttl(ttl_seconds)
        base = urlsplit(self._api.base_url)
        moment = (now or datetime.now(UTC)).astimezone(UTC)
        timestamp = moment.strftime("%Y%m%dT%H%M%SZ")
        scope = f"{moment.strftime('%Y%m%d')}/auto/storage/goog4_request"
        path = f"/{self.bucket}/{quote(name, safe='/~')}"
        signed = {"host": base.netloc, **{k.lower(): v for k, v in headers.items()}}
        signed_names = ";".join(sorted(signed))
        query = {
            "X-Goog-Algorithm": "GOOG4-RSA-SHA256",
            "X-Goog-Credential": f"{self._signer.email()}/{scope}",
            "X-Goog-Date": timestamp,
            "X-Goog-Expires": str(ttl_seconds),
            "X-Goog-SignedHeaders": signed_names,
        }
        canonical_query = "&".join(
            f"{_v4_quote(k)}={_v4_quote(v)}" for k, v in sorted(query.items())
        )
        canonical_headers = "".join(f"{k}:{signed[k]}\n" for k in sorted(signed))
        canonical_request = "\n".join(
            [method, path, canonical_query, canonical_headers, signed_names, "UNSIGNED-PAYLOAD"]
        )
        string_to_sign = "\n".join(
            [
                "GOOG4-RSA-SHA256",
                timestamp,
                scope,
                hashlib.sha256(canonical_request.encode()).hexdigest(),
            ]
        )
        signature = self._signer.sign(string_to_sign.encode()).hex()
        return f"{base.scheme}://{base.netloc}{path}?{canonical_query}&X-Goog-Signature={signature}"

    def ensure_bucket(self) -> None:
        """Create the bucket if it is missing (local emulator; production has Terraform)."""
        try:
            self._api.send("GET", f"/storage/v1/b/{self.bucket}")
            return
        except GoogleApiError as error:
            if error.status != 404:
                raise _translate(error, f"looking up bucket {self.bucket}") from error
        try:
            self._api.call("POST", f"/storage/v1/b?project={self._project}", {"name": self.bucket})
        except GoogleApiError as error:
            if error.status != 409:  # created meanwhile by another process
                raise _translate(error, f"creating bucket {self.bucket}") from error


def local_signing_key_path(settings: Settings) -> Path:
    return settings.signing_key_file or settings.data_dir / SIGNING_KEY_NAME


def blob_store_from_settings(
    settings: Settings, *, timeout: float = 30.0, attempts: int = 3
) -> GcsBlobStore:
    """The assets bucket for ``settings``: offline key signing locally (the key is generated
    on first use), IAM signing as the runtime service account in production.
    ``STORAGE_EMULATOR_HOST`` (read here, as the Google SDKs read it) names a local emulator.
    """
    signer: Signer
    if settings.env == "production" and settings.signing_key_file is None:
        signer = IamSigner()
    else:
        key_file = local_signing_key_path(settings)
        if settings.env == "production" and not key_file.exists():
            raise ConfigError(f"COLONY_SIGNING_KEY_FILE={key_file} does not exist")
        signer = KeySigner(ensure_local_signing_key(key_file))
    endpoint = os.environ.get("STORAGE_EMULATOR_HOST", "").strip() or None
    api = GoogleApi("storage", endpoint, timeout=timeout, attempts=attempts)
    return GcsBlobStore(api, settings.assets_bucket, signer, project=settings.gcp_project)
