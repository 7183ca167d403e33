"""What the Langfuse stand-in (``langfuse_server``) answers for datasets and their runs, as
the official SDK (v5) speaks to Langfuse:

- ``POST /api/public/v2/datasets`` creates a dataset; ``GET /api/public/v2/datasets/{name}``
  reads one (404 ``{"message"}`` when there is none);
- ``POST /api/public/dataset-items`` upserts an item by its ``id``; ``GET
  /api/public/dataset-items?datasetName=&page=&limit=`` lists a dataset's items, paginated;
- ``GET /api/public/projects``: the key pair's project (the SDK derives an experiment's id
  from it);
- ``POST /api/public/otel/v1/traces``: the SDK's OpenTelemetry export (protobuf, gzip). A
  dataset run is not a call of its own in v5: ``run_experiment`` exports one trace per item
  whose spans carry ``langfuse.experiment.*`` attributes (the run's id and name, the dataset
  and item ids, the expected output), and this reads the runs back out of them;
- ``POST /api/public/scores``: the evaluators' scores, a batch (202 ``Accepted``).

``experiments()``, ``items(dataset)`` and ``scores()`` show a test what arrived.
"""

from __future__ import annotations

import gzip
import math
import threading
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from colony.testing.wire import RecordedRequest, Reply, Route

PROJECT = {
    "id": "project-local",
    "name": "colony-local",
    "organization": {"id": "org-local", "name": "colony"},
    "metadata": {},
}
EXPERIMENT = "langfuse.experiment."
NOW = "2026-01-01T00:00:00.000Z"


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, kind) if kind else None


class LangfuseDatasets:
    """Datasets, items, exported experiment spans and scores, in memory."""

    def __init__(self, denied: Callable[[RecordedRequest], Reply | None]) -> None:
        self._denied = denied
        self._lock = threading.Lock()
        self._datasets: dict[str, dict[str, Any]] = {}
        self._items: dict[str, dict[str, Any]] = {}
        self._spans: list[dict[str, Any]] = []
        self._scores: list[dict[str, Any]] = []

    def routes(self) -> list[Route]:
        guard = self._guarded
        return [
            Route.of(
                "langfuse.datasets.create", "POST", r"/api/public/v2/datasets", guard(self._create)
            ),
            Route.of(
                "langfuse.datasets.get",
                "GET",
                r"/api/public/v2/datasets/(?P<name>[^/]+)",
                guard(self._get),
            ),
            Route.of(
                "langfuse.items.create", "POST", r"/api/public/dataset-items", guard(self._upsert)
            ),
            Route.of("langfuse.items.list", "GET", r"/api/public/dataset-items", guard(self._list)),
            Route.of("langfuse.projects", "GET", r"/api/public/projects", guard(self._projects)),
            Route.of("langfuse.otel", "POST", r"/api/public/otel/v1/traces", guard(self._otel)),
            Route.of("langfuse.scores", "POST", r"/api/public/scores", guard(self._score)),
        ]

    def _guarded(
        self, handler: Callable[[RecordedRequest], Reply]
    ) -> Callable[[RecordedRequest], Reply]:
        def respond(request: RecordedRequest) -> Reply:
            return self._denied(request) or handler(request)

        return respond

    # -- what a test reads ---------------------------------------------------------------------

    def items(self, dataset: str) -> list[dict[str, Any]]:
        with self._lock:
            return [i for i in self._items.values() if i["datasetName"] == dataset]

    def scores(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._scores)

    def experiments(self) -> dict[str, dict[str, Any]]:
        """Experiment id → its name, dataset and items (item id → trace id, expected output,
        output), read from the exported spans."""
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            spans = list(self._spans)
        for span in spans:
            attrs = span["attributes"]
            run = attrs.get(f"{EXPERIMENT}id")
            if not run or f"{EXPERIMENT}item.id" not in attrs:
                continue
            entry = found.setdefault(
                run,
                {
                    "name": attrs.get(f"{EXPERIMENT}name"),
                    "dataset": attrs.get(f"{EXPERIMENT}dataset.id"),
                    "items": {},
                },
            )
            item = entry["items"].setdefault(
                attrs[f"{EXPERIMENT}item.id"], {"trace_id": span["trace_id"]}
            )
            for key, name in (
                (f"{EXPERIMENT}item.expected_output", "expected_output"),
                ("langfuse.observation.output", "output"),
            ):
                if key in attrs:
                    item[name] = attrs[key]
        return found

    # -- the routes ----------------------------------------------------------------------------

    def _create(self, request: RecordedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        name = body.get("name")
        if not isinstance(name, str) or not name:
            return Reply(400, {"message": "name is required"})
        with self._lock:
            dataset = self._datasets.setdefault(
                name,
                {
                    "id": uuid.uuid4().hex,
                    "name": name,
                    "projectId": PROJECT["id"],
                    "createdAt": NOW,
                    "updatedAt": NOW,
                },
            )
            dataset.update(description=body.get("description"), metadata=body.get("metadata"))
        return Reply(200, dataset)

    def _get(self, request: RecordedRequest) -> Reply:
        with self._lock:
            dataset = self._datasets.get(unquote(request.params["name"]))
        if dataset is None:
            return Reply(404, {"message": "Dataset not found"})
        return Reply(200, dataset)

    def _upsert(self, request: RecordedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        with self._lock:
            dataset = self._datasets.get(str(body.get("datasetName")))
            if dataset is None:
                return Reply(404, {"message": "Dataset not found"})
            item_id = str(body.get("id") or uuid.uuid4().hex)
            item = {
                "id": item_id,
                "status": body.get("status") or "ACTIVE",
                "input": body.get("input"),
                "expectedOutput": body.get("expectedOutput"),
                "metadata": body.get("metadata"),
                "datasetId": dataset["id"],
                "datasetName": dataset["name"],
                "createdAt": NOW,
                "updatedAt": NOW,
                "mediaReferences": [],
            }
            self._items[item_id] = item
        return Reply(200, item)

    def _list(self, request: RecordedRequest) -> Reply:
        name = (request.query.get("datasetName") or [""])[0]
        page = int((request.query.get("page") or ["1"])[0])
        limit = int((request.query.get("limit") or ["50"])[0])
        matching = self.items(name)
        chunk = matching[(page - 1) * limit : page * limit]
        total = math.ceil(len(matching) / limit) if limit else 0
        meta = {"page": page, "limit": limit, "totalItems": len(matching), "totalPages": total}
        return Reply(200, {"data": chunk, "meta": meta})

    def _projects(self, request: RecordedRequest) -> Reply:
        return Reply(200, {"data": [PROJECT]})

    def _otel(self, request: RecordedRequest) -> Reply:
        raw = request.raw_body
        if (request.header("content-encoding") or "").lower() == "gzip":
            raw = gzip.decompress(raw)
        export = ExportTraceServiceRequest.FromString(raw)
        spans = [
            {
                "trace_id": span.trace_id.hex(),
                "span_id": span.span_id.hex(),
                "name": span.name,
                "attributes": {kv.key: _value(kv.value) for kv in span.attributes},
            }
            for resource in export.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with self._lock:
            self._spans.extend(spans)
        body = ExportTraceServiceResponse().SerializeToString()
        return Reply(200, body, headers={"Content-Type": "application/x-protobuf"})

    def _score(self, request: RecordedRequest) -> Reply:
        batch = request.body if isinstance(request.body, list) else [request.body]
        if not all(isinstance(s, dict) and s.get("name") for s in batch):
            return Reply(400, {"message": "every score needs a name"})
        with self._lock:
            self._scores.extend(batch)
        return Reply(202, {"message": "Accepted"})
