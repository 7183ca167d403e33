# One Cloud Function (gen2) per registered function: source zip by content hash, entry point,
# size and concurrency, plain settings as environment variables and, for credentials, only the
# names to read from Secret Manager (COLONY_SECRETS): never a secret value. Cloud Build turns
# each zip into an image as the dedicated build account (iam.tf), into our own repository.
# A function the registry runs in an image of our own (`image`, e.g. "browser": research, whose
# image carries Chromium) is a Cloud Run service instead (browser.tf), with the same settings.

locals {
  buildpack_functions = { for name, fn in var.functions : name => fn if fn.image == "buildpack" }
  browser_functions   = { for name, fn in var.functions : name => fn if fn.image == "browser" }
  function_labels = {
    for name, fn in var.functions : name => { colony = "function", env = var.environment, trigger = fn.trigger }
  }

  function_env = {
    COLONY_ENV = "production"
    # Cloud SQL's private IP over TLS, the server checked against its instance CA (sslmode
    # verify-ca: the certificate names the instance, not the IP); the password comes from
    # Secret Manager (COLONY_DB_PASSWORD). No connector: see network.tf.
    COLONY_DB_MODE                 = "dsn"
    COLONY_DB_DSN                  = "postgresql://${google_sql_user.app.name}@${google_sql_database_instance.colony.private_ip_address}:5432/${google_sql_database.colony.name}?sslmode=verify-ca"
    COLONY_DB_SSL_ROOT_CERT        = google_sql_database_instance.colony.server_ca_cert[0].cert
    COLONY_DB_NAME                 = google_sql_database.colony.name
    COLONY_DB_APP_ROLE             = google_sql_user.app.name
    COLONY_TRANSPORT               = "gcp"
    COLONY_GCP_PROJECT             = var.project_id
    COLONY_GCP_REGION              = var.region
    COLONY_FUNCTION_URLS           = jsonencode(local.function_urls)
    COLONY_INVOKER_SERVICE_ACCOUNT = google_service_account.invoker.email
    COLONY_JWT_AUTHORIZED_PARTIES  = join(",", var.jwt_authorized_parties)
    COLONY_CLERK_FRONTEND_API      = var.clerk_frontend_api
    COLONY_ASSETS_BUCKET           = google_storage_bucket.assets.name
    COLONY_LLM_PROVIDER            = var.llm_provider
    COLONY_EMBEDDING_PROVIDER      = var.embedding_provider
    COLONY_EMBEDDING_DIM           = tostring(var.embedding_dim)
    LANGFUSE_HOST                  = var.langfuse_host
    COLONY_RETENTION_MAX_DAYS      = join(",", [for k, v in var.retention_max_days : "${k}=${v}"])
    # research (issue 33): the page its user agent names (required to fetch in production)
    COLONY_RESEARCH_CONTACT_URL = var.research_contact_url
    # sending (issue 18): SMTP or Resend, the relay and who we send as; the SMTP password and
    # the Resend API key are secrets
    COLONY_MAIL_PROVIDER = var.mail_provider
    COLONY_MAIL_FROM     = var.mail_from
    COLONY_SMTP_HOST     = var.smtp_host
    COLONY_SMTP_PORT     = tostring(var.smtp_port)
    COLONY_SMTP_USERNAME = var.smtp_username
    # sending domains (issue 39 item 3): what an org's SPF must include, and whether every
    # message must come from a verified domain of its org
    COLONY_SPF_INCLUDE     = var.spf_include
    COLONY_SENDING_DOMAINS = var.sending_domains
    # the mailbox an SMTP relay's replies land in (empty: none, e.g. with Resend's inbound
    # webhook); its password is the colony-reply-mailbox-password secret
    COLONY_REPLY_MAILBOX_HOST     = var.reply_mailbox_host
    COLONY_REPLY_MAILBOX_PORT     = tostring(var.reply_mailbox_port)
    COLONY_REPLY_MAILBOX_USERNAME = var.reply_mailbox_username
    COLONY_REPLY_MAILBOX_FOLDER   = var.reply_mailbox_folder
  }
}

resource "google_storage_bucket_object" "source" {
  for_each = local.buildpack_functions
  # The object name is the zip's content hash: new code is a new object, hence a new revision.
  name   = "functions/${var.function_sources[each.key]}"
  bucket = google_storage_bucket.sources.name
  source = "${var.bundle_dir}/${var.function_sources[each.key]}"
}

# The images Cloud Build makes of the functions, and the pipeline's images of the functions
# that run in one of our own (browser.tf: <repository>/<image>/<function>:<content hash>). Ours
# rather than the default gcf-artifacts, so the build account can be granted writer on this
# repository alone, and old images go (the newest ten of each image are always kept).
resource "google_artifact_registry_repository" "functions" {
  location      = var.region
  repository_id = "colony-functions"
  description   = "Images of the Colony functions, built by Cloud Build from the source zips"
  format        = "DOCKER"
  kms_key_name  = google_kms_crypto_key.artifacts.id
  labels = {
    colony = "functions"
    env    = var.environment
  }

  cleanup_policy_dry_run = false
  cleanup_policies {
    id     = "keep-recent"
    action = "KEEP"
    most_recent_versions {
      keep_count = 10
    }
  }
  cleanup_policies {
    id     = "delete-old"
    action = "DELETE"
    condition {
      older_than = "2592000s"
    }
  }

  depends_on = [google_kms_crypto_key_iam_member.artifacts_agent]
}

resource "google_cloudfunctions2_function" "function" {
  # checkov:skip=CKV_GCP_124:ingress is ALLOW_INTERNAL_ONLY except for functions the registry marks public (webhooks, browser calls), which verify a signature or JWT on every request
  for_each    = local.buildpack_functions
  name        = each.key
  location    = var.region
  description = each.value.description
  labels      = local.function_labels[each.key]

  build_config {
    runtime           = "python311"
    entry_point       = each.value.entry_point
    service_account   = google_service_account.build.id
    docker_repository = google_artifact_registry_repository.functions.id
    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.source[each.key].name
      }
    }
  }

  service_config {
    service_account_email            = google_service_account.function[each.key].email
    available_memory                 = each.value.memory
    available_cpu                    = each.value.cpu
    timeout_seconds                  = each.value.timeout_seconds
    max_instance_request_concurrency = each.value.concurrency
    min_instance_count               = 0
    max_instance_count               = each.value.max_instances
    # Pub/Sub push, Cloud Tasks and Cloud Scheduler count as internal traffic; only functions
    # that authenticate their callers themselves (JWT, HMAC, channel token) are reachable.
    ingress_settings               = each.value.public ? "ALLOW_ALL" : "ALLOW_INTERNAL_ONLY"
    all_traffic_on_latest_revision = true
    # Private ranges (Cloud SQL's private IP) through the VPC connector; Google APIs direct.
    vpc_connector                 = google_vpc_access_connector.colony.id
    vpc_connector_egress_settings = "PRIVATE_RANGES_ONLY"
    environment_variables = merge(local.function_env, {
      COLONY_SECRETS = join(",", each.value.secrets)
    })
  }

  depends_on = [
    google_project_service.apis,
    google_secret_manager_secret_iam_member.function,
    # the build runs as the build account: its grants must exist before the first build
    google_project_iam_member.build_logs,
    google_project_iam_member.build_sources,
    google_artifact_registry_repository_iam_member.build_images,
  ]
}
