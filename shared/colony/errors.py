"""One error root for the whole package, split by whose fault a failure is.

    ColonyError
    ├── CallerError              the input is wrong; retrying the same input cannot help
    │   ├── ValidationFailed     a value broke a contract (names the field)
    │   │   ├── UnknownDomain    a Knowledge Core domain id that is not KC-01..KC-10
    │   │   ├── DimensionMismatch  an embedding of the wrong length
    │   │   └── Unprocessable    well-formed JSON whose content cannot be used (HTTP 422)
    │   │       ├── DomainUnverified  a sending domain whose DNS is not ready: what to publish
    │   │       └── FieldsInvalid  names each field at fault and what is wrong with it
    │   ├── OrgScopeError        no org, or an org that is not the caller's (CONST-003)
    │   ├── Forbidden            authenticated, but this person may not do this (HTTP 403)
    │   │   ├── OwnershipUnproven  something outside our database the org has not proved its own
    │   │   └── OwnedElsewhere   something outside our database another org already holds
    │   ├── NotFound             a referenced row does not exist in the caller's org
    │   ├── Unauthorized         no credentials, or credentials that do not verify
    │   ├── RateLimited          too many requests of a kind in a window; later may work
    │   ├── PayloadTooLarge      a file or body over its size limit (HTTP 413)
    │   └── Conflict             the request clashes with the current state of a row
    │       ├── AlreadyDecided   someone already decided the item otherwise (says who, when)
    │       ├── HandoffRefused   a handoff that is not the next link of its run's chain
    │       ├── CrmConflict      the CRM changed a field since we read it (names both values)
    │       ├── ConnectionPaused  the org's CRM connection is paused (says why)
    │       └── BudgetCapped     a spent monthly budget with a hard cap: no new campaign work
    ├── InternalError            our fault: the caller cannot fix it, a fix of ours can
    │   ├── ConfigError          a setting is missing or malformed (names the variable)
    │   ├── TemplateError        a prompt template and its variables disagree (names both)
    │   └── ContextBudgetExceeded  our own data overflows a prompt section (names the section)
    └── UpstreamError            something we depend on failed; a retry may help
        ├── DatabaseError        PostgreSQL refused or could not be reached
        ├── RateWait             over the org's share of a shared limit (runtime.limiter)
        ├── TransportUnavailable  Pub/Sub or Cloud Tasks failed transiently
        └── ProviderError        an LLM / embedding provider failed (``reason``: its own words)
            ├── ProviderUnavailable  429, 5xx or a timeout: retried with backoff
            │   ├── ProviderRateLimited  a 429: every org's share of the model slows down
            │   └── ProviderTimeout  the call outlasted its timeout (the prompt was sent)
            ├── CrmAccessRefused  the CRM refused the org's token (revoked, uninstalled)
            ├── GrantRefused     Gmail / Graph refused a mailbox's OAuth grant (revoked)
            ├── OutputInvalid        the answer broke its contract, even after one repair
            │   ├── DataMissing      the answer was ``missing_data`` (CONST-004): it names what
            │   └── ToolCallInvalid  a tool call whose arguments are not a JSON object
            └── ResponseTooLarge     a download passed its byte limit

How each branch is answered is decided once, in ``colony.runtime.edge``:

- ``CallerError``: HTTP 4xx with its message (written for the caller); a Pub/Sub delivery is
  recorded as rejected and acknowledged. Not reported to Sentry.
- ``InternalError``: HTTP 500 with a fixed message, never its text; a Pub/Sub delivery is
  retried, then dead-lettered. Logged and reported to Sentry. A caller's input that is too
  large is refused as a ``CallerError`` before it reaches a budget (e.g. ``MessageTooLong``).
- ``UpstreamError``: HTTP 503 with a fixed message; a Pub/Sub delivery is retried. Logged and
  reported, unless ``expected`` (a duplicate delivery finding its step busy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pydantic


class ColonyError(Exception):
    """Root of every error this package raises on purpose."""

    code = "colony_error"
    # True for a failure that is part of normal operation and goes away on a later retry
    # (a duplicate delivery finding its step busy): the edge logs it as one WARNING line,
    # without a traceback, and does not report it to Sentry, but still answers non-2xx.
    expected = False


class CallerError(ColonyError):
    code = "bad_request"


class ValidationFailed(CallerError):
    code = "validation_failed"


class UnknownDomain(ValidationFailed):
    code = "unknown_domain"


class DimensionMismatch(ValidationFailed):
    code = "dimension_mismatch"


class Unprocessable(ValidationFailed):
    """The body parsed, but a field is unknown or a rule cannot work; the message says which."""

    code = "unprocessable"


class DomainUnverified(Unprocessable):
    """A sending domain whose DNS does not say what sending from it needs (SPF, DKIM,
    DMARC): ``detail`` lists each problem and the TXT records to publish, for a person to
    copy into their DNS before adding the domain again."""

    code = "domain_unverified"

    def __init__(
        self, domain: str, problems: list[dict[str, str]], publish: list[dict[str, str]]
    ) -> None:
        said = "; ".join(p["message"] for p in problems)
        super().__init__(
            f"{domain} cannot send yet: {said}. Publish the TXT records listed, then add it again"
        )
        self.detail = {"domain": domain, "problems": problems, "publish": publish}


class FieldsInvalid(Unprocessable):
    """Fields that break their contract, each by its dotted path (``fields``: ``[{"field":
    "anti_icp_rules.2.op", "message"}]``), so a form can put each message beside its field."""

    def __init__(self, message: str, fields: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.fields = fields

    def under(self, prefix: str) -> FieldsInvalid:
        """The same fields, below ``prefix`` (a rule list's error, as its definition's)."""
        moved = [{**f, "field": f"{prefix}.{f['field']}"} for f in self.fields]
        return FieldsInvalid(f"{prefix}: {self}", moved)


class OrgScopeError(CallerError):
    code = "org_scope"


class PayloadTooLarge(CallerError):
    """A file or body over its size limit, refused before it is read (HTTP 413)."""

    code = "payload_too_large"


class Forbidden(CallerError):
    """Authenticated, but this person may not do this (HTTP 403): a link sent to someone
    else, a decision a model tried to make."""

    code = "forbidden"


class OwnershipUnproven(Forbidden):
    """An org named something outside our database (a Drive folder…) that it has not proved
    is its own; the message says how to prove it (``docs/security.md``)."""

    code = "ownership_unproven"


class OwnedElsewhere(Forbidden):
    """An org named something outside our database that another org already proved its own;
    the message never names that org."""

    code = "owned_by_another_org"


class NotFound(CallerError):
    code = "not_found"


class InternalError(ColonyError):
    """Our fault: misconfiguration, a broken template, a budget our own data overflowed."""

    code = "internal_error"


class ConfigError(InternalError):
    code = "config_error"


class TemplateError(InternalError):
    """A prompt template names a variable it was not given, or is given one it does not use."""

    code = "template_error"


class ContextBudgetExceeded(InternalError):
    code = "context_budget_exceeded"

    def __init__(self, message: str, *, section: str, tokens: int, budget: int) -> None:
        super().__init__(message)
        self.section, self.tokens, self.budget = section, tokens, budget


class UpstreamError(ColonyError):
    code = "upstream_error"


class DatabaseError(UpstreamError):
    code = "database_error"


class ProviderError(UpstreamError):
    """``reason`` is the provider's own account of the failure when it gave one (its error
    body's type, code and message, bounded, prompt text cut out: ``adapters.provider_reason``):
    the one part of a provider error's text that may reach a log or a trace
    (``error_summary``)."""

    code = "provider_error"

    def __init__(self, message: str = "", *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class ProviderUnavailable(ProviderError):
    """Rate-limited, failing or timing out; worth retrying (after ``retry_after`` seconds)."""

    code = "provider_unavailable"

    def __init__(
        self, message: str, *, retry_after: float | None = None, reason: str | None = None
    ) -> None:
        super().__init__(message, reason=reason)
        self.retry_after = retry_after


class ProviderRateLimited(ProviderUnavailable):
    """A 429: the provider's rate limit, which slows every org's share of the model
    (``colony.runtime.limiter``: ``RateWait`` is raised there, beside the limiter)."""


class ProviderTimeout(ProviderUnavailable):
    """The call outlasted its timeout. Unlike a refused connection or a 5xx, the prompt
    reached the provider, which may have read (and billed) all of it: the call is recorded
    with the prompt's tokens (``observability.tracing``)."""

    code = "provider_timeout"


