"""The ``BlobStore`` port's conformance suite: the in-memory fake and the GCS adapter.

- ``memory``: ``colony.testing.fakes.MemoryBlobStore``, whose ``fetch`` plays the storage
  server for the URLs it signs.
- ``gcs``: ``GcsBlobStore`` (GCS's JSON API over REST, V4 URLs signed offline with a
  service-account key) against the real ``gcp-storage-emulator`` in memory (the ``gcs``
  fixture in ``tests/conftest.py``), a fresh bucket per test; its signed URLs are fetched
  over HTTP from the emulator. GCS itself is stood in because the tests run offline (the
  emulator does not check signatures: ``tests/test_storage.py`` verifies them independently).

The contract (``colony.ports.BlobStore`` and what the recording and content flows rely on):
``put`` returns ``gs://<bucket>/<name>`` and ``get`` gives the same bytes back, overwriting
by name; a missing object is ``NotFound``; a bad name or a ttl outside 1 s .. 7 days is
``ValidationFailed``; ``signed_url`` is a V4-shaped https/http URL for that object in that
bucket with the ttl as ``X-Goog-Expires``, and fetching it gives the object's bytes.
``names(prefix)`` lists every object under a folder prefix (ending ``/``), sorted, across
pages, and nothing outside it (gcp-storage-emulator answers in one page, so the adapter's
``nextPageToken`` loop is in tests/test_storage.py); ``delete`` removes one object, and deleting
a missing one is False, not an error (erasure and retention re-run after a crash).
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlsplit

import pytest

from colony.errors import NotFound, ValidationFailed
from colony.ports import BlobStore
from colony.testing.fakes import MemoryBlobStore
from tests.conformance.exercise import exercised
from tests.conftest import Gcs

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _http_get(url: str) -> bytes:
    with _OPENER.open(url, timeout=10) as response:
        return bytes(response.read())


def _http_put(url: str, data: bytes, headers: dict[str, str]) -> None:
    request = urllib.request.Request(url, data=data, method="PUT", headers=headers)
    with _OPENER.open(request, timeout=10) as response:
        assert response.status == 200


@dataclass
class Harness:
    store: BlobStore
    fetch: Callable[[str], bytes]  # GET a signed URL, as an agent handed it would
    upload: Callable[[str, bytes, dict[str, str]], None]  # PUT to a signed upload URL


@pytest.fixture(params=["memory", "gcs"])
def harness(request: pytest.FixtureRequest) -> Harness:
    if request.param == "memory":
        memory = MemoryBlobStore("colony-assets-test")
        return Harness(memory, memory.fetch, memory.upload)
    gcs: Gcs = request.getfixturevalue("gcs")
    return Harness(gcs.store, _http_get, _http_put)  # type: ignore[arg-type]


def test_it_is_a_blob_store(harness: Harness) -> None:
    """Every method, once, each answering as the contract says."""
    with exercised(BlobStore, harness.store) as store:
        assert isinstance(store.bucket, str) and store.bucket
        assert store.put("kits/org_a/k.md", b"kit", "text/markdown") == (
            f"gs://{store.bucket}/kits/org_a/k.md"
        )
        assert store.get("kits/org_a/k.md") == b"kit"
        assert store.size("kits/org_a/k.md") == 3
        assert harness.fetch(store.signed_url("kits/org_a/k.md", 60)) == b"kit"
        url, headers = store.signed_upload("kits/org_a/up.md", 60, max_bytes=64)
        harness.upload(url, b"uploaded", headers)
        assert store.names("kits/org_a/") == ["kits/org_a/k.md", "kits/org_a/up.md"]
        assert store.delete("kits/org_a/k.md") is True
        assert store.names("kits/org_a/") == ["kits/org_a/up.md"]


def test_put_then_get_returns_the_same_bytes(harness: Harness) -> None:
    store = harness.store
    body = "# Kit\n\nÜnïcode survives.\n".encode() + bytes(range(256))
    assert store.put("kits/org_a/deal 1.md", body, "text/markdown") == (
        f"gs://{store.bucket}/kits/org_a/deal 1.md"
    )
    assert store.get("kits/org_a/deal 1.md") == body
    # Not asserted: a zero-byte object. GCS stores one, but gcp-storage-emulator drops the
    # connection on an empty media upload, so the stand-in cannot show it.


def test_put_overwrites_by_name(harness: Harness) -> None:
    harness.store.put("transcripts/r.txt", b"first", "text/plain")
    harness.store.put("transcripts/r.txt", b"second", "text/plain")
    assert harness.store.get("transcripts/r.txt") == b"second"


def test_a_missing_object_is_not_found(harness: Harness) -> None:
    harness.store.put("kits/present.md", b"x", "text/markdown")
    with pytest.raises(NotFound):
        harness.store.get("kits/absent.md")


@pytest.mark.parametrize("name", ["", "/leading-slash", "new\nline", "x" * 1025])
def test_bad_names_are_refused(harness: Harness, name: str) -> None:
    with pytest.raises(ValidationFailed):
        harness.store.put(name, b"x", "text/plain")
    with pytest.raises(ValidationFailed):
        harness.store.get(name)
    with pytest.raises(ValidationFailed):
        harness.store.signed_url(name, 60)


@pytest.mark.parametrize("ttl", [0, -5, 7 * 24 * 3600 + 1])
def test_ttls_outside_one_second_to_seven_days_are_refused(harness: Harness, ttl: int) -> None:
    harness.store.put("a.txt", b"a", "text/plain")
    with pytest.raises(ValidationFailed, match="ttl"):
        harness.store.signed_url("a.txt", ttl)


@pytest.mark.parametrize("ttl", [60, 900, 7 * 24 * 3600])
def test_a_signed_url_is_for_that_object_and_serves_its_bytes(harness: Harness, ttl: int) -> None:
    store = harness.store
    body = b"transcript \xe2\x9c\x93"
    store.put("transcripts/org_a/rec 1.txt", body, "text/plain")
    store.put("transcripts/org_a/rec 2.txt", b"another", "text/plain")
    url = store.signed_url("transcripts/org_a/rec 1.txt", ttl)
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    assert parts.scheme in ("https", "http") and parts.netloc
    assert parts.path == f"/{store.bucket}/{quote('transcripts/org_a/rec 1.txt', safe='/~')}"
    assert query["X-Goog-Expires"] == str(ttl)
    assert {"X-Goog-Algorithm", "X-Goog-Date", "X-Goog-Signature"} <= set(query)
    assert harness.fetch(url) == body
    assert url != store.signed_url("transcripts/org_a/rec 2.txt", ttl)


def test_names_lists_one_folder_sorted_and_nothing_beside_it(harness: Harness) -> None:
    store = harness.store
    for name in (
        "transcripts/org_a/b.txt",
        "transcripts/org_a/a.txt",
        "transcripts/org_ab/x.txt",
        "kits/org_a/k.md",
        "transcripts/org_a/sub/c.txt",
    ):
        store.put(name, b"x", "text/plain")
    assert store.names("transcripts/org_a/") == [
        "transcripts/org_a/a.txt",
        "transcripts/org_a/b.txt",
        "transcripts/org_a/sub/c.txt",
    ]
    assert store.names("imports/org_a/") == []


@pytest.mark.parametrize("prefix", ["transcripts/org_a", "", "/x/"])
def test_a_prefix_must_name_a_folder(harness: Harness, prefix: str) -> None:
    with pytest.raises(ValidationFailed):
        harness.store.names(prefix)


def test_delete_removes_one_object_and_a_second_delete_is_false(harness: Harness) -> None:
    store = harness.store
    store.put("kits/org_a/k.md", b"k", "text/markdown")
    store.put("kits/org_a/l.md", b"l", "text/markdown")
    assert store.delete("kits/org_a/k.md") is True
    assert store.delete("kits/org_a/k.md") is False
    with pytest.raises(NotFound):
        store.get("kits/org_a/k.md")
    assert store.names("kits/org_a/") == ["kits/org_a/l.md"]
    with pytest.raises(ValidationFailed):
        store.delete("")


def test_a_signed_upload_stores_the_body_and_size_reads_it_without_downloading(
    harness: Harness,
) -> None:
    store = harness.store
    url, headers = store.signed_upload("imports/org_a/job 1/file", 900, max_bytes=1024)
    parts = urlsplit(url)
    assert parts.path == f"/{store.bucket}/{quote('imports/org_a/job 1/file', safe='/~')}"
    assert headers == {"x-goog-content-length-range": "0,1024"}
    assert "x-goog-content-length-range" in dict(parse_qsl(parts.query))["X-Goog-SignedHeaders"]
    body = "Email,Name\nümlaut@example.com,Ü\n".encode()
    harness.upload(url, body, headers)
    assert store.get("imports/org_a/job 1/file") == body
    assert store.size("imports/org_a/job 1/file") == len(body)
    with pytest.raises(NotFound):
        store.size("imports/org_a/absent")
