"""The I/O seams the logic sees. Adapters implement them; fakes in ``colony.testing``.

Each port's contract is the docstring here, and one suite in ``tests/conformance/`` holds its
fakes and its real adapters (on their local stand-ins) to it alike, so a fake cannot drift
from what it replaces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from colony.errors import ValidationFailed


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of ``dim`` floats, one row per text, in order
    (``colony.vectors``: lists of float32-rounded floats)."""

    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class Counter(Protocol):
    """Counts tokens as the target model does (``colony.context.tokens``: tiktoken offline,
    Gemini's ``countTokens`` with a key); ``label`` names the tokenizer, and says so when the
    count is an estimate. The empty text is 0 tokens, any other at least 1; the same text
    always counts the same. A provider-backed counter raises ``ProviderError`` when it
    cannot count, never quoting the text."""

    @property
    def label(self) -> str: ...

    def count(self, text: str) -> int: ...


Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any]
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation.

    An ``assistant`` message may carry the ``tool_calls`` it made; a ``tool`` message is the
    result of the call ``tool_call_id`` (of tool ``name``). Adapters send both as their
    provider's tool turns, so a tool result never reaches a model as the person speaking.
    ``name`` also labels an assistant message that is our own rolling summary (``"summary"``).
    ``id`` is the stored row the message was read from (a chat turn's row id), recorded in the
    call's provenance and never sent to a provider.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One structured-output call.

    ``output_name`` names the contract (``colony.contracts.OUTPUT_CONTRACTS``) and
    ``output_schema`` is its JSON schema. Every provider, the offline one included, answers
    from ``messages`` alone: there is no side channel for the inputs they were rendered from.
    ``metadata`` carries trace ids (org_id, run_id, agent_id, kc_domains_queried,
    context_budget_used) and ``untrusted_instructions`` (what the detector flagged in the
    untrusted input: labels and planted links, never the prompt).
    """

    model: str
    messages: tuple[Message, ...]
    output_name: str
    output_schema: Mapping[str, Any]
    tools: tuple[Mapping[str, Any], ...] = ()
    max_output_tokens: int = 1024
    # Gemini 2.5's thinking tokens, set explicitly (they are spent from their own budget,
    # added to the output cap by the adapter); other providers ignore it
    thinking_budget: int = 0
    temperature: float = 0.0
    timeout_seconds: float | None = None  # this call's own (None: the client's default)
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Usage:
    tokens_in: int
    tokens_out: int


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The raw answer: JSON text for the contract (or tool calls) and real token usage.

    ``finish`` is why the model stopped: ``stop`` (a whole answer, or tool calls),
    ``length`` (cut at ``max_output_tokens``: the text is a fragment), ``refused`` (a refusal
    or a safety block: ``refusal`` names the provider's reason category, never the text)."""

    text: str
    usage: Usage
    model: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish: Literal["stop", "length", "refused"] = "stop"
    refusal: str | None = None


# Receives the answer's text as the provider streams it: each fragment once, in order.
TextSink = Callable[[str], None]


@runtime_checkable
class ChatModel(Protocol):
    """The LLM port. Adapters raise ``ProviderUnavailable`` for 429/5xx/timeouts (the runner
    retries those) and ``ProviderError`` for anything else; they do not retry themselves and
    do not validate the answer (the runner does).

    ``request`` is one call answered whole. ``stream`` is the same call over the provider's
    streaming API: it hands ``on_text`` each fragment of the answer text as it arrives (the
    fragments joined are ``ModelResponse.text``; the answer's raw text, JSON for a contract)
    and returns the whole ``ModelResponse`` at the end, tool calls assembled from their
    streamed pieces, usage and finish as ``request`` reports them. Only the chat streams;
    every other agent calls ``request``."""

    def request(self, request: ModelRequest) -> ModelResponse: ...

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse: ...


# -- tracing at the ChatModel port (``colony.observability.tracing``: ``TracedChatModel`` wraps
# any ChatModel with a Tracer; ``NoopTracer`` is the default, ``LangfuseTracer`` the real one)


@dataclass(frozen=True, slots=True)
class LlmCallRecord:
    """The metadata of one LLM call, as sent to Langfuse and kept in ``llm_calls``."""

    org_id: str
    agent_id: str
    run_id: str | None
    model: str
    kc_domains_queried: tuple[str, ...]
    tokens_in: int
    tokens_out: int
    context_budget_used: Mapping[str, int] = field(default_factory=dict)
    latency_ms: float | None = None
    untrusted_instructions: tuple[str, ...] = ()
    call_id: str | None = None  # one per assembled call; its repair and retries share it
    provenance: Mapping[str, Any] = field(default_factory=dict)  # kept in llm_calls only

    def metadata(self) -> dict[str, Any]:
        """The mandatory trace metadata (JSON-ready)."""
        return {
            "call_id": self.call_id,
            "org_id": self.org_id,
            "agent_id": self.agent_id,
            "run_id": self.run_id,
            "model": self.model,
            "kc_domains_queried": list(self.kc_domains_queried),
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "context_budget_used": dict(self.context_budget_used),
            "latency_ms": self.latency_ms,
            "untrusted_instructions": list(self.untrusted_instructions),
        }


@dataclass(frozen=True, slots=True)
class CallContext:
    """The trace ids a request carries in ``ModelRequest.metadata``, validated."""

    org_id: str
    agent_id: str
    run_id: str | None
    kc_domains_queried: tuple[str, ...]
    context_budget_used: Mapping[str, int]
    untrusted_instructions: tuple[str, ...] = ()
    call_id: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, request: ModelRequest) -> CallContext:
        meta = request.metadata
        org_id, agent_id, run_id = meta.get("org_id"), meta.get("agent_id"), meta.get("run_id")
        for name, value in (("org_id", org_id), ("agent_id", agent_id)):
            if not isinstance(value, str) or not value.strip():
                raise ValidationFailed(f"ModelRequest.metadata.{name} must be a non-empty string")
        if run_id is not None and not isinstance(run_id, str):
            raise ValidationFailed("ModelRequest.metadata.run_id must be a string or absent")
        domains = meta.get("kc_domains_queried") or ()
        if isinstance(domains, str) or not isinstance(domains, Sequence):
            raise ValidationFailed("ModelRequest.metadata.kc_domains_queried must be a list")
        if not all(isinstance(d, str) for d in domains):
            raise ValidationFailed("ModelRequest.metadata.kc_domains_queried must hold strings")
        budget = meta.get("context_budget_used") or {}
        if not isinstance(budget, Mapping) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            for k, v in budget.items()
        ):
            raise ValidationFailed(
                "ModelRequest.metadata.context_budget_used must map section names to tokens"
            )
        flags = meta.get("untrusted_instructions") or ()
        if (
            isinstance(flags, str)
            or not isinstance(flags, Sequence)
            or not all(isinstance(f, str) for f in flags)
        ):
            raise ValidationFailed(
                "ModelRequest.metadata.untrusted_instructions must be a list of strings"
            )
        call_id, provenance = meta.get("call_id"), meta.get("provenance") or {}
        if call_id is not None and (not isinstance(call_id, str) or not call_id.strip()):
            raise ValidationFailed("ModelRequest.metadata.call_id must be a non-empty string")
        if not isinstance(provenance, Mapping):
            raise ValidationFailed("ModelRequest.metadata.provenance must be an object")
        assert isinstance(org_id, str) and isinstance(agent_id, str)  # checked above
        return cls(
            org_id,
            agent_id,
            run_id,
            tuple(domains),
            dict(budget),
            tuple(flags),
            call_id,
            dict(provenance),
        )

    def metadata(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "org_id": self.org_id,
            "agent_id": self.agent_id,
            "run_id": self.run_id,
            "kc_domains_queried": list(self.kc_domains_queried),
            "context_budget_used": dict(self.context_budget_used),
            "untrusted_instructions": list(self.untrusted_instructions),
        }

    def record(
        self, response: ModelResponse, request: ModelRequest, latency_ms: float
    ) -> LlmCallRecord:
        return LlmCallRecord(
            org_id=self.org_id,
            agent_id=self.agent_id,
            run_id=self.run_id,
            model=response.model or request.model,
            kc_domains_queried=self.kc_domains_queried,
            tokens_in=response.usage.tokens_in,
            tokens_out=response.usage.tokens_out,
            context_budget_used=self.context_budget_used,
            latency_ms=latency_ms,
            untrusted_instructions=self.untrusted_instructions,
            call_id=self.call_id,
            provenance=self.provenance,
        )


