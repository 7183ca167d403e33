"""Local HTTP stand-ins that speak just enough of the OpenAI and Gemini wire protocols.

Point the official SDKs at a ``WireServer`` (``openai.OpenAI(base_url=server.openai_base_url)``,
``genai.Client(http_options=HttpOptions(base_url=server.gemini_base_url))``) and they make
real HTTP requests to 127.0.0.1, recorded and answered like the real APIs.

* ``server``: ``WireServer`` (recording, scripting with ``script`` / ``fail``, routing) and
  ``ProviderServer``, the base of the Drive and Notion stand-ins;
* ``replies``: ``RecordedRequest``, ``Reply``, ``Route`` and ``error_reply``;
* ``openai``: ``POST /v1/embeddings`` and ``/v1/chat/completions`` (whole or streamed),
  ``openai_chat_reply``, ``openai_chat_stream``;
* ``gemini``: ``models/{model}:batchEmbedContents``, ``:generateContent``,
  ``:streamGenerateContent`` and ``:countTokens``, ``gemini_content_reply``,
  ``gemini_content_stream``, ``gemini_blocked_reply``;
* ``samples``: the deterministic answers (``fake_vector``, ``sample_from_schema``).

Default embeddings are deterministic, derived from the text and the requested dimension, and
deliberately NOT unit length (see ``fake_vector``), so callers' normalisation is exercised.
Default chat answers are JSON built from the request's schema (``sample_from_schema``): valid
for the schema, not meaningful. Script a specific answer with ``openai_chat_reply`` /
``gemini_content_reply`` (``Reply`` objects in the real response shapes).
"""

from colony.testing.wire.gemini import (
    GEMINI_DEFAULT_DIM,
    gemini_batch_embed_contents,
    gemini_blocked_reply,
    gemini_content_reply,
    gemini_content_stream,
    gemini_count_tokens,
    gemini_generate_content,
)
from colony.testing.wire.openai import (
    OPENAI_DEFAULT_DIM,
    openai_chat_completions,
    openai_chat_reply,
    openai_chat_stream,
    openai_embeddings,
)
from colony.testing.wire.replies import (
    NO_ANSWER,
    RecordedRequest,
    Reply,
    Responder,
    Route,
    Scripted,
    error_reply,
    sse_events,
    text_pieces,
)
from colony.testing.wire.samples import fake_vector, sample_from_schema
from colony.testing.wire.server import (
    DEFAULT_ROUTES,
    ProviderServer,
    WireServer,
    WireServerError,
)

__all__ = [
    "DEFAULT_ROUTES",
    "GEMINI_DEFAULT_DIM",
    "NO_ANSWER",
    "OPENAI_DEFAULT_DIM",
    "ProviderServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Route",
    "Scripted",
    "WireServer",
    "WireServerError",
    "error_reply",
    "fake_vector",
    "gemini_batch_embed_contents",
    "gemini_blocked_reply",
    "gemini_content_reply",
    "gemini_content_stream",
    "gemini_count_tokens",
    "gemini_generate_content",
    "openai_chat_completions",
    "openai_chat_reply",
    "openai_chat_stream",
    "openai_embeddings",
    "sample_from_schema",
    "sse_events",
    "text_pieces",
]
