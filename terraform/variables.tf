# ---------------------------------------------------------------------------------------------
# Deployment settings (set in terraform.tfvars or with -var; see docs/deploy.md).
# ---------------------------------------------------------------------------------------------

variable "project_id" {
  description = "GCP project id to deploy into."
  type        = string
}

variable "vpc_connector_cidr" {
  description = "An unused /28 in the Colony VPC for the Serverless VPC Access connector's instances."
  type        = string
  default     = "10.8.0.0/28"
}

variable "region" {
  description = "Region of the functions, queues, database and buckets."
  type        = string
  default     = "us-central1"
}

variable "environment" {
  description = "Deployment name, used in labels (prod, staging, ...)."
  type        = string
  default     = "prod"
}

variable "bundle_dir" {
  description = "Where `make package` left the function zips (relative to terraform/)."
  type        = string
  default     = "../build/functions"
}

variable "function_sources" {
  description = "Function name → zip named by its content hash (build/functions/sources.tfvars.json)."
  type        = map(string)
}

variable "function_images" {
  description = "Function in an image of our own → its image tag, the hash of its zip and Dockerfile (build/functions/sources.tfvars.json); cloudbuild.yaml pushes the image before the deploy."
  type        = map(string)
  default     = {}
}

variable "deployer_service_account" {
  description = "Email of the account Cloud Build deploys with; it runs the migrations."
  type        = string
}

variable "llm_provider" {
  description = "COLONY_LLM_PROVIDER: openai or gemini."
  type        = string
  default     = "openai"
}

variable "embedding_provider" {
  description = "COLONY_EMBEDDING_PROVIDER: openai or gemini."
  type        = string
  default     = "openai"
}

variable "embedding_dim" {
  description = "Vector dimension of the Knowledge Core (pgvector)."
  type        = number
  default     = 1536
}

variable "langfuse_host" {
  description = "Langfuse API host (the keys are secrets)."
  type        = string
  default     = "https://cloud.langfuse.com"
}

variable "db_tier" {
  description = "Cloud SQL machine tier."
  type        = string
  default     = "db-custom-2-7680"
}

variable "db_max_connections" {
  description = "Cloud SQL max_connections, set explicitly so the connection budget (docs/deploy.md) is checked against a number we control; raise it only with a larger db_tier."
  type        = number
  default     = 400
}

variable "research_contact_url" {
  description = "COLONY_RESEARCH_CONTACT_URL: the https:// page research's user agent names (ColonyResearch/1.0 (+<url>)), where a site's owner learns who reads their pages and how to stop it (docs/research.md, \"The user agent\"). Research refuses to fetch in production without it."
  type        = string
  validation {
    condition     = can(regex("^https://[^/\\s()]+(/[^\\s()]*)?$", var.research_contact_url))
    error_message = "research_contact_url is an https:// URL with no spaces or parentheses (it is quoted in a User-Agent comment)."
  }
}

variable "jwt_authorized_parties" {
  description = "Origins the web app is served from (COLONY_JWT_AUTHORIZED_PARTIES): a Clerk token whose azp is not one of them is refused. Empty: azp is not checked."
  type        = list(string)
  default     = []
}

variable "clerk_frontend_api" {
  description = "Clerk's Frontend API origin (COLONY_CLERK_FRONTEND_API, e.g. https://clerk.example.com): the /overview page refreshes its session tokens there, and its CSP allows it. Empty: tokens are pasted."
  type        = string
  default     = ""
}

variable "db_name" {
  description = "Database name."
  type        = string
  default     = "colony"
}

variable "db_iam_users" {
  description = "People (emails) who may log in to the database with IAM authentication."
  type        = list(string)
  default     = []
}

variable "assets_bucket" {
  description = "Name of the CMEK-encrypted assets bucket (globally unique)."
  type        = string
  default     = "colony-assets"
}

variable "retention_max_days" {
  description = "The longest any org may keep each data class, in days (COLONY_RETENTION_MAX_DAYS); the bucket deletes transcripts and research pages past their limits."
  type        = map(number)
  default = {
    transcripts   = 365
    chat_events   = 90
    llm_calls     = 180
    outbox_bodies = 365
    research      = 180
  }
  validation {
    condition     = alltrue([for k, v in var.retention_max_days : contains(["transcripts", "chat_events", "llm_calls", "outbox_bodies", "research"], k) && v >= 1 && v <= 3650])
    error_message = "retention_max_days: known data classes only, each 1..3650 days."
  }
}

# ---------------------------------------------------------------------------------------------
# The code's registries, generated into registry.auto.tfvars.json by `make package`
# (python -m colony.deploy tfvars). Never edit them here: edit colony/registry/ (a function's
# entry in pubsub_functions.py or http_functions.py, topics and queues in wiring.py, SECRETS
# in secrets.py), then regenerate.
# ---------------------------------------------------------------------------------------------

