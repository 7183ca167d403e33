"""The function registry is the one place topic, queue and function names are written, and
its wiring (topics, queue targets, Pub/Sub flows) is complete."""

from __future__ import annotations

import ast
from pathlib import Path

from colony.flows.handlers import PUBSUB_HANDLERS
from colony.registry import functions as registry
from colony.registry.functions import (
    FUNCTIONS,
    PROVIDER_SECRETS,
    QUEUES,
    TOPICS,
    TRACING_SECRETS,
)

REPO = Path(__file__).resolve().parents[1]
REGISTRY = REPO / "shared" / "colony" / "registry" / "wiring.py"
# Deployed code and the local stack alike: none needs a name of its own (colony/local and
# colony/testing included), so the registry's wiring is the only exception.
SCANNED = (REPO / "shared" / "colony", REPO / "functions")


def name_literals(path: Path) -> list[str]:
    """``path:line: 'name'`` for each string constant equal to a registered topic or queue."""
    names = TOPICS.keys() | QUEUES.keys()
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def test_no_topic_or_queue_name_is_written_outside_the_registry() -> None:
    sources = sorted(p for root in SCANNED for p in root.rglob("*.py"))
    assert len(sources) > 100 and REGISTRY in sources
    # the scan sees names where they are written: every one of them, in the registry
    assert len(name_literals(REGISTRY)) == len(TOPICS) + len(QUEUES)
    found = [hit for path in sources if path != REGISTRY for hit in name_literals(path)]
    assert found == [], "use the constants in colony.registry.wiring instead"


def test_every_name_constant_is_registered_under_its_kind() -> None:
    constants = {k: v for k, v in vars(registry).items() if k.isupper() and isinstance(v, str)}
    topics = {v for k, v in constants.items() if k.endswith("_TOPIC")}
    queues = {v for k, v in constants.items() if k.endswith("_QUEUE")}
    assert topics == TOPICS.keys()
    assert queues == QUEUES.keys()


def test_every_queue_calls_an_http_function_and_is_fed_by_one() -> None:
    for queue in QUEUES.values():
        target = FUNCTIONS[queue.target]
        assert target.trigger == "http", queue.name
        assert not target.public, f"{queue.name}: a task target is invoked by the invoker only"
        assert any(queue.name in f.enqueues for f in FUNCTIONS.values()), queue.name


def test_every_pubsub_function_has_its_flow() -> None:
    assert PUBSUB_HANDLERS.keys() == {n for n, f in FUNCTIONS.items() if f.trigger == "pubsub"}


COMPOSITIONS = {  # colony.runtime.compose module → the parts it builds
    None: set(),
    "model": {"llm", "knowledge"},
    "model_assets": {"llm", "knowledge", "blobs"},
    "decisions": {"llm", "knowledge", "appliers"},  # decides approval items
    "decisions_assets": {"llm", "knowledge", "blobs", "appliers"},  # the chat function
    "knowledge": {"knowledge"},
    "assets": {"blobs"},
    # erasure deletes an org's Langfuse traces; the reply poll reads held inbound mail
    "lifecycle": {"blobs", "traces", "inbound"},
    "mail": {"sender"},  # the SMTP relay or Resend
    "inbound": {"inbound"},  # Resend's received mail (replies its webhook names)
    "research": {"knowledge", "blobs", "web"},  # the open web, its pages kept and embedded
}


def _composition(main: Path) -> str | None:
    """The ``colony.runtime.compose`` module a function's main.py passes to deps()."""
    names = [
        node.module.rsplit(".", 1)[1]
        for node in ast.walk(ast.parse(main.read_text()))
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("colony.runtime.compose.")
    ]
    assert len(names) <= 1, f"{main}: one composition per function"
    return names[0] if names else None


def test_each_function_is_composed_with_what_its_registry_entry_grants() -> None:
    """A function composed with a model holds the tracing keys, one that embeds the provider
    keys, one with the assets part bucket access (one that erases traces, the Langfuse keys);
    and none holds what it is not composed
    with (its bundle then carries no SDK it does not use, and its account no needless key)."""
    for name, function in FUNCTIONS.items():
        composed = COMPOSITIONS[_composition(REPO / "functions" / name / "main.py")]
        secrets = set(function.secrets)
        # the Langfuse keys: to trace model calls, or (data-lifecycle) to delete traces
        traced = "llm" in composed or "traces" in composed
        assert traced == (set(TRACING_SECRETS) <= secrets), name
        assert ("knowledge" in composed) == (set(PROVIDER_SECRETS) <= secrets), name
        assert ("blobs" in composed) == (function.assets != "none"), name
        assert ("sender" in composed) == ("COLONY_SMTP_PASSWORD" in secrets), name
        mail_api = "sender" in composed or "inbound" in composed
        assert mail_api == ("COLONY_RESEND_API_KEY" in secrets), name
