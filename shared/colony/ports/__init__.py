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
- ``mail``: ``Sender``, ``ReceivedMail``, ``Mailbox``, and ``DkimKey`` (what signs a message);
- ``mailboxes``: ``MailboxApi`` (an org's own Gmail or Microsoft 365 mailbox, its OAuth grant);
- ``slack``: ``Slack`` (a message posted for a person: the org's bot or their webhook);
- ``dns``: ``DnsResolver`` (a sending domain's TXT records);
- ``crm``: ``CrmClient`` (the team's CRM: HubSpot first), ``CrmAuthorizer`` (its OAuth)
  and ``WriteLedger`` (what was written under an idempotency key);
- ``people``: ``ClerkDirectory`` (an org's memberships as Clerk lists them);
- ``clock``: ``Clock``;
- ``web``: ``WebFetcher`` (the open web, politely and safely) and its ``FetchResult``;
- ``render``: ``PageRenderer`` (a fetched page shown by a browser kept off the network).

Every function imports this package (through its composition), so it holds Protocols and
frozen dataclasses over the standard library and ``colony.errors`` only: no SDK. Its names
load on first use (PEP 562), each with its own module: the dataclasses are what cost (some
8 ms for all of them), and a webhook needs one or two (issue 32 item 4).
"""

from typing import TYPE_CHECKING

from colony.lazy import lazy_names

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.ports.clock import Clock
    from colony.ports.crm import (
        CrmAccount,
        CrmAuthorizer,
        CrmClient,
        CrmObjectType,
        CrmRecord,
        CrmTokens,
        Engagement,
        EngagementKind,
        EngagementRef,
        FieldChange,
        FieldConflict,
        FieldVersion,
        Pipeline,
        RateLimit,
        RecordPage,
        RequestBudget,
        SearchFilter,
        SearchQuery,
        Stage,
        WriteLedger,
    )
    from colony.ports.dns import DnsResolver
    from colony.ports.mail import (
        DeliveryReport,
        DkimKey,
        InboundMail,
        Mail,
        Mailbox,
        MailDeferred,
        MailRejected,
        ReceivedMail,
        Sender,
    )
    from colony.ports.mailboxes import MailboxApi, MailboxApis, MailboxTokens, SentRef
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
    from colony.ports.people import ClerkDirectory
    from colony.ports.render import PageRenderer, Rendered, RenderOutcome, SubRequest
    from colony.ports.slack import (
        Slack,
        SlackMessage,
        SlackRefused,
        SlackRetryLater,
        SlackTokenRevoked,
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

_HOMES = {
    "Clock": "colony.ports.clock",
    "CrmAccount": "colony.ports.crm",
    "CrmAuthorizer": "colony.ports.crm",
    "CrmClient": "colony.ports.crm",
    "CrmObjectType": "colony.ports.crm",
    "CrmRecord": "colony.ports.crm",
    "CrmTokens": "colony.ports.crm",
    "Engagement": "colony.ports.crm",
    "EngagementKind": "colony.ports.crm",
    "EngagementRef": "colony.ports.crm",
    "FieldChange": "colony.ports.crm",
    "FieldConflict": "colony.ports.crm",
    "FieldVersion": "colony.ports.crm",
    "Pipeline": "colony.ports.crm",
    "RateLimit": "colony.ports.crm",
    "RecordPage": "colony.ports.crm",
    "RequestBudget": "colony.ports.crm",
    "SearchFilter": "colony.ports.crm",
    "SearchQuery": "colony.ports.crm",
    "Stage": "colony.ports.crm",
    "WriteLedger": "colony.ports.crm",
    "DnsResolver": "colony.ports.dns",
    "DeliveryReport": "colony.ports.mail",
    "DkimKey": "colony.ports.mail",
    "InboundMail": "colony.ports.mail",
    "Mail": "colony.ports.mail",
    "Mailbox": "colony.ports.mail",
    "MailDeferred": "colony.ports.mail",
    "MailRejected": "colony.ports.mail",
    "ReceivedMail": "colony.ports.mail",
    "Sender": "colony.ports.mail",
    "MailboxApi": "colony.ports.mailboxes",
    "MailboxApis": "colony.ports.mailboxes",
    "MailboxTokens": "colony.ports.mailboxes",
    "SentRef": "colony.ports.mailboxes",
    "MAX_REJECTION_ID": "colony.ports.messaging",
    "MAX_REJECTION_REASON": "colony.ports.messaging",
    "Rejection": "colony.ports.messaging",
    "RejectionRecorder": "colony.ports.messaging",
    "Transport": "colony.ports.messaging",
    "ChatModel": "colony.ports.models",
    "Counter": "colony.ports.models",
    "Embedder": "colony.ports.models",
    "Message": "colony.ports.models",
    "ModelRequest": "colony.ports.models",
    "ModelResponse": "colony.ports.models",
    "Role": "colony.ports.models",
    "TextSink": "colony.ports.models",
    "ToolCall": "colony.ports.models",
    "Usage": "colony.ports.models",
    "ClerkDirectory": "colony.ports.people",
    "PageRenderer": "colony.ports.render",
    "Rendered": "colony.ports.render",
    "RenderOutcome": "colony.ports.render",
    "SubRequest": "colony.ports.render",
    "DatabasePage": "colony.ports.sources",
    "DriveChannels": "colony.ports.sources",
    "DriveClient": "colony.ports.sources",
    "DriveFile": "colony.ports.sources",
    "DriveWatcher": "colony.ports.sources",
    "NotionAccess": "colony.ports.sources",
    "NotionClient": "colony.ports.sources",
    "NotionKind": "colony.ports.sources",
    "NotionPage": "colony.ports.sources",
    "NotionWorkspaceClient": "colony.ports.sources",
    "PageText": "colony.ports.sources",
    "WatchChannel": "colony.ports.sources",
    "BlobStore": "colony.ports.storage",
    "SecretStore": "colony.ports.storage",
    "CallContext": "colony.ports.traces",
    "Generation": "colony.ports.traces",
    "LlmCallRecord": "colony.ports.traces",
    "TraceArchive": "colony.ports.traces",
    "Tracer": "colony.ports.traces",
    "org_tag": "colony.ports.traces",
    "Slack": "colony.ports.slack",
    "SlackMessage": "colony.ports.slack",
    "SlackRefused": "colony.ports.slack",
    "SlackRetryLater": "colony.ports.slack",
    "SlackTokenRevoked": "colony.ports.slack",
    "FetchOutcome": "colony.ports.web",
    "FetchResult": "colony.ports.web",
    "WebFetcher": "colony.ports.web",
}

__all__ = [
    "MAX_REJECTION_ID",
    "MAX_REJECTION_REASON",
    "BlobStore",
    "CallContext",
    "ChatModel",
    "ClerkDirectory",
    "Clock",
    "Counter",
    "CrmAccount",
    "CrmAuthorizer",
    "CrmClient",
    "CrmObjectType",
    "CrmRecord",
    "CrmTokens",
    "DatabasePage",
    "DeliveryReport",
    "DkimKey",
    "DnsResolver",
    "DriveChannels",
    "DriveClient",
    "DriveFile",
    "DriveWatcher",
    "Embedder",
    "Engagement",
    "EngagementKind",
    "EngagementRef",
    "FetchOutcome",
    "FetchResult",
    "FieldChange",
    "FieldConflict",
    "FieldVersion",
    "Generation",
    "InboundMail",
    "LlmCallRecord",
    "Mail",
    "MailDeferred",
    "MailRejected",
    "Mailbox",
    "MailboxApi",
    "MailboxApis",
    "MailboxTokens",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "NotionAccess",
    "NotionClient",
    "NotionKind",
    "NotionPage",
    "NotionWorkspaceClient",
    "PageRenderer",
    "PageText",
    "Pipeline",
    "RateLimit",
    "ReceivedMail",
    "RecordPage",
    "Rejection",
    "RejectionRecorder",
    "RenderOutcome",
    "Rendered",
    "RequestBudget",
    "Role",
    "SearchFilter",
    "SearchQuery",
    "SecretStore",
    "Sender",
    "SentRef",
    "Slack",
    "SlackMessage",
    "SlackRefused",
    "SlackRetryLater",
    "SlackTokenRevoked",
    "Stage",
    "SubRequest",
    "TextSink",
    "ToolCall",
    "TraceArchive",
    "Tracer",
    "Transport",
    "Usage",
    "WatchChannel",
    "WebFetcher",
    "WriteLedger",
    "org_tag",
]


__getattr__ = lazy_names(__name__, _HOMES)