@runtime_checkable
class Generation(Protocol):
    """One traced LLM call, open while the inner model runs."""

    def succeed(self, record: LlmCallRecord, response: ModelResponse) -> None: ...

    def fail(self, status_message: str) -> None: ...


@runtime_checkable
class Tracer(Protocol):
    """Opens a ``Generation`` per call.

    Contract: an exception raised inside ``generation(...)`` leaves it unchanged (same
    object), and the tracer records nothing of it beyond what ``Generation.fail`` was told.
    """

    def generation(
        self, request: ModelRequest, context: CallContext
    ) -> AbstractContextManager[Generation]: ...

    def annotate(self, call_id: str, metadata: Mapping[str, int | str]) -> None:
        """Add what was learnt after a call ended (a count of quotes dropped, say: ids and
        numbers, never text) to the trace of its generation, found by ``call_id``; nothing
        when no generation of it is known."""
        ...

    def flush(self) -> None: ...

    def shutdown(self) -> None: ...


@runtime_checkable
class Transport(Protocol):
    """How functions reach each other: Pub/Sub topics and Cloud Tasks queues.

    ``publish`` returns the message id (the idempotency key downstream). ``schedule`` creates
    an HTTP task for ``target`` (a function name) after ``delay_seconds``; ``task_id`` names
    the task so the same logical task is never created twice.
    """

    def publish(self, topic: str, data: bytes, attributes: Mapping[str, str]) -> str: ...

    def schedule(
        self, queue: str, target: str, body: bytes, *, task_id: str, delay_seconds: float = 0.0
    ) -> str: ...