class OutputInvalid(ProviderError):
    code = "output_invalid"


class OutputTruncated(OutputInvalid):
    """The answer was cut at its output token cap, even after one retry with a larger one."""

    code = "truncated"


class ModelRefused(OutputInvalid):
    """The model refused, or the provider's safety system blocked the prompt or the answer.
    ``reason`` is the provider's category (``refusal``, ``content_filter``, ``SAFETY``…),
    never text of the prompt or the answer. Never retried: the same prompt is refused again."""

    code = "refused"

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message, reason=reason)
        self.reason = reason


class DataMissing(OutputInvalid):
    """CONST-004: the model answered ``missing_data`` instead of its contract: the prompt
    lacks something the answer needs. ``fields`` names what (the run records it as the
    contact's outcome); a guessed value is never the answer. Not retried: the same prompt
    lacks the same thing."""

    code = "missing_data"

    def __init__(self, message: str, *, fields: tuple[str, ...]) -> None:
        super().__init__(message)
        self.fields = fields


class ToolCallInvalid(OutputInvalid):
    """The provider returned a tool call that cannot be parsed: its arguments are not a JSON
    object. Reported as the ``tool_call_parse`` category (``colony.observability.categories``)."""

    code = "tool_call_invalid"


class CrmAccessRefused(ProviderError):
    """The CRM refused the org's token or refresh token (revoked, the app uninstalled, a
    scope taken away). Not worth retrying as it is: the connection is paused until an admin
    reconnects (``colony.flows.crm.connections``)."""

    code = "crm_access_refused"


