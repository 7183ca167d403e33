"""Chunking along a document's own structure (``knowledge.chunking``), pure: no database."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from colony.knowledge.chunking import block_kind, chunk_blocks, chunk_text

WORDS = ("leases", "Epic", "sensors", "pricing", "clinics", "renewals", "occupancy", "HIPAA")


def sentences(rng: random.Random, n: int) -> list[str]:
    return [
        f"The {rng.choice(WORDS)} review covers {rng.randint(2, 900)} rooms and"
        f" {rng.choice(WORDS)} this quarter."
        for _ in range(n)
    ]


def test_block_kinds_follow_how_the_notion_adapter_writes_them() -> None:
    assert [block_kind(t) for t in ("# A", "### C", "- x", "- [ ] do", "1. one", "2) two")] == [
        "heading",
        "heading",
        "item",
        "item",
        "item",
        "item",
    ]
    assert [block_kind(t) for t in ("#hashtag", "> a quote", "-5 degrees", "Plain.")] == [
        "paragraph"
    ] * 4


def test_a_chunk_is_a_block_with_its_headings_and_a_list_is_one_block() -> None:
    blocks = [
        "# Win/loss review",
        "## Why we win",
        "A dated decision. Scheduling data joined to occupancy.",
        "Executive sponsors attend early.",
        "## Recommendations",
        "- Bring the SE to the first technical call.",
        "- Qualify for a dated trigger.",
        "> You were the only vendor that talked about our leases.",
        "## Open questions",
    ]
    assert chunk_blocks(blocks) == [
        "# Win/loss review\n## Why we win\nA dated decision. Scheduling data joined to occupancy.",
        "Executive sponsors attend early.",
        "## Recommendations\n- Bring the SE to the first technical call.\n"
        "- Qualify for a dated trigger.",
        "> You were the only vendor that talked about our leases.",
        "## Open questions",  # a heading with nothing after it is kept, not dropped
    ]
    assert chunk_blocks([]) == [] and chunk_blocks(["", "  "]) == []


def test_only_a_block_past_the_budget_is_split_and_nothing_is_lost() -> None:
    rng = random.Random(3)
    fits = " ".join(sentences(rng, 4))
    long = sentences(rng, 40)
    items = [f"- {s}" for s in sentences(rng, 30)]
    giant = "x " * 130  # one "sentence" past the budget: split by words
    blocks = ["## Notes", fits, "## Long", " ".join(long), *items, giant]
    chunks = chunk_blocks(blocks, max_words=100)
    assert chunks[0] == f"## Notes\n{fits}"  # under the budget: whole, with its heading
    assert all(len(c.split()) <= 100 for c in chunks)
    assert " ".join(chunks).split() == " ".join(blocks).split()  # every word, in order
    long_pieces = [c for c in chunks if any(s in c for s in long)]
    assert len(long_pieces) >= 4 and long_pieces[0].startswith("## Long\n")  # never alone
    assert "\n" not in "".join(long_pieces).removeprefix("## Long\n")
    list_pieces = [c for c in chunks if c.startswith("- ")]
    assert len(list_pieces) >= 2 and all(
        line.startswith("- ") for c in list_pieces for line in c.split("\n")
    )


@pytest.mark.parametrize("op", ["rewrite", "insert", "delete"])
def test_an_edit_inside_a_long_block_changes_its_own_piece_not_every_later_one(op: str) -> None:
    """Every position of three long paragraphs, each edit against the original: pieces are
    cut by content, so an edit changes one or two pieces (rarely three). The greedy packing
    of ``chunk_text`` re-cuts every piece after a sentence inserted or deleted (a rewrite of
    the same length, as here, it takes in one piece)."""
    rng = random.Random(11)
    changed: list[int] = []
    packed: list[int] = []
    for length in (30, 45, 60):
        text = sentences(rng, length)
        before = chunk_blocks([" ".join(text)])
        packed_before = chunk_text(" ".join(text))
        for i in range(length):
            after = list(text)
            if op == "rewrite":
                after[i] = sentences(rng, 1)[0]
            elif op == "insert":
                after.insert(i, sentences(rng, 1)[0])
            else:
                del after[i]
            changed.append(len(set(chunk_blocks([" ".join(after)])) - set(before)))
            packed.append(len(set(chunk_text(" ".join(after))) - set(packed_before)))
    share = sum(n <= 2 for n in changed) / len(changed)
    assert max(changed) <= 3 and share >= 0.97, (share, max(changed))
    if op != "rewrite":
        assert sum(changed) / len(changed) < 0.6 * sum(packed) / len(packed), (changed, packed)


def test_cuts_are_the_same_in_every_process() -> None:
    """The cut points come from a stable digest: a process with another hash seed (``hash()``
    of a string changes with it) chunks the same text the same way."""
    text = " ".join(sentences(random.Random(5), 50))
    code = (
        "import sys; from colony.knowledge.chunking import chunk_blocks;"
        " print(len(chunk_blocks([sys.stdin.read()])))"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=text,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert int(out.stdout) == len(chunk_blocks([text])) > 1