@runtime_checkable
class BlobStore(Protocol):
    """Objects in the assets bucket (GCS): transcripts, deployment kits. Agents are handed
    V4 signed URLs, never raw bytes (seed §3.4). Adapters raise ``NotFound`` for a missing
    object and ``ProviderUnavailable`` when the store cannot be reached."""

    bucket: str

    def put(self, name: str, data: bytes, content_type: str) -> str:
        """Store ``data`` under ``name``; returns ``gs://<bucket>/<name>``."""
        ...

    def get(self, name: str) -> bytes: ...

    def signed_url(self, name: str, ttl_seconds: int) -> str:
        """A V4 signed GET URL for ``name`` that expires after ``ttl_seconds``."""
        ...

    def signed_upload(
        self, name: str, ttl_seconds: int, max_bytes: int
    ) -> tuple[str, dict[str, str]]:
        """A V4 signed PUT URL for ``name`` and the headers the upload must carry (they cap
        its size at ``max_bytes``)."""
        ...

    def size(self, name: str) -> int:
        """The size in bytes of ``name`` (``NotFound`` if missing), without reading it."""
        ...

    def names(self, prefix: str) -> list[str]:
        """Every object name starting with ``prefix`` (all pages), sorted. ``prefix`` must
        end with ``/`` (a folder: erasure and retention never match by a name's stem), else
        ``ValidationFailed``."""
        ...

    def delete(self, name: str) -> bool:
        """Delete ``name``; False if it did not exist (deleting twice is not an error, so an
        erasure that is re-run after a crash finishes)."""
        ...


@runtime_checkable
class TraceArchive(Protocol):
    """Where LLM traces are kept (Langfuse), as erasure sees it. Every trace of an org carries
    the tag ``org_tag(org_id)`` (``colony.observability.tracing``)."""

    def trace_ids(self, tag: str) -> list[str]:
        """The ids of every trace carrying ``tag`` (all pages)."""
        ...

    def delete(self, trace_ids: Sequence[str]) -> None:
        """Ask for these traces to be deleted (ids already gone are not an error)."""
        ...


