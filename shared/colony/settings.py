"""Configuration, read once from the environment at the edge into one frozen object.

Every name is upper snake case with a ``COLONY_`` prefix, except the ones vendor SDKs read
themselves (``OPENAI_API_KEY``, ``GEMINI_API_KEY``, ...). A missing required value fails at
start-up naming the variable and how to set it; nothing insecure is defaulted. The one
exception is a model provider's API key: it is required where that provider is built
(``Settings.api_key``), on first use, so functions that never call a model or embed text
start without one (and are deployed without access to it). How one variable's text becomes
its value (and the error that names it) is ``colony.env_values``'.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from colony import env_values
from colony.env_values import RETENTION_MAX_DAYS, ResearchWeb
from colony.errors import ConfigError
from colony.settings_mailboxes import MailboxApps

DbMode = Literal["embedded", "dsn", "cloudsql"]
EmbeddingProvider = Literal["offline", "openai", "gemini"]

DEFAULT_EMBEDDING_MODELS: dict[str, str] = {
    "offline": "offline-hash-v1",
    "openai": "text-embedding-3-small",
    "gemini": "gemini-embedding-001",
}
_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
GOOGLE_JWKS_URL = "https://www.googleapis.com/oauth2/v3/certs"


# repr=False: ``__repr__`` below hides the secrets. eq=False: a process has one, compared by
# identity; generating ``__eq__`` and ``__hash__`` over eighty fields was a fifth of what the
# class costs to create at every cold start (bench/cold_start.py)
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Settings:
    """Every setting of one process, from ``from_env`` (tests build one directly)."""

    env: Literal["local", "production"] = "local"
    data_dir: Path = Path(".colony")
    db_mode: DbMode = "embedded"
    db_dsn: str | None = None
    db_owner_dsn: str | None = None
    cloudsql_instance: str | None = None
    db_name: str = "colony"
    db_app_role: str = "colony_app"
    db_owner_user: str | None = None
    db_password: str | None = None
    db_owner_password: str | None = None
    db_ssl_root_cert: str | None = None  # PEM of the CA that signs the server (dsn verify-ca)
    embedding_provider: EmbeddingProvider = "offline"
    embedding_model: str = DEFAULT_EMBEDDING_MODELS["offline"]
    embedding_dim: int = 1536
    llm_provider: EmbeddingProvider = "offline"
    llm_model: str | None = None  # None: the budgets file's default model for the provider
    budgets_file: Path | None = None
    prices_file: Path | None = None  # COLONY_PRICES_FILE: over colony/registry/prices.json
    limits_file: Path | None = None  # COLONY_LIMITS_FILE: providers' and senders' limits
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    gemini_api_key: str | None = None
    gemini_base_url: str | None = None
    langfuse_public_key: str | None = None
    langfuse_secret_key: str | None = None
    langfuse_host: str | None = None
    sentry_dsn: str | None = None
    # how functions reach each other
    transport: Literal["local", "gcp"] = "local"
    local_delivery_copies: int = 1  # the local transport delivers each message this many times
    function_urls: Mapping[str, str] = field(default_factory=dict)  # function name → URL
    gcp_project: str = "colony-local"
    gcp_region: str = "us-central1"
    # Local servers speaking the Pub/Sub and Cloud Tasks REST APIs (emulators); None: Google's
    pubsub_emulator_host: str | None = None  # host:port, as the Google SDKs read it
    tasks_endpoint: str | None = None  # a URL (the Cloud Tasks emulator's REST gateway)
    secret_manager_endpoint: str | None = None  # a URL (a Secret Manager REST stand-in)
    invoker_service_account: str | None = None  # OIDC identity for Cloud Tasks / Scheduler
    # who is calling
    jwt_public_key: str | None = None  # PEM; local mode signs with .colony/jwt_private.pem
    jwt_jwks_url: str | None = None  # production (Clerk)
    jwt_issuer: str | None = None
    # Origins (Clerk's ``azp``) a bearer token may come from; empty: ``azp`` is not checked
    jwt_authorized_parties: tuple[str, ...] = ()
    jwt_leeway_seconds: int = 30  # clock skew tolerated on a bearer token's exp / nbf
    # Clerk's Frontend API (``https://clerk.example.com``): the /overview page refreshes its
    # session tokens there (and its CSP lets it); None: tokens are pasted (``colony token``)
    clerk_frontend_api: str | None = None
    google_jwks_url: str = GOOGLE_JWKS_URL  # Google's OIDC signing keys (a stand-in in tests)
    approval_token_key: str | None = None  # HMAC key for signed approval links
    # the mail provider's webhook signing secret (Resend's ``whsec_…``, Svix's scheme)
    delivery_webhook_secret: str | None = None
    # sending (issue 18): SMTP or Resend, who we send as, and the unsubscribe links
    mail_provider: str = "smtp"  # "smtp" (a relay, or make run's server) or "resend"
    resend_api_key: str | None = None
    resend_api_url: str | None = None  # None: https://api.resend.com (tests: a stand-in)
    mail_from: str = "Colony <outreach@colony.localhost>"
    smtp_host: str | None = None
    smtp_port: int = 587
    smtp_username: str | None = None
    smtp_password: str | None = None
    smtp_starttls: bool = True  # off only for a local server
    smtp_ca_file: str | None = None  # None: the system's roots verify the relay
    # the IMAP mailbox an SMTP relay's replies land in (None: no poll; Resend's inbound
    # webhook needs none), read by the replies-poll schedule
    reply_mailbox_host: str | None = None
    reply_mailbox_port: int = 993
    reply_mailbox_username: str | None = None
    reply_mailbox_password: str | None = None
    reply_mailbox_tls: bool = True  # off only for a local server
    reply_mailbox_folder: str = "INBOX"
    unsubscribe_url: str | None = None  # the unsubscribe function's URL
    # sending domains (issue 39 item 3): what an org's SPF must include (the relay's SPF
    # domain), whether every send must come from an org's verified domain ("required") or
    # only those from a domain some org verified ("optional": local, and a deployment's
    # move to per-org domains), and the DNS server the checks ask (None: the system's)
    spf_include: str | None = None
    sending_domains: Literal["required", "optional"] = "optional"  # "required" in production
    dns_resolver: tuple[str, int] | None = None
    unsubscribe_token_key: str | None = None  # HMAC key of unsubscribe links
    # knowledge webhooks (Drive recordings, Notion sync)
    drive_channel_token: str | None = None  # the token we set on the Drive watch channel
    drive_base_url: str | None = None  # None: https://www.googleapis.com (local: a stand-in)
    notion_signing_secret: str | None = None  # verifies X-Notion-Signature
    notion_base_url: str | None = None  # None: https://api.notion.com (local: a stand-in)
    clerk_webhook_secret: str | None = None  # ``whsec_...``: verifies Clerk's Svix signatures
    clerk_secret_key: str | None = None  # ``sk_...``: reads an org's people (Backend API)
    clerk_api_url: str | None = None  # None: https://api.clerk.com (local: the stand-in)
    # notifications in Slack (issue 35): the Slack app's signing secret (verifies its
    # interactive requests) and the Web API's address (None: https://slack.com/api/)
    slack_signing_secret: str | None = None
    slack_api_url: str | None = None
    # the team's CRM (issue 36): the HubSpot public app an org connects through OAuth
    hubspot_base_url: str | None = None  # None: https://api.hubapi.com (local: a stand-in)
    hubspot_auth_url: str | None = None  # None: https://app.hubspot.com/oauth/authorize
    hubspot_client_id: str | None = None  # the app's; None: HubSpot cannot be connected
    hubspot_client_secret: str | None = None
    hubspot_redirect_uri: str | None = None  # where HubSpot sends the person back (our page)
    mailbox_apps: MailboxApps = field(default_factory=MailboxApps)  # issue 39: Gmail, Graph
    recording_parallelism: int = 8  # AGT-006 pass-1 chunks in flight at once
    soft_bounce_retry_seconds: int = 600  # first retry after a 4xx, doubled (policy.bounces)
    # The deployed function this process serves (K_SERVICE, which Cloud Run sets on a gen2
    # function, and on a function's own service, to its name); None locally. Sizes the
    # connection pool (registry.pool_size).
    function_name: str | None = None
    # assets (GCS): transcripts, deployment kits
    assets_bucket: str = "colony-assets"
    signed_url_ttl_seconds: int = 3600
    signing_key_file: Path | None = None  # local service-account key for V4 signed URLs
    # research (issue 33): the page our user agent names, and locally the stand-in web
    research_contact_url: str | None = None
    research_web: ResearchWeb | None = None  # COLONY_RESEARCH_WEB; refused in production
    # COLONY_RESEARCH_BROWSER: the Chromium binary that renders pages needing a browser (the
    # research service's image has one: terraform/browser.tf); None: such pages are
    # recorded, not rendered
    research_browser: str | None = None
    # Whether the campaign chain researches a contact's company before AGT-003
    # (COLONY_RESEARCH=on|off): on by default where there is a web to read (production, or
    # locally with the stand-in web named), off on a laptop that named none.
    research: bool = False
    # retention (issue 14): the deployment's limit per data class, in days
    retention_max_days: Mapping[str, int] = field(default_factory=lambda: dict(RETENTION_MAX_DAYS))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build the settings from ``environ`` (default: the process environment)."""
        env = os.environ if environ is None else environ
        if env.get("COLONY_SECRETS", "").strip():  # deployed: credentials from Secret Manager
            # lazy: only a deployed function (COLONY_SECRETS set) loads the Secret Manager client
            from colony.runtime.secret_manager import with_secrets

            env = with_secrets(env)

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def choice(name: str, allowed: tuple[str, ...], default: str) -> str:
            value = get(name) or default
            if value not in allowed:
                raise ConfigError(f"{name}={value!r} is not one of {', '.join(allowed)}")
            return value

        def bounded_int(name: str, default: int, low: int, high: int) -> int:
            return env_values.bounded_int(name, get(name), default, low, high)

        def require(name: str, why: str) -> str:
            value = get(name)
            if value is None:
                raise ConfigError(f"{name} is required {why}; set it in the environment")
            return value

        mode = cast(DbMode, choice("COLONY_DB_MODE", ("embedded", "dsn", "cloudsql"), "embedded"))
        deploy_env = choice("COLONY_ENV", ("local", "production"), "local")
        if deploy_env == "production" and mode == "embedded":
            raise ConfigError(
                "COLONY_DB_MODE=embedded is local-only; set COLONY_DB_MODE=cloudsql (or dsn) "
                "when COLONY_ENV=production"
            )
        if deploy_env == "production" and get("K_SERVICE") and mode != "dsn":
            raise ConfigError(
                f"COLONY_DB_MODE={mode} is for tools, not functions: a deployed function connects"
                " with COLONY_DB_MODE=dsn (Cloud SQL's private IP, sslmode=verify-ca)"
            )
        provider = cast(
            EmbeddingProvider,
            choice("COLONY_EMBEDDING_PROVIDER", ("offline", "openai", "gemini"), "offline"),
        )
        llm = cast(
            EmbeddingProvider,
            choice("COLONY_LLM_PROVIDER", ("offline", "openai", "gemini"), "offline"),
        )
        dim = bounded_int("COLONY_EMBEDDING_DIM", 1536, 1, 16000)
        role = get("COLONY_DB_APP_ROLE") or "colony_app"
        if not _ROLE.match(role):
            raise ConfigError(f"COLONY_DB_APP_ROLE={role!r} must be a lower-case SQL identifier")
        if deploy_env == "production" and not get("COLONY_INVOKER_SERVICE_ACCOUNT"):
            raise ConfigError(
                "COLONY_INVOKER_SERVICE_ACCOUNT is required when COLONY_ENV=production: it is"
                " the only identity whose OIDC tokens may call Cloud Tasks and Scheduler targets"
            )
        for off in ("COLONY_SMTP_STARTTLS", "COLONY_REPLY_MAILBOX_TLS"):
            if deploy_env == "production" and get(off) == "false":
                raise ConfigError(f"{off}=false is for a local mail server only")
        langfuse_keys = {name: get(name) for name in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY")}
        if any(langfuse_keys.values()) and not all(langfuse_keys.values()):
            missing = next(name for name, value in langfuse_keys.items() if not value)
            raise ConfigError(f"{missing} is required when the other Langfuse key is set")

        settings = cls(
            env=cast(Literal["local", "production"], deploy_env),
            data_dir=Path(get("COLONY_DATA_DIR") or ".colony"),
            db_mode=mode,
            db_dsn=require("COLONY_DB_DSN", "when COLONY_DB_MODE=dsn") if mode == "dsn" else None,
            db_owner_dsn=get("COLONY_DB_OWNER_DSN"),
            cloudsql_instance=require(
                "COLONY_CLOUDSQL_INSTANCE",
                "when COLONY_DB_MODE=cloudsql (project:region:instance)",
            )
            if mode == "cloudsql"
            else None,
            db_name=get("COLONY_DB_NAME") or "colony",
            db_app_role=role,
            db_owner_user=get("COLONY_DB_OWNER_USER"),
            db_password=get("COLONY_DB_PASSWORD"),
            db_owner_password=get("COLONY_DB_OWNER_PASSWORD"),
            db_ssl_root_cert=get("COLONY_DB_SSL_ROOT_CERT"),
            embedding_provider=provider,
            embedding_model=get("COLONY_EMBEDDING_MODEL") or DEFAULT_EMBEDDING_MODELS[provider],
            embedding_dim=dim,
            llm_provider=llm,
            llm_model=get("COLONY_LLM_MODEL"),
            budgets_file=Path(p) if (p := get("COLONY_BUDGETS_FILE")) else None,
            prices_file=Path(p) if (p := get("COLONY_PRICES_FILE")) else None,
            limits_file=Path(p) if (p := get("COLONY_LIMITS_FILE")) else None,
            openai_api_key=get("OPENAI_API_KEY"),  # required on first use: api_key()
            openai_base_url=get("COLONY_OPENAI_BASE_URL"),
            gemini_api_key=get("GEMINI_API_KEY"),
            gemini_base_url=get("COLONY_GEMINI_BASE_URL"),
            langfuse_public_key=langfuse_keys["LANGFUSE_PUBLIC_KEY"],
            langfuse_secret_key=langfuse_keys["LANGFUSE_SECRET_KEY"],
            langfuse_host=get("LANGFUSE_HOST"),
            sentry_dsn=get("SENTRY_DSN"),
            transport=cast(
                Literal["local", "gcp"], choice("COLONY_TRANSPORT", ("local", "gcp"), "local")
            ),
            function_urls=env_values.function_urls(get("COLONY_FUNCTION_URLS")),
            local_delivery_copies=bounded_int("COLONY_LOCAL_DELIVERY_COPIES", 1, 1, 10),
            gcp_project=get("COLONY_GCP_PROJECT") or get("GOOGLE_CLOUD_PROJECT") or "colony-local",
            gcp_region=get("COLONY_GCP_REGION") or "us-central1",
            pubsub_emulator_host=get("PUBSUB_EMULATOR_HOST"),
            tasks_endpoint=get("COLONY_TASKS_ENDPOINT"),
            secret_manager_endpoint=get("COLONY_SECRET_MANAGER_ENDPOINT"),
            invoker_service_account=get("COLONY_INVOKER_SERVICE_ACCOUNT"),
            jwt_public_key=get("COLONY_JWT_PUBLIC_KEY"),
            jwt_jwks_url=get("COLONY_JWT_JWKS_URL"),
            jwt_issuer=get("COLONY_JWT_ISSUER"),
            jwt_authorized_parties=env_values.origins(
                "COLONY_JWT_AUTHORIZED_PARTIES", get("COLONY_JWT_AUTHORIZED_PARTIES")
            ),
            jwt_leeway_seconds=bounded_int("COLONY_JWT_LEEWAY_SECONDS", 30, 0, 300),
            clerk_frontend_api=env_values.frontend_api(
                get("COLONY_CLERK_FRONTEND_API"), deploy_env
            ),
            google_jwks_url=env_values.google_jwks_url(
                get("COLONY_GOOGLE_JWKS_URL"), deploy_env, GOOGLE_JWKS_URL
            ),
            approval_token_key=get("COLONY_APPROVAL_TOKEN_KEY"),
            delivery_webhook_secret=get("COLONY_DELIVERY_WEBHOOK_SECRET"),
            mail_provider=choice("COLONY_MAIL_PROVIDER", ("smtp", "resend"), "smtp"),
            resend_api_key=get("COLONY_RESEND_API_KEY"),
            resend_api_url=get("COLONY_RESEND_API_URL"),
            mail_from=get("COLONY_MAIL_FROM") or "Colony <outreach@colony.localhost>",
            smtp_host=get("COLONY_SMTP_HOST"),
            smtp_port=bounded_int("COLONY_SMTP_PORT", 587, 1, 65535),
            smtp_username=get("COLONY_SMTP_USERNAME"),
            smtp_password=get("COLONY_SMTP_PASSWORD"),
            smtp_starttls=choice("COLONY_SMTP_STARTTLS", ("true", "false"), "true") == "true",
            smtp_ca_file=get("COLONY_SMTP_CA_FILE"),
            reply_mailbox_host=get("COLONY_REPLY_MAILBOX_HOST"),
            reply_mailbox_port=bounded_int("COLONY_REPLY_MAILBOX_PORT", 993, 1, 65535),
            reply_mailbox_username=get("COLONY_REPLY_MAILBOX_USERNAME"),
            reply_mailbox_password=get("COLONY_REPLY_MAILBOX_PASSWORD"),
            reply_mailbox_tls=choice("COLONY_REPLY_MAILBOX_TLS", ("true", "false"), "true")
            == "true",
            reply_mailbox_folder=get("COLONY_REPLY_MAILBOX_FOLDER") or "INBOX",
            unsubscribe_url=get("COLONY_UNSUBSCRIBE_URL"),
            spf_include=env_values.spf_include(get("COLONY_SPF_INCLUDE")),
            sending_domains=cast(
                Literal["required", "optional"],
                choice(
                    "COLONY_SENDING_DOMAINS",
                    ("required", "optional"),
                    "required" if deploy_env == "production" else "optional",
                ),
            ),
            dns_resolver=env_values.dns_resolver(get("COLONY_DNS_RESOLVER"), deploy_env),
            unsubscribe_token_key=get("COLONY_UNSUBSCRIBE_TOKEN_KEY"),
            drive_channel_token=get("COLONY_DRIVE_CHANNEL_TOKEN"),
            drive_base_url=get("COLONY_DRIVE_BASE_URL"),
            notion_signing_secret=get("COLONY_NOTION_SIGNING_SECRET"),
            notion_base_url=get("COLONY_NOTION_BASE_URL"),
            clerk_webhook_secret=get("COLONY_CLERK_WEBHOOK_SECRET"),
            clerk_secret_key=get("COLONY_CLERK_SECRET_KEY"),
            clerk_api_url=get("COLONY_CLERK_API_URL"),
            slack_signing_secret=get("COLONY_SLACK_SIGNING_SECRET"),
            slack_api_url=get("COLONY_SLACK_API_URL"),
            hubspot_base_url=get("COLONY_HUBSPOT_BASE_URL"),
            hubspot_auth_url=get("COLONY_HUBSPOT_AUTH_URL"),
            hubspot_client_id=get("COLONY_HUBSPOT_CLIENT_ID"),
            hubspot_client_secret=get("COLONY_HUBSPOT_CLIENT_SECRET"),
            hubspot_redirect_uri=get("COLONY_HUBSPOT_REDIRECT_URI"),
            mailbox_apps=MailboxApps.from_env(get),
            recording_parallelism=bounded_int("COLONY_RECORDING_PARALLELISM", 8, 1, 32),
            soft_bounce_retry_seconds=bounded_int(
                "COLONY_SOFT_BOUNCE_RETRY_SECONDS", 600, 1, 21600
            ),
            function_name=get("K_SERVICE"),
            assets_bucket=get("COLONY_ASSETS_BUCKET") or "colony-assets",
            # V4 signed URLs live at most seven days
            signed_url_ttl_seconds=bounded_int("COLONY_SIGNED_URL_TTL_SECONDS", 3600, 1, 604800),
            signing_key_file=Path(k) if (k := get("COLONY_SIGNING_KEY_FILE")) else None,
            research_contact_url=env_values.research_contact_url(
                get("COLONY_RESEARCH_CONTACT_URL"), deploy_env
            ),
            research_web=(web := env_values.research_web(get("COLONY_RESEARCH_WEB"), deploy_env)),
            research_browser=env_values.research_browser(get("COLONY_RESEARCH_BROWSER")),
            research=choice(
                "COLONY_RESEARCH",
                ("on", "off"),
                "on" if deploy_env == "production" or web is not None else "off",
            )
            == "on",
            retention_max_days=env_values.retention_limits(
                get("COLONY_RETENTION_MAX_DAYS"), RETENTION_MAX_DAYS
            ),
        )
        return settings

    def api_key(self, provider: Literal["openai", "gemini"], chosen_by: str) -> str:
        """``provider``'s API key, for the adapter being built because ``chosen_by`` (the
        setting's variable) names it. Checked here, at first use rather than start-up, so a
        function that never builds a model client or embedder runs without the key."""
        key, name = (
            (self.openai_api_key, "OPENAI_API_KEY")
            if provider == "openai"
            else (self.gemini_api_key, "GEMINI_API_KEY")
        )
        if not key:
            raise ConfigError(
                f"{name} is required when {chosen_by}={provider}; set it in the environment"
                " (deployed: grant the function the secret in colony.registry.functions)"
            )
        return key

    def __repr__(self) -> str:  # never print a secret
        hidden = {"db_password", "db_owner_password", "openai_api_key", "gemini_api_key"}
        hidden |= {"langfuse_secret_key", "approval_token_key", "delivery_webhook_secret"}
        hidden |= {"drive_channel_token", "notion_signing_secret"}
        hidden |= {"smtp_password", "unsubscribe_token_key", "clerk_webhook_secret"}
        hidden |= {"clerk_secret_key"}
        hidden |= {"resend_api_key", "reply_mailbox_password", "hubspot_client_secret"}
        hidden |= {"slack_signing_secret"}
        # sentry_dsn is hidden by its *dsn suffix
        parts = []
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name in hidden or name.endswith("dsn"):
                value = "***" if value else None
            parts.append(f"{name}={value!r}")
        return f"Settings({', '.join(parts)})"
