"""What a caller is told of an error (SPEC §10): the one shape, ``{"error": {"code",
"message"}}``, a ``CallerError``'s own sentence, and fixed sentences for everything else, so a
provider's reply, a setting or a stack trace never leaks. ``colony.runtime.edge`` answers
every refusal and failure through these."""

from __future__ import annotations

from typing import Any

from colony.errors import (
    AlreadyDecided,
    CallerError,
    ColonyError,
    DomainUnverified,
    FieldsInvalid,
    UpstreamError,
)

INTERNAL_MESSAGE = "an unexpected error occurred; it has been logged"
UNAVAILABLE_MESSAGE = "a service we depend on is unavailable; please retry shortly"


def error_body(code: str, message: str) -> dict[str, Any]:
    """The one error shape callers see: ``{"error": {"code", "message"}}`` (SPEC §10)."""
    return {"error": {"code": code, "message": message}}


def public_body(error: BaseException) -> dict[str, Any]:
    """``error`` as the caller may see it: a ``CallerError``'s own sentence (written for
    them); a fixed sentence for our faults, upstream failures and bugs, so a provider's reply,
    a setting or a stack trace never leaks."""
    if not isinstance(error, ColonyError):
        return error_body("internal", INTERNAL_MESSAGE)
    if isinstance(error, CallerError):
        body = error_body(error.code, str(error) or "the request was refused")
        if isinstance(error, AlreadyDecided):  # ids and a time only, meant for the caller
            body["error"]["decided"] = error.detail
        if isinstance(error, DomainUnverified):  # the org's own DNS names and our public key
            body["error"]["domain"] = error.detail
        if isinstance(error, FieldsInvalid):  # paths, and sentences written for the caller
            body["error"]["fields"] = error.fields
        return body
    if isinstance(error, UpstreamError):
        return error_body(error.code, UNAVAILABLE_MESSAGE)
    return error_body(error.code, INTERNAL_MESSAGE)
