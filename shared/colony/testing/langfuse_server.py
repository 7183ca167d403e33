"""A local stand-in for Langfuse's public API: traces (``/api/public/traces``), and datasets
with their runs as the official SDK records them (``colony.testing.langfuse_datasets``).

``GET /api/public/traces`` (``tags`` repeated: every tag must be on the trace; ``page`` from
1, ``limit`` at most 100; ``{"data": [...], "meta": {"page", "limit", "totalItems",
"totalPages"}}``) and ``DELETE /api/public/traces`` (``{"traceIds": [...]}`` →
``{"message": ...}``), both behind Basic auth with the project's key pair, errors as
``{"message": ...}``. ``add_trace`` seeds what the tracer would have ingested. ``datasets``
holds the datasets, their items, the dataset runs (experiments) and the scores.
"""

from __future__ import annotations

import base64
import math
import threading
from collections.abc import Sequence
from typing import Any

from colony.testing.langfuse_datasets import LangfuseDatasets
from colony.testing.wire import RecordedRequest, Reply, Route, WireServer

PUBLIC_KEY = "pk-lf-local"
SECRET_KEY = "sk-lf-local"
MAX_LIMIT = 100


class LangfuseServer(WireServer):
    """Langfuse's trace listing and bulk delete on 127.0.0.1, over an in-memory project."""

    def __init__(self, public_key: str = PUBLIC_KEY, secret_key: str = SECRET_KEY) -> None:
        self.public_key, self.secret_key = public_key, secret_key
        self._traces: dict[str, dict[str, Any]] = {}
        self._data_lock = threading.Lock()
        self.datasets = LangfuseDatasets(self._denied)
        super().__init__(
            routes=[
                Route.of("langfuse.traces.list", "GET", r"/api/public/traces", self._list),
                Route.of("langfuse.traces.delete", "DELETE", r"/api/public/traces", self._delete),
                *self.datasets.routes(),
            ]
        )

    @property
    def url(self) -> str:
        return self.base_url

    def add_trace(self, trace_id: str, tags: Sequence[str], metadata: dict[str, Any]) -> None:
        with self._data_lock:
            self._traces[trace_id] = {"id": trace_id, "tags": list(tags), "metadata": metadata}

    def trace_ids(self) -> list[str]:
        with self._data_lock:
            return sorted(self._traces)

    def _denied(self, request: RecordedRequest) -> Reply | None:
        expected = base64.b64encode(f"{self.public_key}:{self.secret_key}".encode()).decode()
        if request.header("authorization") != f"Basic {expected}":
            return Reply(401, {"message": "Invalid credentials"})
        return None

    def _list(self, request: RecordedRequest) -> Reply:
        if (denied := self._denied(request)) is not None:
            return denied
        try:
            page = int((request.query.get("page") or ["1"])[0])
            limit = int((request.query.get("limit") or ["50"])[0])
        except ValueError:
            return Reply(400, {"message": "page and limit must be integers"})
        if page < 1 or not 1 <= limit <= MAX_LIMIT:
            return Reply(400, {"message": "page must be >= 1 and limit in 1..100"})
        tags = set(request.query.get("tags") or ())
        with self._data_lock:
            matching = [t for _, t in sorted(self._traces.items()) if tags <= set(t["tags"])]
        chunk = matching[(page - 1) * limit : page * limit]
        meta = {
            "page": page,
            "limit": limit,
            "totalItems": len(matching),
            "totalPages": math.ceil(len(matching) / limit),
        }
        return Reply(200, {"data": chunk, "meta": meta})

    def _delete(self, request: RecordedRequest) -> Reply:
        if (denied := self._denied(request)) is not None:
            return denied
        body = request.body if isinstance(request.body, dict) else {}
        ids = body.get("traceIds")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            return Reply(400, {"message": "traceIds must be a non-empty list of strings"})
        with self._data_lock:
            for trace_id in ids:
                self._traces.pop(trace_id, None)
        return Reply(200, {"message": "Traces deleted"})