def org_tag(org_id: str) -> str:
    """The tag every trace of ``org_id`` carries, by which erasure finds them."""
    return f"org:{org_id}"


# The clock flows read (``deps.clock()``): now, timezone-aware. ``colony.runtime.deps.utc_now``
# in production; tests pass a fixed one (``colony.testing.inline.fixed_clock``).
Clock = Callable[[], datetime]


# -- the providers the knowledge webhooks read (adapters: colony.adapters.drive, .notion)


@dataclass(frozen=True, slots=True)
class DriveFile:
    id: str
    name: str
    mime_type: str
    modified_time: str | None = None


@runtime_checkable
class DriveClient(Protocol):
    """The Drive calls the recording webhook makes."""

    def list_folder(self, folder_id: str) -> Iterator[DriveFile]:
        """Every non-trashed file directly in ``folder_id``, oldest first (all pages)."""
        ...

    def download_text(self, file: DriveFile, max_bytes: int) -> bytes:
        """The file's content as plain text bytes (Docs are exported); raises
        ``ResponseTooLarge`` past ``max_bytes``."""
        ...


@dataclass(frozen=True, slots=True)
class WatchChannel:
    """A Drive push channel as Drive created it: ``expiration`` in epoch milliseconds."""

    id: str
    resource_id: str
    expiration_ms: int


@runtime_checkable
class DriveChannels(Protocol):
    """The Drive calls that keep a folder watched (``flows.recordings.drive_channels``)."""

    def watch_folder(
        self, folder_id: str, channel_id: str, address: str, token: str, expiration_ms: int
    ) -> WatchChannel:
        """``files.watch`` on the folder: notifications go to ``address`` with ``token``."""
        ...

    def stop_channel(self, channel_id: str, resource_id: str) -> None:
        """``channels.stop``; a channel Drive no longer knows (404) counts as stopped."""
        ...


@runtime_checkable
class DriveWatcher(DriveClient, DriveChannels, Protocol):
    """Both: a watch first lists the folder for the org's ownership marker
    (``flows.recordings.drive_folders``)."""


@dataclass(frozen=True, slots=True)
class NotionPage:
    id: str
    title: str
    last_edited_time: str
    gone: bool  # archived or in the trash: its chunks must go
    parent_id: str | None


@dataclass
class PageText:
    """A page's blocks as paragraphs of text, with what could not be read."""

    paragraphs: list[str]
    unsupported: dict[str, int] = field(default_factory=dict)
    blocks: int = 0


@dataclass(frozen=True, slots=True)
class DatabasePage:
    """One page of a Notion database query: its pages and the cursor of the next (None:
    the last)."""

    pages: list[NotionPage]
    next_cursor: str | None


@runtime_checkable
class NotionClient(Protocol):
    def page(self, page_id: str) -> NotionPage: ...

    def page_text(self, page_id: str) -> PageText: ...

    def query_database(
        self, database_id: str, cursor: str | None, page_size: int
    ) -> DatabasePage: ...


NotionKind = Literal["database", "page"]


@runtime_checkable
class NotionAccess(Protocol):
    """What one integration token reaches (issue 31), asked before a workspace is connected
    (``flows.knowledge.notion_workspaces.connect``). A Notion token belongs to one workspace and
    reads only what that workspace shared with its integration, so these two answers prove that the
    token is the named workspace's and that each mapped id is in it."""

    def bot_workspace(self) -> str | None:
        """The id of the workspace the token's bot user belongs to (``GET /v1/users/me``,
        ``bot.workspace_id``), as Notion's events name it; None if Notion refuses the token
        or its bot names no workspace."""
        ...

    def object_kind(self, object_id: str) -> NotionKind | None:
        """Whether the token can read ``object_id`` as a database or as a page; None when
        it cannot (unknown, not shared with the integration, or another workspace's)."""
        ...


