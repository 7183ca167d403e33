"""Fakes for the ports, shared by tests and benchmarks."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from colony.adapters.embedding import OfflineHashEmbedder
from colony.ports import ModelRequest, ModelResponse, Usage


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


class RecordingSleep:
    """A ``sleep`` that records the delays it is asked for instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
