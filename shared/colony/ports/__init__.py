"""The I/O seams the logic sees. Adapters implement them; fakes in ``colony.testing``.

Each port's contract is its docstring, and one suite in ``tests/conformance/`` holds its
fakes and its real adapters (on their local stand-ins) to it alike, so a fake cannot drift
from what it replaces. One module per capability:

- ``models``: ``ChatModel``, ``Embedder``, ``Counter`` and the messages, requests and
  answers they exchange;
- ``traces``: ``Tracer`` (tracing at the ChatModel port) and ``TraceArchive`` (erasure);
- ``messaging``: ``Transport`` (topics and queues) and ``RejectionRecorder``;
- ``storage``: ``BlobStore`` (the assets bucket) and ``SecretStore`` (per-org credentials);
- ``sources``: Drive and Notion, as the knowledge webhooks read them;
- ``mail``: ``Sender``, ``ReceivedMail``, ``Mailbox``;
- ``clock``: ``Clock``;
- ``web``: ``WebFetcher`` (the open web, politely and safely) and its ``FetchResult``.

Every function imports this package (through its composition), so it holds Protocols and
frozen dataclasses over the standard library and ``colony.errors`` only: no SDK, nothing
that costs a cold start.
"""

from colony.ports.clock import Clock
from colony.ports.mail import InboundMail, Mail, Mailbox, MailRejected, ReceivedMail, Sender
from colony.ports.messaging import (
    MAX_REJECTION_ID,
    MAX_REJECTION_REASON,
    Rejection,
    RejectionRecorder,
    Transport,
)
from colony.ports.models import (
    ChatModel,
    Counter,
    Embedder,
    Message,
    ModelRequest,
    ModelResponse,
    Role,
    TextSink,
    ToolCall,
    Usage,
)
from colony.ports.sources import (
    DatabasePage,
    DriveChannels,
    DriveClient,
    DriveFile,
    DriveWatcher,
    NotionAccess,
    NotionClient,
    NotionKind,
    NotionPage,
    NotionWorkspaceClient,
    PageText,
    WatchChannel,
)
from colony.ports.storage import BlobStore, SecretStore
from colony.ports.traces import (
    CallContext,
    Generation,
    LlmCallRecord,
    TraceArchive,
    Tracer,
    org_tag,
)
from colony.ports.web import FetchOutcome, FetchResult, WebFetcher

__all__ = [
    "MAX_REJECTION_ID",
    "MAX_REJECTION_REASON",
    "BlobStore",
    "CallContext",
    "ChatModel",
    "Clock",
    "Counter",
    "DatabasePage",
    "DriveChannels",
    "DriveClient",
    "DriveFile",
    "DriveWatcher",
    "Embedder",
    "FetchOutcome",
    "FetchResult",
    "Generation",
    "InboundMail",
    "LlmCallRecord",
    "Mail",
    "MailRejected",
    "Mailbox",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "NotionAccess",
    "NotionClient",
    "NotionKind",
    "NotionPage",
    "NotionWorkspaceClient",
    "PageText",
    "ReceivedMail",
    "Rejection",
    "RejectionRecorder",
    "Role",
    "SecretStore",
    "Sender",
    "TextSink",
    "ToolCall",
    "TraceArchive",
    "Tracer",
    "Transport",
    "Usage",
    "WatchChannel",
    "WebFetcher",
    "org_tag",
]