@runtime_checkable
class SecretStore(Protocol):
    """Per-org credentials we are handed at run time (an org's Notion token): Secret Manager
    in production. ``name`` is a secret id (``[a-zA-Z0-9_-]``, at most 255); a value is
    never logged, and only its name is stored anywhere else."""

    def put(self, name: str, value: str) -> None:
        """Create the secret if needed and make ``value`` its latest version."""
        ...

    def get(self, name: str) -> str:
        """The latest version; ``NotFound`` if there is none."""
        ...

    def delete(self, name: str) -> None:
        """Remove the secret and every version (absent: nothing to do)."""
        ...


MAX_REJECTION_ID = 200  # characters of an event id or claimed org id a rejection keeps
MAX_REJECTION_REASON = 500


@dataclass(frozen=True, slots=True)
class Rejection:
    """One recorded rejection, as every ``RejectionRecorder`` keeps it."""

    function: str
    event_id: str | None
    claimed_org_id: str | None
    reason: str

    @classmethod
    def of(
        cls, function: str, event_id: str | None, claimed_org_id: str | None, reason: str
    ) -> Rejection:
        """Ids clipped to ``MAX_REJECTION_ID`` characters (an empty one is None), the reason
        to ``MAX_REJECTION_REASON``."""
        return cls(
            function,
            event_id[:MAX_REJECTION_ID] if event_id else None,
            claimed_org_id[:MAX_REJECTION_ID] if claimed_org_id else None,
            reason[:MAX_REJECTION_REASON],
        )


@runtime_checkable
class RejectionRecorder(Protocol):
    """Where unrecoverable deliveries are recorded (ids and a reason, never the payload),
    kept as ``Rejection.of`` normalises them."""

    def record(
        self, function: str, event_id: str | None, claimed_org_id: str | None, reason: str
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class Mail:
    """One message to one recipient. ``message_id`` (``<local@domain>``) is ours and
    deterministic per outbox row, so a retry after a crash sends the same message again, as
    the receiving side can tell. ``headers`` are extra header fields (``List-Unsubscribe``…)."""

    message_id: str
    sender: str
    to: str
    subject: str
    text: str
    headers: Mapping[str, str] = field(default_factory=dict)
    # What a provider API echoes back in its events (``org_id``, ``outbox_id``), never a
    # header the recipient sees; SMTP has no such thing and ignores them.
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (self.message_id.startswith("<") and self.message_id.endswith(">")):
            raise ValidationFailed("a Message-ID is written <local@domain>")
        for value in (self.sender, self.to, self.subject, *self.headers.values()):
            if "\r" in value or "\n" in value:
                raise ValidationFailed("header values cannot contain line breaks")


class MailRejected(ValidationFailed):
    """The mail server refused this message for good (an unknown mailbox, a policy block):
    sending it again cannot succeed. A transient refusal is ``UpstreamError`` instead."""

    code = "mail_rejected"


@dataclass(frozen=True, slots=True)
class InboundMail:
    """A message someone sent us (a reply, we hope): untrusted from header to body. ``text``
    is the plain-text body as received, quoted history included; ``in_reply_to`` and
    ``references`` are the Message-IDs it answers (``<local@domain>``, as written)."""

    message_id: str
    sender: str
    subject: str
    text: str
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    received_at: datetime | None = None


@runtime_checkable
class ReceivedMail(Protocol):
    """Reads one inbound message a provider holds for us (its inbound webhook names it, and
    carries no body); ``NotFound`` when the provider has no such message."""

    def received(self, email_id: str) -> InboundMail: ...


@runtime_checkable
class Mailbox(Protocol):
    """A mailbox replies land in (for SMTP relay users: no provider webhook), polled: the
    unread messages as (key, message), and ``mark_read`` once one is dealt with, so a crash
    before it reads the message again (ingesting it is idempotent)."""

    def unread(self) -> list[tuple[str, InboundMail]]: ...

    def mark_read(self, key: str) -> None: ...


@runtime_checkable
class Sender(Protocol):
    """Hands one message to a mail server. Returns when the server has accepted it (the only
    moment we know it will be delivered or bounced by someone else); raises ``MailRejected``
    for a permanent refusal and ``UpstreamError`` for a transient one (retry later)."""

    def send(self, mail: Mail) -> None: ...
