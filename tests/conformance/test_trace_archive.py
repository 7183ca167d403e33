"""The ``TraceArchive`` port's conformance suite: the in-memory fake and ``LangfuseTraces``.

- ``memory``: ``colony.testing.fakes.MemoryTraceArchive``;
- ``langfuse``: ``LangfuseTraces`` over real HTTP against ``LangfuseServer``, a stand-in
  speaking Langfuse's public trace API (``GET``/``DELETE /api/public/traces``, Basic auth,
  ``meta.totalPages`` pagination).

The contract (``colony.ports.TraceArchive``): ``trace_ids(tag)`` is every trace carrying the
tag, across pages, and no other; ``delete`` removes exactly the ids given, any number of
them, and ids already gone are not an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from colony.adapters.langfuse_traces import LangfuseTraces
from colony.errors import ProviderError, ProviderUnavailable
from colony.ports import TraceArchive, org_tag
from colony.testing.fakes import MemoryTraceArchive
from colony.testing.langfuse_server import LangfuseServer
from tests.conformance.exercise import exercised


@dataclass
class Harness:
    archive: TraceArchive
    seed: Callable[[str, str], None]  # (trace id, org id): a trace as the tracer tags it


@pytest.fixture(params=["memory", "langfuse"])
def harness(request: pytest.FixtureRequest, no_ambient_config: None) -> Iterator[Harness]:
    if request.param == "memory":
        memory = MemoryTraceArchive()
        yield Harness(memory, lambda trace, org: memory.add(trace, org_tag(org), "agent:x"))
        return
    with LangfuseServer() as server:
        client = LangfuseTraces(server.url, server.public_key, server.secret_key)

        def seed(trace: str, org: str) -> None:
            server.add_trace(trace, [org_tag(org), "agent:x"], {"org_id": org})

        yield Harness(client, seed)
        client.close()


def test_it_is_a_trace_archive(harness: Harness) -> None:
    """Both methods: an org's traces found by its tag, then one of them deleted."""
    for trace, org in (("a1", "org_a"), ("a2", "org_a"), ("b1", "org_b")):
        harness.seed(trace, org)
    with exercised(TraceArchive, harness.archive) as archive:
        assert sorted(archive.trace_ids(org_tag("org_a"))) == ["a1", "a2"]
        archive.delete(["a1"])
        assert archive.trace_ids(org_tag("org_a")) == ["a2"]
    assert harness.archive.trace_ids(org_tag("org_b")) == ["b1"]


def test_trace_ids_are_every_trace_of_the_tag_across_pages(harness: Harness) -> None:
    mine = [f"t-{n:03d}" for n in range(230)]  # three pages of 100
    for trace in mine:
        harness.seed(trace, "org_a")
    harness.seed("other-1", "org_ab")
    harness.seed("other-2", "org_b")
    assert sorted(harness.archive.trace_ids(org_tag("org_a"))) == mine
    assert harness.archive.trace_ids(org_tag("org_none")) == []


def test_delete_removes_exactly_the_ids_given_and_tolerates_gone_ones(harness: Harness) -> None:
    for trace in ("a1", "a2", "a3"):
        harness.seed(trace, "org_a")
    harness.seed("b1", "org_b")
    harness.archive.delete(["a1", "a3", "never-existed"])
    assert harness.archive.trace_ids(org_tag("org_a")) == ["a2"]
    harness.archive.delete(["a1"])  # again: nothing left to delete, no error
    assert harness.archive.trace_ids(org_tag("org_b")) == ["b1"]


def test_delete_sends_large_sets_in_batches(harness: Harness) -> None:
    ids = [f"t-{n:03d}" for n in range(250)]
    for trace in ids:
        harness.seed(trace, "org_a")
    harness.archive.delete(ids)
    assert harness.archive.trace_ids(org_tag("org_a")) == []


# -- the adapter's own behaviour on the wire


def test_wrong_keys_are_a_provider_error_naming_no_key(no_ambient_config: None) -> None:
    with LangfuseServer() as server:
        client = LangfuseTraces(server.url, server.public_key, "sk-wrong")
        with pytest.raises(ProviderError) as caught:
            client.trace_ids(org_tag("org_a"))
        assert "401" in str(caught.value) and "sk-" not in str(caught.value)
        client.close()


def test_rate_limits_are_retried_then_unavailable(no_ambient_config: None) -> None:
    waits: list[float] = []
    with LangfuseServer() as server:
        server.add_trace("a1", [org_tag("org_a")], {})
        client = LangfuseTraces(
            server.url, server.public_key, server.secret_key, attempts=3, sleep=waits.append
        )
        server.fail(429, times=2, retry_after_ms=1000)
        assert client.trace_ids(org_tag("org_a")) == ["a1"]
        server.fail(503, times=3)
        with pytest.raises(ProviderUnavailable):
            client.delete(["a1"])
        client.close()
    assert waits[:2] == [1.0, 1.0]
