"""The OpenAI routes of the wire stand-in: ``POST /v1/embeddings`` and
``POST /v1/chat/completions``, their default responders, and ``openai_chat_reply`` /
``openai_chat_stream`` to script a specific ``chat.completion`` (whole, or streamed).

Point the SDK at ``WireServer.openai_base_url`` (``openai.OpenAI(base_url=...)``).
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from colony.testing.wire.replies import (
    RecordedRequest,
    Reply,
    Route,
    error_reply,
    sse_events,
    text_pieces,
)
from colony.testing.wire.samples import fake_vector, sample_from_schema, word_count

OPENAI_DEFAULT_DIM = 1536


def openai_embeddings(request: RecordedRequest) -> Reply:
    """Default answer to OpenAI ``POST /v1/embeddings``."""
    body = request.body if isinstance(request.body, dict) else {}
    raw = body.get("input")
    inputs = [raw] if isinstance(raw, str) else raw
    if not isinstance(inputs, list) or not inputs:
        return error_reply(400, "'input' must be a non-empty string or array")
    texts = [item if isinstance(item, str) else json.dumps(item) for item in inputs]
    dim = body.get("dimensions") or OPENAI_DEFAULT_DIM
    if not isinstance(dim, int) or dim <= 0:
        return error_reply(400, "'dimensions' must be a positive integer")
    encoding = body.get("encoding_format") or "float"
    data: list[dict[str, Any]] = []
    for index, text in enumerate(texts):
        vector = fake_vector(text, dim)
        embedding: list[float] | str = vector
        if encoding == "base64":
            embedding = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(len(text.split()) for text in texts)
    return Reply(
        200,
        {
            "object": "list",
            "data": data,
            "model": body.get("model", ""),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        },
    )


def _usage(prompt: int, completion: int, cached: int) -> dict[str, Any]:
    """A completion's ``usage`` as OpenAI sends it: the cached part of the prompt is counted in
    ``prompt_tokens`` and again in ``prompt_tokens_details.cached_tokens``."""
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
    }


def openai_chat_reply(
    content: str | None,
    *,
    model: str = "gpt-test",
    prompt_tokens: int = 0,
    completion_tokens: int | None = None,
    cached_tokens: int = 0,
    tool_calls: Iterable[tuple[str, Mapping[str, Any]]] = (),
    finish_reason: str | None = None,
    refusal: str | None = None,
) -> Reply:
    """A ``chat.completion`` object answering with ``content`` and/or ``(name, args)`` calls;
    with ``refusal``, a structured-output refusal (``content`` null, as OpenAI sends it);
    ``finish_reason="length"`` for an answer cut at its token cap; ``cached_tokens`` of the
    prompt served by OpenAI's prompt cache (``usage.prompt_tokens_details``)."""
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(dict(arguments))},
        }
        for i, (name, arguments) in enumerate(tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if calls:
        message["tool_calls"] = calls
    completion = word_count(content) if completion_tokens is None else completion_tokens
    return Reply(
        200,
        {
            "id": "chatcmpl-wire",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
                }
            ],
            "usage": _usage(prompt_tokens, completion, cached_tokens),
        },
    )


def openai_chat_stream(
    content: str | None,
    *,
    model: str = "gpt-test",
    prompt_tokens: int = 0,
    completion_tokens: int | None = None,
    cached_tokens: int = 0,
    tool_calls: Iterable[tuple[str, Mapping[str, Any]]] = (),
    finish_reason: str | None = None,
    refusal: str | None = None,
    piece: int = 5,
    pieces: Sequence[str] | None = None,
) -> Reply:
    """The same answer as ``openai_chat_reply``, as ``create(stream=True)`` receives it:
    ``chat.completion.chunk`` events (the role first, then ``content`` deltas of ``piece``
    characters; each tool call's id and name, then its ``arguments`` in pieces; a refusal in
    ``refusal`` deltas), the finish reason, a last chunk with only ``usage``
    (``include_usage``) and ``[DONE]``. ``pieces`` cuts ``content`` as given instead (they
    must join to it)."""
    calls = list(tool_calls)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {
            "id": "chatcmpl-wire",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [choice],
        }

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if pieces is not None and "".join(pieces) != (content or ""):
        raise ValueError("the pieces must join to the content")
    cut = list(pieces) if pieces is not None else text_pieces(content, piece) if content else []
    chunks += [chunk({"content": p}) for p in cut]
    chunks += [chunk({"refusal": p}) for p in (text_pieces(refusal, piece) if refusal else [])]
    for i, (name, arguments) in enumerate(calls):
        head = {"index": i, "id": f"call_{i}", "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        )
        for p in text_pieces(json.dumps(dict(arguments)), piece):
            chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}))
    chunks.append(chunk({}, finish_reason or ("tool_calls" if calls else "stop")))
    completion = word_count(content) if completion_tokens is None else completion_tokens
    last = {**chunk({}), "choices": [], "usage": _usage(prompt_tokens, completion, cached_tokens)}
    return Reply(200, events=sse_events([*chunks, last], done="[DONE]"))


def _tool_turn_problem(messages: list[Any]) -> str | None:
    """What OpenAI refuses about tool turns: a ``tool`` message that does not answer a call
    of the assistant message just before it, or a call left unanswered."""
    waiting: set[str] = set()
    for message in messages:
        if not isinstance(message, dict):
            return "every message must be an object"
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in waiting:
                return "messages with role 'tool' must be a response to a preceding 'tool_calls'"
            waiting.discard(call_id)
            continue
        if waiting:
            return "an assistant message with 'tool_calls' must be followed by tool messages"
        if role == "assistant" and message.get("tool_calls"):
            waiting = {str(c.get("id")) for c in message["tool_calls"]}
    return (
        "an assistant message with 'tool_calls' must be followed by tool messages"
        if waiting
        else None
    )


def openai_chat_completions(request: RecordedRequest) -> Reply:
    """Default answer to OpenAI ``POST /v1/chat/completions``: JSON sampled from the schema
    (streamed as chunks when the request says ``stream: true``)."""
    body = request.body if isinstance(request.body, dict) else {}
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not body.get("model"):
        return error_reply(400, "'model' and a non-empty 'messages' array are required")
    problem = _tool_turn_problem(messages)
    if problem:
        return error_reply(400, problem)
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if isinstance(schema, dict):
        content = json.dumps(sample_from_schema(schema))
    elif response_format.get("type") == "json_object":
        content = "{}"
    else:
        content = "ok"
    answer = openai_chat_stream if body.get("stream") else openai_chat_reply
    return answer(
        content,
        model=str(body["model"]),
        prompt_tokens=sum(word_count(m.get("content")) for m in messages if isinstance(m, dict)),
    )


ROUTES: tuple[Route, ...] = (
    Route.of("openai.embeddings", "POST", r"/v1/embeddings", openai_embeddings),
    Route.of("openai.chat.completions", "POST", r"/v1/chat/completions", openai_chat_completions),
)
