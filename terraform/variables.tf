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

variable "jwt_authorized_parties" {
  description = "Origins the web app is served from (COLONY_JWT_AUTHORIZED_PARTIES): a Clerk token whose azp is not one of them is refused. Empty: azp is not checked."
  type        = list(string)
  default     = []
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

variable "retention_org_ids" {
  description = "Orgs whose retention periods are enforced daily: one Cloud Scheduler job each."
  type        = list(string)
  default     = []
}

variable "retention_schedule" {
  description = "When the daily retention run starts (cron, UTC)."
  type        = string
  default     = "30 3 * * *"
}

variable "retention_max_days" {
  description = "The longest any org may keep each data class, in days (COLONY_RETENTION_MAX_DAYS); the bucket deletes transcripts past the transcripts limit."
  type        = map(number)
  default = {
    transcripts   = 365
    chat_events   = 90
    llm_calls     = 180
    outbox_bodies = 365
  }
  validation {
    condition     = alltrue([for k, v in var.retention_max_days : contains(["transcripts", "chat_events", "llm_calls", "outbox_bodies"], k) && v >= 1 && v <= 3650])
    error_message = "retention_max_days: known data classes only, each 1..3650 days."
  }
}

variable "drive_org_ids" {
  description = "Orgs whose Drive watch channels are renewed: one Cloud Scheduler job each."
  type        = list(string)
  default     = []
}

variable "drive_renew_schedule" {
  description = "When Drive channels are renewed (cron, UTC); well inside a channel's one-day life."
  type        = string
  default     = "0 */4 * * *"
}

variable "notion_org_ids" {
  description = "Orgs whose connected Notion workspaces are reconciled daily: one Cloud Scheduler job each."
  type        = list(string)
  default     = []
}

variable "notion_reconcile_schedule" {
  description = "When the daily Notion reconciliation starts (cron, UTC)."
  type        = string
  default     = "15 4 * * *"
}

variable "brief_org_ids" {
  description = "Orgs that get a daily brief: one Cloud Scheduler job each."
  type        = list(string)
  default     = []
}

variable "daily_brief_schedule" {
  description = "Cron schedule of the daily brief."
  type        = string
  default     = "0 6 * * *"
}

variable "daily_brief_time_zone" {
  description = "Time zone of the daily brief schedule."
  type        = string
  default     = "Etc/UTC"
}

# ---------------------------------------------------------------------------------------------
# The code's registries, generated into registry.auto.tfvars.json by `make package`
# (python -m colony.deploy tfvars). Never edit them here: edit colony/registry/functions.py
# and colony/settings.py SECRETS, then regenerate.
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
  }))
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

variable "secrets" {
  description = "colony.settings.SECRETS: settings name → Secret Manager secret id."
  type        = map(string)
}

variable "mail_from" {
  description = "Who approved messages are sent as (COLONY_MAIL_FROM), e.g. \"ZoomProp <outreach@zoomprop.com>\"; its domain names every Message-ID."
  type        = string
  default     = "Colony <outreach@colony.localhost>"
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

variable "smtp_username" {
  description = "The relay login (empty: a relay that authenticates by IP allow-list)."
  type        = string
  default     = ""
}