variable "functions" {
  description = "colony.registry.functions.FUNCTIONS with their deployment facts."
  type = map(object({
    account_id            = string
    entry_point           = string
    trigger               = string
    topic                 = optional(string)
    agent                 = optional(string)
    description           = string
    memory                = string
    cpu                   = string
    timeout_seconds       = number
    concurrency           = number
    max_instances         = number
    secrets               = list(string)
    publishes             = list(string)
    enqueues              = list(string)
    assets                = string
    public                = bool
    roles                 = map(string)
    max_delivery_attempts = number
    image                 = string
  }))
  validation {
    condition     = alltrue([for fn in values(var.functions) : contains(["buildpack", "browser"], fn.image)])
    error_message = "a function's image is buildpack (a Cloud Function) or browser (browser.tf)."
  }
}

variable "topics" {
  description = "colony.registry.functions.TOPICS."
  type = map(object({
    purpose               = string
    max_delivery_attempts = number
  }))
}

variable "dead_letter_topic" {
  description = "Topic that receives messages which exhausted their delivery attempts."
  type        = string
}

variable "invoker_account_id" {
  description = "colony.registry.functions.INVOKER_ACCOUNT: the account whose OIDC tokens internal functions accept."
  type        = string
}

variable "queues" {
  description = "colony.registry.functions.QUEUES."
  type = map(object({
    purpose                   = string
    max_attempts              = number
    max_dispatches_per_second = number
  }))
}

variable "schedules" {
  description = "colony.registry.schedules.SCHEDULES: one Cloud Scheduler job each."
  type = map(object({
    cron      = string
    time_zone = string
    serves    = string
    purpose   = string
  }))
}

variable "secrets" {
  description = "colony.registry.secrets.SECRETS: settings name → Secret Manager secret id."
  type        = map(string)
}

variable "mail_from" {
  description = "Who approved messages are sent as (COLONY_MAIL_FROM), e.g. \"ZoomProp <outreach@zoomprop.com>\"; its domain names every Message-ID."
  type        = string
  default     = "Colony <outreach@colony.localhost>"
}

variable "spf_include" {
  description = "The SPF domain of the relay or provider that sends for the orgs (COLONY_SPF_INCLUDE), which an org's SPF record must include before its sending domain is verified: \"_spf.google.com\" for the Google Workspace relay, \"amazonses.com\" for Resend and SES, your provider's otherwise. docs/deploy.md."
  type        = string
  default     = ""
}

variable "sending_domains" {
  description = "\"required\": every message must come from a verified sending domain of its org (COLONY_SENDING_DOMAINS); \"optional\": a message from a domain no org verified goes unsigned, for the move of a deployment that sent from one COLONY_MAIL_FROM. docs/deploy.md."
  type        = string
  default     = "required"
  validation {
    condition     = contains(["required", "optional"], var.sending_domains)
    error_message = "sending_domains is required or optional."
  }
}

variable "mail_provider" {
  description = "How approved messages leave: \"smtp\" (the relay below) or \"resend\" (Resend's API; its key is the colony-resend-api-key secret, its webhook signing secret colony-delivery-webhook-secret). docs/deploy.md."
  type        = string
  default     = "smtp"
  validation {
    condition     = contains(["smtp", "resend"], var.mail_provider)
    error_message = "mail_provider is smtp or resend."
  }
}

variable "smtp_host" {
  description = "The SMTP relay approved messages go through (e.g. smtp-relay.gmail.com for a Google Workspace relay); its password is the colony-smtp-password secret."
  type        = string
  default     = "smtp-relay.gmail.com"
}

variable "smtp_port" {
  description = "The relay's submission port (STARTTLS is always required)."
  type        = number
  default     = 587
}

variable "reply_mailbox_host" {
  description = "The IMAP server of the mailbox replies to relayed mail land in (e.g. imap.gmail.com); empty: no mailbox poll (Resend's inbound webhook needs none). Its password is the colony-reply-mailbox-password secret."
  type        = string
  default     = ""
}

variable "reply_mailbox_port" {
  description = "The reply mailbox's IMAP port (TLS is always required)."
  type        = number
  default     = 993
}

variable "reply_mailbox_username" {
  description = "The reply mailbox login."
  type        = string
  default     = ""
}

variable "reply_mailbox_folder" {
  description = "The folder replies are read from."
  type        = string
  default     = "INBOX"
}

variable "schedule_overrides" {
  description = "Per schedule (colony.registry.schedules: daily-brief, retention, notion-reconcile, drive-renew, replies-poll), a cron and/or time zone other than the registry's."
  type = map(object({
    cron      = optional(string)
    time_zone = optional(string)
  }))
  default = {}
  validation {
    condition     = alltrue([for k, v in var.schedule_overrides : contains(["daily-brief", "retention", "notion-reconcile", "drive-renew", "replies-poll"], k)])
    error_message = "schedule_overrides: known schedules only (colony.registry.schedules)."
  }
}

variable "smtp_username" {
  description = "The relay login (empty: a relay that authenticates by IP allow-list)."
  type        = string
  default     = ""
}
