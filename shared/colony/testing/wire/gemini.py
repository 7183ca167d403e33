"""The Gemini Developer API routes of the wire stand-in, as ``google-genai`` calls them:
``POST /{v1beta|v1|v1alpha}/models/{model}:batchEmbedContents`` (what
``client.models.embed_content`` sends, for one text or many), ``:generateContent``
(``google-genai`` 3.x sends ``v1`` unless told otherwise), ``:streamGenerateContent`` (SSE)
and ``:countTokens``; their default responders, and ``gemini_content_reply`` /
``gemini_content_stream`` to script a specific ``GenerateContentResponse`` (whole, or as
its stream of chunks).

Point the SDK at ``WireServer.gemini_base_url``
(``genai.Client(http_options=HttpOptions(base_url=...))``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
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

GEMINI_DEFAULT_DIM = 3072


def gemini_batch_embed_contents(request: RecordedRequest) -> Reply:
    """Default answer to Gemini ``POST /v1beta/models/{model}:batchEmbedContents``."""
    body = request.body if isinstance(request.body, dict) else {}
    items = body.get("requests")
    if not isinstance(items, list) or not items:
        return error_reply(400, "'requests' must be a non-empty array")
    expected_model = f"models/{request.params.get('model', '')}"
    embeddings: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("model") != expected_model:
            return error_reply(400, f"requests[{i}].model must be {expected_model!r}")
        parts = (item.get("content") or {}).get("parts") or []
        text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
        dim = item.get("outputDimensionality") or GEMINI_DEFAULT_DIM
        if not isinstance(dim, int) or dim <= 0:
            return error_reply(400, f"requests[{i}].outputDimensionality must be positive")
        embeddings.append({"values": fake_vector(text, dim)})
    return Reply(200, {"embeddings": embeddings})


def _usage(prompt: int, candidates: int, cached: int) -> dict[str, Any]:
    """``usageMetadata`` as Gemini sends it: ``cachedContentTokenCount`` (only when a cache
    served part of the prompt) is counted in ``promptTokenCount`` too."""
    usage = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates,
    }
    if cached:
        usage["cachedContentTokenCount"] = cached
    return usage


def gemini_content_reply(
    text: str | None,
    *,
    model_version: str = "gemini-test",
    prompt_tokens: int = 0,
    candidates_tokens: int | None = None,
    cached_tokens: int = 0,
    function_calls: Iterable[tuple[str, Mapping[str, Any]]] = (),
    finish_reason: str = "STOP",
) -> Reply:
    """A ``GenerateContentResponse`` answering with ``text`` and/or ``(name, args)`` calls;
    ``cached_tokens`` of the prompt served by a context cache (``cachedContentTokenCount``)."""
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"text": text})
    parts += [{"functionCall": {"name": name, "args": dict(args)}} for name, args in function_calls]
    candidates = candidates_tokens if candidates_tokens is not None else word_count(text)
    return Reply(
        200,
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": finish_reason,
                    "index": 0,
                }
            ],
            "usageMetadata": _usage(prompt_tokens, candidates, cached_tokens),
            "modelVersion": model_version,
            "responseId": "wire-response",
        },
    )


def gemini_content_stream(
    text: str | None,
    *,
    model_version: str = "gemini-test",
    prompt_tokens: int = 0,
    candidates_tokens: int | None = None,
    cached_tokens: int = 0,
    function_calls: Iterable[tuple[str, Mapping[str, Any]]] = (),
    finish_reason: str = "STOP",
    piece: int = 5,
) -> Reply:
    """The same answer as ``gemini_content_reply``, as ``generate_content_stream`` receives
    it (``:streamGenerateContent?alt=sse``): one ``GenerateContentResponse`` per event, each
    with a text part of ``piece`` characters; the function calls whole, in one chunk of
    their own; the finish reason on the last chunk; running usage totals on every chunk."""
    pieces = text_pieces(text, piece) if text else []
    parts: list[list[dict[str, Any]]] = [[{"text": p}] for p in pieces]
    calls = [{"functionCall": {"name": name, "args": dict(args)}} for name, args in function_calls]
    if calls:
        parts.append(calls)
    parts = parts or [[{"text": ""}]]
    total = candidates_tokens if candidates_tokens is not None else word_count(text)
    chunks: list[dict[str, Any]] = []
    for i, these in enumerate(parts):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": these}, "index": 0}
        last = i == len(parts) - 1
        if last:
            candidate["finishReason"] = finish_reason
        so_far = total if last else min(total, i + 1)
        chunks.append(
            {
                "candidates": [candidate],
                "usageMetadata": _usage(prompt_tokens, so_far, cached_tokens),
                "modelVersion": model_version,
                "responseId": "wire-response",
            }
        )
    return Reply(200, events=sse_events(chunks))


def gemini_blocked_reply(block_reason: str = "SAFETY", *, prompt_tokens: int = 0) -> Reply:
    """A ``GenerateContentResponse`` for a prompt Gemini's safety system blocked: no
    candidates, ``promptFeedback.blockReason`` set (HTTP 200, as the API answers it)."""
    return Reply(
        200,
        {
            "promptFeedback": {"blockReason": block_reason},
            "usageMetadata": {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens},
            "modelVersion": "gemini-test",
            "responseId": "wire-blocked",
        },
    )


def _function_turn_problem(contents: list[Any]) -> str | None:
    """What Gemini refuses about function turns: a ``functionResponse`` that does not answer a
    ``functionCall`` of the same name in the model turn just before it."""
    called: set[str] = set()
    for content in contents:
        parts = content.get("parts") or [] if isinstance(content, dict) else []
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        for response in responses:
            if content.get("role") != "user" or response.get("name") not in called:
                return "a function response turn must follow the function call turn"
        called = {str(p["functionCall"].get("name")) for p in parts if "functionCall" in p}
    return None


def gemini_stream_generate_content(request: RecordedRequest) -> Reply:
    """Default answer to ``:streamGenerateContent?alt=sse``: the default answer, streamed."""
    return gemini_generate_content(request, stream=True)


def gemini_generate_content(request: RecordedRequest, *, stream: bool = False) -> Reply:
    """Default answer to Gemini ``POST /{version}/models/{model}:generateContent``."""
    body = request.body if isinstance(request.body, dict) else {}
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return error_reply(400, "'contents' must be a non-empty array")
    problem = _function_turn_problem(contents)
    if problem:
        return error_reply(400, problem)
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if isinstance(schema, dict):
        text = json.dumps(sample_from_schema(schema))
    elif config.get("responseMimeType") == "application/json":
        text = "{}"
    else:
        text = "ok"
    prompt = [body.get("systemInstruction") or {}, *contents]
    answer = gemini_content_stream if stream else gemini_content_reply
    return answer(
        text,
        model_version=request.params.get("model", ""),
        prompt_tokens=sum(
            word_count(p.get("text")) for c in prompt for p in (c.get("parts") or []) if "text" in p
        ),
    )


def gemini_count_tokens(request: RecordedRequest) -> Reply:
    """Default answer to Gemini ``POST /{version}/models/{model}:countTokens``: one token per
    whitespace-separated word, so tests can predict it."""
    body = request.body if isinstance(request.body, dict) else {}
    contents = body.get("contents")
    if not isinstance(contents, list):
        return error_reply(400, "'contents' must be an array")
    total = sum(word_count(p.get("text")) for c in contents for p in (c.get("parts") or []))
    return Reply(body={"totalTokens": total})


ROUTES: tuple[Route, ...] = (
    Route.of(
        "gemini.batchEmbedContents",
        "POST",
        r"/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+):batchEmbedContents",
        gemini_batch_embed_contents,
    ),
    Route.of(
        "gemini.generateContent",
        "POST",
        r"/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+):generateContent",
        gemini_generate_content,
    ),
    Route.of(
        "gemini.streamGenerateContent",
        "POST",
        r"/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+):streamGenerateContent",
        gemini_stream_generate_content,
    ),
    Route.of(
        "gemini.countTokens",
        "POST",
        r"/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+):countTokens",
        gemini_count_tokens,
    ),
)
