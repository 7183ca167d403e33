"""Which tool turns of a conversation a provider can take as tool turns.

OpenAI and Gemini both require an assistant's tool calls to be answered by tool results that
follow them at once, one per call. Our history can break that (a call's pause and its later
result share one id; a budget can cut a call from the window and keep its result), so
``paired`` picks the assistant messages whose every call is answered right after, and those
answers; any other tool message goes out as user text, still inside its data block.
"""

from __future__ import annotations

from collections.abc import Sequence

from colony.ports import Message


def paired(messages: Sequence[Message]) -> set[int]:
    """Indexes of the messages to send as tool calls and tool results."""
    keep: set[int] = set()
    for i, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        ids = [c.id for c in message.tool_calls]
        if not all(ids) or len(set(ids)) != len(ids):
            continue
        answers = list(range(i + 1, min(len(messages), i + 1 + len(ids))))
        got = [messages[j].tool_call_id for j in answers if messages[j].role == "tool"]
        if len(got) == len(ids) and set(got) == set(ids):
            keep.add(i)
            keep.update(answers)
    return keep
