"""GcsBlobStore (GCS's JSON API over REST) against the real ``gcp-storage-emulator``.

The emulator serves signed URLs without checking their signatures, so ``verify_v4_signed_url``
recomputes the V4 canonical request and string-to-sign here, independently of the adapter
(written from Google's V4 signing spec), and verifies the signature with the public half of
the test's service-account key.
"""

from __future__ import annotations

import hashlib
import json
import stat
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from colony.adapters.storage import blob_store_from_settings, ensure_local_signing_key
from colony.errors import NotFound, ProviderUnavailable, ValidationFailed
from colony.settings import Settings
from colony.testing.emulators import storage_emulator
from colony.testing.loopback import closed_port
from tests.conftest import Gcs

pytestmark = pytest.mark.covers("TECH-005")

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str) -> bytes:
    with _OPENER.open(url, timeout=10) as response:
        return bytes(response.read())


def verify_v4_signed_url(
    url: str, key_file: Path, *, now: datetime | None = None
) -> dict[str, str]:
    """Check a V4 signed GET URL against the key in ``key_file``; return its query fields.

    Follows Google's V4 signing spec: canonical request (method, path, sorted canonical query
    without the signature, canonical headers, signed headers, UNSIGNED-PAYLOAD), then the
    string to sign (algorithm, timestamp, scope, hex SHA-256 of the canonical request), then an
    RSA PKCS#1 v1.5 SHA-256 signature. Raises ``InvalidSignature`` if it does not verify.
    """
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    assert query["X-Goog-Algorithm"] == "GOOG4-RSA-SHA256"
    assert query["X-Goog-SignedHeaders"] == "host"
    signature = bytes.fromhex(query["X-Goog-Signature"])

    canonical_query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, v in sorted(query.items())
        if k != "X-Goog-Signature"
    )
    canonical_request = "\n".join(
        ["GET", parts.path, canonical_query, f"host:{parts.netloc}", "", "host", "UNSIGNED-PAYLOAD"]
    )
    credential = query["X-Goog-Credential"]
    email, scope = credential.split("/", 1)
    string_to_sign = "\n".join(
        [
            "GOOG4-RSA-SHA256",
            query["X-Goog-Date"],
            scope,
            hashlib.sha256(canonical_request.encode()).hexdigest(),
        ]
    )
    info = json.loads(key_file.read_text())
    assert email == info["client_email"]
    private = serialization.load_pem_private_key(info["private_key"].encode(), password=None)
    assert isinstance(private, rsa.RSAPrivateKey)
    private.public_key().verify(
        signature, string_to_sign.encode(), padding.PKCS1v15(), hashes.SHA256()
    )
    signed_at = datetime.strptime(query["X-Goog-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert abs((now or datetime.now(UTC)) - signed_at) < timedelta(minutes=5)
    assert scope.startswith(signed_at.strftime("%Y%m%d") + "/")
    return query


def test_put_get_and_signed_url_round_trip(gcs: Gcs) -> None:
    body = "# Deployment kit\n\nÜnïcode survives.\n".encode()
    assert gcs.store.put("kits/org/deal.md", body, "text/markdown") == (
        f"gs://{gcs.bucket}/kits/org/deal.md"
    )
    assert gcs.store.get("kits/org/deal.md") == body

    url = gcs.store.signed_url("kits/org/deal.md", 900)
    assert url.startswith(f"{gcs.url}/{gcs.bucket}/kits/org/deal.md?")
    query = verify_v4_signed_url(url, gcs.key_file)
    assert query["X-Goog-Expires"] == "900"
    assert fetch(url) == body


def test_signature_check_rejects_a_tampered_url(gcs: Gcs) -> None:
    from cryptography.exceptions import InvalidSignature

    gcs.store.put("a.txt", b"a", "text/plain")
    gcs.store.put("b.txt", b"b", "text/plain")
    url = gcs.store.signed_url("a.txt", 60)
    with pytest.raises(InvalidSignature):
        verify_v4_signed_url(url.replace("/a.txt?", "/b.txt?"), gcs.key_file)
    with pytest.raises(InvalidSignature):
        verify_v4_signed_url(url.replace("X-Goog-Expires=60", "X-Goog-Expires=61"), gcs.key_file)
    other = ensure_local_signing_key(gcs.key_file.with_name("other.json"))
    other_info = json.loads(other.read_text())
    other_info["client_email"] = json.loads(gcs.key_file.read_text())["client_email"]
    other.write_text(json.dumps(other_info))
    with pytest.raises(InvalidSignature):
        verify_v4_signed_url(url, other)


def test_missing_object_is_not_found(gcs: Gcs) -> None:
    with pytest.raises(NotFound):
        gcs.store.get("kits/nope.md")


def test_bad_names_and_ttls_are_rejected(gcs: Gcs) -> None:
    with pytest.raises(ValidationFailed):
        gcs.store.put("", b"x", "text/plain")
    with pytest.raises(ValidationFailed):
        gcs.store.signed_url("a.txt", 0)
    with pytest.raises(ValidationFailed):
        gcs.store.signed_url("a.txt", 7 * 24 * 3600 + 1)


def test_unreachable_store_is_provider_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{closed_port()}")  # nobody
    settings = Settings.from_env({"COLONY_DATA_DIR": str(tmp_path)})
    store = blob_store_from_settings(settings, attempts=1, timeout=2.0)
    with pytest.raises(ProviderUnavailable):
        store.put("kits/x.md", b"x", "text/markdown")
    with pytest.raises(ProviderUnavailable):
        store.get("kits/x.md")


def test_an_emulator_with_a_data_dir_keeps_objects_across_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make run keeps its objects beside the embedded database that refers to them."""
    settings = Settings.from_env({"COLONY_DATA_DIR": str(tmp_path)})
    for run in ("first", "second"):
        with storage_emulator(settings.assets_bucket, data_dir=tmp_path / "gcs") as url:
            monkeypatch.setenv("STORAGE_EMULATOR_HOST", url)
            store = blob_store_from_settings(settings)
            if run == "first":
                store.put("kits/kept.md", b"# kept", "text/markdown")
            assert store.get("kits/kept.md") == b"# kept"


def test_local_signing_key_is_generated_once_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{closed_port()}")
    settings = Settings.from_env({"COLONY_DATA_DIR": str(tmp_path / "data")})
    key = tmp_path / "data" / "gcs-signing-key.json"
    blob_store_from_settings(settings)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    first = key.read_text()
    blob_store_from_settings(settings)
    assert key.read_text() == first
    assert json.loads(first)["type"] == "service_account"


class _RuntimeCredentials:
    """Stands in for the function's metadata-server credentials, which cannot exist here:
    like ``compute_engine.Credentials`` it learns its email and token on refresh."""

    def __init__(self) -> None:
        self.service_account_email = "default"
        self.token: str | None = None
        self.refreshes = 0

    @property
    def valid(self) -> bool:
        return self.token is not None

    def refresh(self, request: object) -> None:
        self.refreshes += 1
        self.service_account_email = "onboarding@colony-prod.iam.gserviceaccount.com"
        self.token = f"token-{self.refreshes}"


def test_production_signing_goes_through_iam_as_the_runtime_account(
    gcs: Gcs, tmp_path: Path
) -> None:
    """IAM Credentials ``signBlob`` stood in for by a server that signs with the account's
    key, as IAM does: the URL verifies against that key and names the runtime account."""
    import base64

    from cryptography.hazmat.primitives.asymmetric import padding as pad

    from colony.adapters.google_api import GoogleApi
    from colony.adapters.storage import GcsBlobStore, IamSigner
    from colony.testing.wire import RecordedRequest, Reply, Route, WireServer

    email = "onboarding@colony-prod.iam.gserviceaccount.com"
    key_file = ensure_local_signing_key(tmp_path / "iam-held-key.json")
    info = json.loads(key_file.read_text())
    info["client_email"] = email
    key_file.write_text(json.dumps(info))
    private = serialization.load_pem_private_key(info["private_key"].encode(), password=None)
    assert isinstance(private, rsa.RSAPrivateKey)

    def sign_blob(request: RecordedRequest) -> Reply:
        payload = base64.b64decode(request.body["payload"])
        signed = private.sign(payload, pad.PKCS1v15(), hashes.SHA256())
        return Reply(200, {"keyId": "k1", "signedBlob": base64.b64encode(signed).decode()})

    route = Route.of(
        "iam.signBlob",
        "POST",
        r"/v1/projects/-/serviceAccounts/(?P<email>[^:]+):signBlob",
        sign_blob,
    )
    credentials = _RuntimeCredentials()
    with WireServer(routes=[route]) as iam:
        signer = IamSigner(credentials, GoogleApi("iamcredentials", iam.base_url))
        store = GcsBlobStore(GoogleApi("storage", gcs.url), gcs.bucket, signer)
        gcs.store.put("kits/iam.md", b"# iam", "text/markdown")  # type: ignore[attr-defined]
        url = store.signed_url("kits/iam.md", 600)
        again = store.signed_url("kits/iam.md", 600)
        [first_call, _] = iam.requests_to("iam.signBlob")
    assert first_call.params["email"] == email
    assert verify_v4_signed_url(url, key_file)["X-Goog-Credential"].startswith(email + "/")
    verify_v4_signed_url(again, key_file)
    assert credentials.refreshes == 1  # the token is reused while valid
    assert fetch(url) == b"# iam"


def test_names_follows_next_page_tokens_over_the_wire(no_ambient_config: None) -> None:
    """GCS pages ``objects.list`` (1000 at most per page); gcp-storage-emulator never does,
    so a stand-in answering in three pages shows the adapter reads them all, in order."""
    from colony.adapters.google_api import GoogleApi
    from colony.adapters.storage import GcsBlobStore
    from colony.testing.wire import RecordedRequest, Reply, Route, WireServer

    pages = {
        None: (["imports/o/a.csv", "imports/o/b.csv"], "t1"),
        "t1": (["imports/o/c.csv"], "t2"),
        "t2": (["imports/o/d.csv"], None),
    }

    def listing(request: RecordedRequest) -> Reply:
        assert request.query["prefix"] == ["imports/o/"]
        names, token = pages[(request.query.get("pageToken") or [None])[0]]
        body: dict[str, object] = {"items": [{"name": n} for n in names]}
        if token:
            body["nextPageToken"] = token
        return Reply(200, body)

    route = Route.of("gcs.objects.list", "GET", r"/storage/v1/b/bkt/o", listing)
    with WireServer(routes=[route]) as server:
        store = GcsBlobStore(GoogleApi("storage", server.base_url), "bkt", signer=None)  # type: ignore[arg-type]
        assert store.names("imports/o/") == [f"imports/o/{c}.csv" for c in "abcd"]
        assert len(server.requests_to("gcs.objects.list")) == 3
