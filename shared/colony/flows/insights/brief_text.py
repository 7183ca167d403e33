"""The daily brief as text: its five sections (seed §5.5 order), the stored text
``render`` writes, and ``sections_of`` reading them back for the /overview page.

Apart from the brief's flow (``colony.flows.insights.brief``), which calls the model: the chat
function serves today's brief with its page and loads no model stack for it (issue 32 item 4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SECTIONS: tuple[tuple[str, str], ...] = (
    ("pipeline", "Pipeline"),
    ("alerts", "Alerts"),
    ("queue", "Queue"),
    ("yesterday", "Yesterday"),
    ("todays_priorities", "Today's Priorities"),
)


def render(brief: Mapping[str, str]) -> str:
    """The stored text: one line per section, headed by its name (seed §5.5 order)."""
    return "\n".join(f"{title}: {brief[key].strip()}" for key, title in SECTIONS)


def sections_of(content: str, stored: Mapping[str, Any] | None) -> list[dict[str, str]] | None:
    """The brief's five sections in order, as ``{key, title, text}`` (the /overview page
    shows each under its heading): as stored per section, else read back from the stored
    text's ``Title: …`` lines (``render``'s format). None when neither has all five (a
    brief written another way is shown as its text)."""
    if stored and all(isinstance(stored.get(key), str) for key, _ in SECTIONS):
        found = {key: str(stored[key]).strip() for key, _ in SECTIONS}
    else:
        parts: dict[str, list[str]] = {}
        current: list[str] | None = None
        for line in content.splitlines():
            key = next(
                (k for k, title in SECTIONS if k not in parts and line.startswith(f"{title}:")),
                None,
            )
            if key is not None:
                current = parts[key] = [line.split(":", 1)[1]]
            elif current is not None:
                current.append(line)  # a section's text may run over several lines
        if len(parts) != len(SECTIONS):
            return None
        found = {key: "\n".join(lines).strip() for key, lines in parts.items()}
    return [{"key": key, "title": title, "text": found[key]} for key, title in SECTIONS]


def word_count(text: str) -> int:
    return len(text.split())
