"""Fakes for the ports, shared by tests and benchmarks."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.storage import check_object_name, check_prefix, check_ttl
from colony.adapters.text_stream import replay
from colony.errors import NotFound, ProviderError, ProviderUnavailable, ResponseTooLarge
from colony.ports import DriveFile, ModelRequest, ModelResponse, TextSink, Usage
from colony.webhooks import GOOGLE_DOC


class CountingEmbedder:
    """The offline embedder, counting calls and texts so tests can prove what was (re)embedded."""

    def __init__(self, dim: int = 1536, model: str = "offline-hash-v1") -> None:
        self._inner = OfflineHashEmbedder(dim=dim, model=model)
        self.model, self.dim = model, dim
        self.calls: list[list[str]] = []

    @property
    def texts_embedded(self) -> int:
        return sum(len(batch) for batch in self.calls)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return self._inner.embed(texts)


SCRIPTED_USAGE = Usage(tokens_in=10, tokens_out=5)
ScriptItem = ModelResponse | str | Mapping[str, Any] | BaseException | Callable[[ModelRequest], Any]


class ScriptedChatModel:
    """A ``ChatModel`` answering each request with the next scripted item, recording requests.

    An item is a ``ModelResponse`` (returned as is), a ``str`` (the answer text), a mapping
    (dumped to JSON as the answer text), an exception (raised: e.g. ``ProviderUnavailable``)
    or a callable taking the ``ModelRequest`` and returning any of those. Text answers get
    ``usage`` and ``model``. Running out of items is an ``AssertionError``.
    """

    def __init__(
        self,
        *script: ScriptItem,
        model: str = "scripted-model",
        usage: Usage = SCRIPTED_USAGE,
    ) -> None:
        self.model, self.usage = model, usage
        self._script: deque[ScriptItem] = deque(script)
        self.requests: list[ModelRequest] = []

    def push(self, *items: ScriptItem) -> None:
        self._script.extend(items)

    @property
    def pending(self) -> int:
        return len(self._script)

    def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if not self._script:
            raise AssertionError(
                f"ScriptedChatModel: no answer left for request #{len(self.requests)}"
            )
        item: Any = self._script.popleft()
        if callable(item) and not isinstance(item, BaseException | ModelResponse):
            item = item(request)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ModelResponse):
            return item
        text = item if isinstance(item, str) else json.dumps(dict(item))
        return ModelResponse(text=text, usage=self.usage, model=self.model)

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """The next scripted answer, its text handed to ``on_text`` word by word."""
        return replay(self.request(request), on_text)


def provider_failure(status: int, *, retry_after: float | None = None) -> ProviderError:
    """The exception a real chat adapter raises for an HTTP ``status`` from its provider
    (``colony.ports.ChatModel``): 408, 429 and 5xx are ``ProviderUnavailable`` (retried by the
    runner, after ``retry_after`` when the provider said), anything else ``ProviderError``.
    Script it into a ``ScriptedChatModel`` to stand for that answer; the ChatModel conformance
    suite proves the OpenAI and Gemini adapters raise the same."""
    detail = f"scripted provider failure (HTTP {status})"
    if status in (408, 429) or status >= 500:
        return ProviderUnavailable(detail, retry_after=retry_after)
    return ProviderError(detail)


class MemoryBlobStore:
    """``colony.ports.BlobStore`` in memory, refusing what ``GcsBlobStore`` refuses.

    Signed URLs have the V4 shape (path-style ``https://storage.googleapis.com/<bucket>/
    <object>`` with ``X-Goog-Date``, ``X-Goog-Expires`` and ``X-Goog-Signature``), signed with
    an HMAC key of this instance's; ``fetch`` plays the storage server: it answers a URL this
    store signed, before it expires, with the object's bytes.
    """

    host = "https://storage.googleapis.com"

    def __init__(self, bucket: str = "colony-assets-test") -> None:
        self.bucket = bucket
        self.objects: dict[str, tuple[bytes, str]] = {}  # name -> (bytes, content type)
        self._key = os.urandom(32)

    def put(self, name: str, data: bytes, content_type: str) -> str:
        check_object_name(name)
        self.objects[name] = (bytes(data), content_type)
        return f"gs://{self.bucket}/{name}"

    def get(self, name: str) -> bytes:
        check_object_name(name)
        if name not in self.objects:
            raise NotFound(f"reading gs://{self.bucket}/{name}: not found")
        return self.objects[name][0]

    def names(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        return sorted(name for name in self.objects if name.startswith(prefix))

    def delete(self, name: str) -> bool:
        check_object_name(name)
        return self.objects.pop(name, None) is not None

    def size(self, name: str) -> int:
        return len(self.get(name))

    def signed_upload(
        self, name: str, ttl_seconds: int, max_bytes: int, *, now: datetime | None = None
    ) -> tuple[str, dict[str, str]]:
        """A URL of the same V4 shape as ``signed_url`` (``upload`` plays the server)."""
        headers = {"x-goog-content-length-range": f"0,{int(max_bytes)}"}
        return self.signed_url(name, ttl_seconds, now=now, _signed=headers), headers

    def signed_url(
        self,
        name: str,
        ttl_seconds: int,
        *,
        now: datetime | None = None,
        _signed: dict[str, str] | None = None,
    ) -> str:
        check_object_name(name)
        check_ttl(ttl_seconds)
        moment = (now or datetime.now(UTC)).astimezone(UTC)
        path = f"/{self.bucket}/{quote(name, safe='/~')}"
        query = {
            "X-Goog-Algorithm": "GOOG4-HMAC-SHA256",
            "X-Goog-Date": moment.strftime("%Y%m%dT%H%M%SZ"),
            "X-Goog-Expires": str(ttl_seconds),
            "X-Goog-SignedHeaders": ";".join(["host", *sorted(_signed or {})]),
        }
        query["X-Goog-Signature"] = self._sign(path, query)
        return f"{self.host}{path}?{urlencode(query)}"

    def upload(self, url: str, data: bytes, headers: dict[str, str]) -> None:
        """What PUT ``url`` does: store ``data``, if this store signed ``url`` and ``data``
        fits the signed ``x-goog-content-length-range``."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        if not hmac.compare_digest(
            query.pop("X-Goog-Signature", ""), self._sign(parts.path, query)
        ):
            raise PermissionError("signature does not match")
        low, _, high = headers.get("x-goog-content-length-range", "0,0").partition(",")
        if not int(low) <= len(data) <= int(high):
            raise PermissionError("the body is outside x-goog-content-length-range")
        bucket, _, name = unquote(parts.path).lstrip("/").partition("/")
        if bucket != self.bucket:
            raise PermissionError(f"the URL is for bucket {bucket!r}")
        self.objects[name] = (bytes(data), "application/octet-stream")

    def fetch(self, url: str, *, now: datetime | None = None) -> bytes:
        """What GET ``url`` answers: the object, if this store signed ``url`` and it is live."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        signature = query.pop("X-Goog-Signature", "")
        if not hmac.compare_digest(signature, self._sign(parts.path, query)):
            raise PermissionError("signature does not match")
        signed_at = datetime.strptime(query["X-Goog-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        if (now or datetime.now(UTC)) > signed_at + timedelta(seconds=int(query["X-Goog-Expires"])):
            raise PermissionError("the signed URL has expired")
        bucket, _, name = unquote(parts.path).lstrip("/").partition("/")
        if bucket != self.bucket or name not in self.objects:
            raise NotFound(f"gs://{bucket}/{name}: not found")
        return self.objects[name][0]

    def _sign(self, path: str, query: Mapping[str, str]) -> str:
        canonical = "\n".join([path, *(f"{k}={v}" for k, v in sorted(query.items()))])
        return hmac.new(self._key, canonical.encode(), hashlib.sha256).hexdigest()


class MemoryDrive:
    """``colony.ports.DriveClient`` in memory, seeded as ``colony.testing.drive_server``'s
    ``DriveServer`` is (``add_file``, ``trash``), so a test can use either."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[str, DriveFile, bytes]] = {}  # id -> (folder, file, bytes)
        self._trashed: set[str] = set()

    def add_file(
        self,
        folder: str,
        file_id: str,
        name: str,
        content: bytes,
        mime_type: str = GOOGLE_DOC,
        modified_time: str = "2026-11-19T19:48:00.000Z",
    ) -> None:
        self._files[file_id] = (folder, DriveFile(file_id, name, mime_type, modified_time), content)

    def trash(self, file_id: str) -> None:
        self._trashed.add(file_id)

    def list_folder(self, folder_id: str) -> Iterator[DriveFile]:
        for file_id, (folder, file, _) in list(self._files.items()):
            if folder == folder_id and file_id not in self._trashed:
                yield file

    def download_text(self, file: DriveFile, max_bytes: int) -> bytes:
        if file.id not in self._files:
            raise NotFound("Drive has no such object (GET 404)")
        content = self._files[file.id][2]
        if len(content) > max_bytes:
            raise ResponseTooLarge(f"Drive download exceeds {max_bytes} bytes")
        return content


class RecordingSleep:
    """A ``sleep`` that records the delays it is asked for instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


class MemoryTraceArchive:
    """``colony.ports.TraceArchive`` in memory: trace id → its tags."""

    def __init__(self) -> None:
        self.traces: dict[str, set[str]] = {}

    def add(self, trace_id: str, *tags: str) -> None:
        self.traces[trace_id] = set(tags)

    def trace_ids(self, tag: str) -> list[str]:
        return sorted(t for t, tags in self.traces.items() if tag in tags)

    def delete(self, trace_ids: Sequence[str]) -> None:
        for trace_id in trace_ids:
            self.traces.pop(trace_id, None)
