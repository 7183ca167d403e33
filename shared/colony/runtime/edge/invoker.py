"""Internal callers, checked in code as well as by IAM (defence in depth, issue 14).

Every function the registry does not mark ``public`` is invoked only by Google on our behalf:
Pub/Sub push, Cloud Tasks and Cloud Scheduler, each with an OIDC token of the invoker service
account (terraform ``google_service_account.invoker``, ``COLONY_INVOKER_SERVICE_ACCOUNT``) whose
audience is the function's URL (``COLONY_FUNCTION_URLS[name]``, the URL terraform and the Cloud
Tasks transport put in the token). IAM already refuses other callers; this module refuses them
again before a body is read or a flow runs, so a mis-set ingress or a stray ``run.invoker``
grant does not open the function. ``pubsub_handler`` and ``http_json(caller=invoker_only(name))``
both call ``require_invoker``: one mechanism, not one per function.

Locally (``COLONY_ENV=local``) the emulators and the local transport attach no token, and none
is needed (``colony.runtime.auth.verify_google_oidc``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from colony.errors import ConfigError
from colony.observability.logs import Headers
from colony.registry.functions import function as registered_function
from colony.runtime.deps import deps

if TYPE_CHECKING:
    from colony.settings import Settings


def internal_function(name: str) -> str:
    """``name`` if the registry says only the invoker may call it; else a ``ConfigError`` (a
    public function authenticates its own callers: a webhook signature, a Clerk JWT)."""
    if registered_function(name).public:
        raise ConfigError(f"function {name!r} is public: it cannot require the OIDC invoker")
    return name


def invoker_only(name: str) -> Callable[[Headers], object]:
    """``http_json``'s ``caller`` check for internal HTTP function ``name`` (a Cloud Tasks or
    Scheduler target): ``require_invoker`` against this process's settings."""
    internal_function(name)

    def check(headers: Headers) -> object:
        return require_invoker(name, headers, deps().settings)

    return check


def require_invoker(name: str, headers: Headers, settings: Settings) -> Mapping[str, Any] | None:
    """Verify the request's Google OIDC token for internal function ``name``: issued by
    Google, for the audience ``settings.function_urls[name]``, to the invoker account.

    Returns the token's claims (None locally). Raises ``Unauthorized`` for a missing or
    invalid token, ``ConfigError`` when the function's URL or the invoker is not configured
    (ours to fix: answered 500, so Pub/Sub and Cloud Tasks keep the message and retry).
    """
    if settings.env == "local":
        return None
    # lazy: the verifier (cryptography's RSA) loads with the first request, not at cold start
    from colony.runtime.auth import verify_google_oidc

    audience = settings.function_urls.get(name, "")
    if not audience:
        raise ConfigError(f"COLONY_FUNCTION_URLS names no URL for {name!r} (the OIDC audience)")
    return verify_google_oidc(headers.get("Authorization"), audience, settings)
