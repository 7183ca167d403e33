"""The credentials ``colony.settings`` reads, where Secret Manager keeps each one, and the
sets of them a deployed function is granted.

Here rather than in ``colony.settings``: ``Settings.from_env`` resolves secrets through
``colony.runtime.secret_manager``, which needs this list, so the list sits below both.
"""

# Every credential the settings read: environment name → Secret Manager secret id. The one
# list that secret resolution (colony.runtime.secret_manager), the generated terraform and the
# deploy tests share. A deployed function lists the names it needs in COLONY_SECRETS (set by
# terraform from the function registry) and reads them from Secret Manager once per instance;
# locally they come from the environment.
SECRETS: dict[str, str] = {
    "COLONY_DB_PASSWORD": "colony-db-password",
    "COLONY_DB_OWNER_PASSWORD": "colony-db-owner-password",
    "OPENAI_API_KEY": "colony-openai-api-key",
    "GEMINI_API_KEY": "colony-gemini-api-key",
    "LANGFUSE_PUBLIC_KEY": "colony-langfuse-public-key",
    "LANGFUSE_SECRET_KEY": "colony-langfuse-secret-key",
    "SENTRY_DSN": "colony-sentry-dsn",
    "COLONY_JWT_ISSUER": "colony-jwt-issuer",
    "COLONY_JWT_JWKS_URL": "colony-jwt-jwks-url",
    "COLONY_APPROVAL_TOKEN_KEY": "colony-approval-token-key",
    "COLONY_DELIVERY_WEBHOOK_SECRET": "colony-delivery-webhook-secret",
    "COLONY_SMTP_PASSWORD": "colony-smtp-password",
    "COLONY_REPLY_MAILBOX_PASSWORD": "colony-reply-mailbox-password",
    "COLONY_RESEND_API_KEY": "colony-resend-api-key",
    "COLONY_UNSUBSCRIBE_TOKEN_KEY": "colony-unsubscribe-token-key",
    "COLONY_DRIVE_CHANNEL_TOKEN": "colony-drive-channel-token",
    "COLONY_NOTION_SIGNING_SECRET": "colony-notion-signing-secret",
    "COLONY_CLERK_WEBHOOK_SECRET": "colony-clerk-webhook-secret",
    "COLONY_CLERK_SECRET_KEY": "colony-clerk-secret-key",
    "COLONY_HUBSPOT_CLIENT_SECRET": "colony-hubspot-client-secret",
    # the OAuth apps an org's own mailboxes are connected through (issue 39 item 2)
    "COLONY_GOOGLE_MAIL_CLIENT_SECRET": "colony-google-mail-client-secret",
    "COLONY_MICROSOFT_MAIL_CLIENT_SECRET": "colony-microsoft-mail-client-secret",
    "COLONY_SLACK_SIGNING_SECRET": "colony-slack-signing-secret",
}
MAILBOX_APP_SECRETS: tuple[str, ...] = (
    "COLONY_GOOGLE_MAIL_CLIENT_SECRET",
    "COLONY_MICROSOFT_MAIL_CLIENT_SECRET",
)

# The sets of them a function is granted (``Function.secrets``, colony.registry.functions):
# what its composition root (colony.runtime.deps) reads. Every function reads the
# application role's password and the error reporting DSN; the model provider keys only
# matter to functions that build the model client or the embedder (both are built on first
# use, and the key is checked there), and the Langfuse keys only to those that call a chat
# model (they trace model calls; the secret key reads every org's traced prompts).
PROVIDER_SECRETS: tuple[str, ...] = ("OPENAI_API_KEY", "GEMINI_API_KEY")
TRACING_SECRETS: tuple[str, ...] = ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY")
# For functions that never call a chat model nor embed text: no provider key, no Langfuse.
MODEL_FREE_SECRETS: tuple[str, ...] = ("COLONY_DB_PASSWORD", "SENTRY_DSN")
# For functions that embed text (the Knowledge Core) but call no chat model: nothing to trace.
EMBEDDING_SECRETS: tuple[str, ...] = (*MODEL_FREE_SECRETS, *PROVIDER_SECRETS)
RUNTIME_SECRETS: tuple[str, ...] = (*EMBEDDING_SECRETS, *TRACING_SECRETS)  # model functions
JWT_SECRETS: tuple[str, ...] = ("COLONY_JWT_ISSUER", "COLONY_JWT_JWKS_URL")  # user-facing HTTP
