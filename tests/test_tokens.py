"""Token counting: tiktoken's encodings built in memory from bpe-openai's packaged files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken_ext.openai_public as openai_public

from colony.context import tokens


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_specs_match_tiktokens_own_constructors(name: str, monkeypatch) -> None:
    """tiktoken's constructor would download the ranks (no network here): only that loader
    is replaced, to see which file and hash it asks for; the rest is compared as built."""
    asked: list[tuple[str, str | None]] = []

    def no_download(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        asked.append((url, expected_hash))
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", no_download)
    reference: dict[str, Any] = getattr(openai_public, name)()
    spec = tokens._SPECS[name]
    assert reference["pat_str"] == spec.pat_str
    assert reference["special_tokens"] == spec.special_tokens
    assert asked == [
        (f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken", spec.sha256)
    ]


def test_ranks_come_from_the_packaged_file_and_count_known_texts() -> None:
    ranks = tokens.bpe_ranks("o200k_base")
    assert len(ranks) == 199998  # o200k's mergeable ranks; 200k minus the two gaps
    counter = tokens.counter_for("gpt-4o")
    assert counter.label == "o200k_base"
    assert counter.count("hello world") == 2
    assert tokens.counter_for("gpt-4").count("tiktoken is great!") == 6  # tiktoken's README
    assert counter.truncate("one two three four", 2) == "one two"


def test_a_fresh_process_counts_without_warnings_downloads_or_temp_files(tmp_path: Path) -> None:
    """What failed on a fresh machine: an empty temp dir, warnings as errors. Nothing may be
    written there, no cache variable set, and bpe-openai's module is never imported."""
    tmp, home = tmp_path / "tmp", tmp_path / "home"
    tmp.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIKTOKEN")}
    env.update(TMPDIR=str(tmp), HOME=str(home))
    probe = (
        "import os, sys\n"
        "from colony.context.tokens import counter_for\n"
        "print(counter_for('gpt-4o').count('hello world'))\n"
        "assert 'bpe_openai' not in sys.modules\n"
        "assert 'TIKTOKEN_CACHE_DIR' not in os.environ\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", probe], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
    assert list(tmp.iterdir()) == []