class GrantRefused(ProviderError):
    """Gmail or Graph refused a sender mailbox's grant (revoked, expired, the app removed):
    its mail waits until an admin connects it again (``flows.outbound.mailbox_grants``)."""

    code = "grant_refused"


class ResponseTooLarge(ProviderError):
    """A download passed its byte limit (the content, not the vendor, is at fault)."""

    code = "response_too_large"


class Unauthorized(CallerError):
    """Missing, malformed, expired or unverifiable credentials (HTTP 401)."""

    code = "unauthorized"


class RateLimited(CallerError):
    """Too many requests of one kind in a window (HTTP 429, with Retry-After)."""

    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Conflict(CallerError):
    """The request clashes with the current state (e.g. an item already decided; HTTP 409)."""

    code = "conflict"


class AlreadyDecided(Conflict):
    """An approval item someone already decided otherwise (HTTP 409): the answer says who
    decided it, how and when (``detail``), so a reviewer whose card was stale sees why."""

    def __init__(self, item_id: str, status: str, decided_by: str | None, decided_at: Any) -> None:
        at = decided_at.isoformat() if hasattr(decided_at, "isoformat") else decided_at
        who = f" by {decided_by}" if decided_by else ""
        when = f" at {at}" if at else ""
        super().__init__(f"approval item {item_id!r} was already {status}{who}{when}")
        self.detail = {"status": status, "decided_by": decided_by, "decided_at": at}


class HandoffRefused(Conflict):
    """A handoff for a contact outside its run's campaign, or before the step it follows is
    done (``colony.flows.campaigns.specialist``): forged or misrouted, never worth a retry."""

    code = "handoff_refused"


class CrmConflict(Conflict):
    """A CRM write refused because the CRM changed a field since we read it (HTTP 409):
    ``conflicts`` names each field with our value, the value we read and theirs now, so a
    person can choose (``colony.ports.crm``)."""

    code = "crm_conflict"

    def __init__(self, message: str, *, conflicts: tuple[Any, ...]) -> None:
        super().__init__(message)
        self.conflicts = conflicts


class ConnectionPaused(Conflict):
    """The org's CRM connection is paused (its token was refused): nothing is read or
    written until an admin reconnects; the message says why."""

    code = "connection_paused"


class BudgetCapped(Conflict):
    """New campaign work refused because the org has spent its monthly budget and the budget
    is a hard cap (``colony.flows.tenants.budget``; HTTP 409): the message says how much of
    it was spent and when work can resume. Work already started finishes; nothing is lost."""

    code = "budget_capped"


class TransportUnavailable(UpstreamError):
    """Pub/Sub or Cloud Tasks failed transiently (unavailable, timed out, throttled); retry."""

    code = "transport_unavailable"


def error_summary(error: BaseException) -> str:
    """The only description of an error that leaves the process: its type and our code,
    and a provider error's ``reason`` (already bounded and cut free of prompt text).

    The message is left out on purpose: provider errors and validation failures may quote
    the prompt or the model's answer.
    """
    name = type(error).__name__
    if not isinstance(error, ColonyError):
        return name
    reason = getattr(error, "reason", None) if isinstance(error, ProviderError) else None
    return f"{name} ({error.code}): {reason}" if reason else f"{name} ({error.code})"


def describe_validation(error: pydantic.ValidationError, limit: int = 3) -> str:
    """Field locations and messages of a validation error, without the input values.

    Here rather than beside the contracts so the edge can word a refusal without loading
    pydantic at cold start."""
    issues = error.errors(include_url=False, include_input=False, include_context=False)
    parts = [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in issues[:limit]]
    if len(issues) > limit:
        parts.append(f"and {len(issues) - limit} more")
    return "; ".join(parts)
