# Secret Manager: one secret per credential the settings read (colony.registry.secrets), each
# readable only by the functions that list it (`secrets` next to each Function). Values are
# added out of band (`gcloud secrets versions add`, docs/deploy.md), except the two database
# passwords, which terraform generates and nobody needs to know.

locals {
  secret_grants = merge([
    for name, fn in var.functions : {
      for setting in fn.secrets : "${name}/${setting}" => { function = name, setting = setting }
    }
  ]...)
}

resource "google_secret_manager_secret" "secret" {
  for_each  = var.secrets
  secret_id = each.value
  labels = {
    colony  = "secret"
    env     = var.environment
    setting = lower(each.key)
  }

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}

# roles/secretmanager.secretAccessor on exactly the secrets a function reads.
resource "google_secret_manager_secret_iam_member" "function" {
  for_each  = local.secret_grants
  secret_id = google_secret_manager_secret.secret[each.value.setting].id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.function[each.value.function].email}"
}

# The deployer runs migrations as the owner role (a Cloud Build step, never a cold start).
resource "google_secret_manager_secret_iam_member" "deployer_owner_password" {
  secret_id = google_secret_manager_secret.secret["COLONY_DB_OWNER_PASSWORD"].id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${var.deployer_service_account}"
}

resource "random_password" "db" {
  for_each = toset(["COLONY_DB_PASSWORD", "COLONY_DB_OWNER_PASSWORD"])
  length   = 40
  special  = false
}

resource "google_secret_manager_secret_version" "db_password" {
  for_each    = random_password.db
  secret      = google_secret_manager_secret.secret[each.key].id
  secret_data = each.value.result
}

# Per-org credentials handed to us at run time (issue 17 item 4): each connected Notion
# workspace's token is its own secret, colony-notion-<digest of org and workspace>, created by
# the admin API when an org connects it and read by the reembed worker. Terraform cannot list
# them, so the grants are conditioned on the name prefix, never project-wide.
locals {
  notion_secret_prefix = "projects/${data.google_project.this.number}/secrets/colony-notion-"
}

# roles/secretmanager.admin for the admin function on colony-notion-* only: it creates the
# secret and adds a version (a reconnect rotates the token).
resource "google_project_iam_member" "admin_notion_secrets" {
  project = var.project_id
  role    = "roles/secretmanager.admin"
  member  = "serviceAccount:${google_service_account.function["admin"].email}"
  condition {
    title      = "colony-notion-secrets-only"
    expression = "resource.name.startsWith(\"${local.notion_secret_prefix}\")"
  }
}

# roles/secretmanager.secretAccessor for the reembed worker on colony-notion-* only.
resource "google_project_iam_member" "reembed_notion_secrets" {
  project = var.project_id
  role    = "roles/secretmanager.secretAccessor"
  member  = "serviceAccount:${google_service_account.function["reembed"].email}"
  condition {
    title      = "colony-notion-secrets-only"
    expression = "resource.name.startsWith(\"${local.notion_secret_prefix}\")"
  }
}

# Deleting a token, and nothing else: the daily reconciliation releases a workspace its token
# no longer proves and deletes that token (flows.knowledge.notion_workspaces.reprove). No
# predefined role deletes a secret without also creating secrets and adding versions.
resource "google_project_iam_custom_role" "notion_secret_deleter" {
  project     = var.project_id
  role_id     = "colonyNotionSecretDeleter"
  title       = "Colony: delete a released Notion workspace's token"
  permissions = ["secretmanager.secrets.delete"]
}

# colonyNotionSecretDeleter for the reembed worker on colony-notion-* only.
resource "google_project_iam_member" "reembed_notion_secret_delete" {
  project = var.project_id
  role    = google_project_iam_custom_role.notion_secret_deleter.id
  member  = "serviceAccount:${google_service_account.function["reembed"].email}"
  condition {
    title      = "colony-notion-secrets-only"
    expression = "resource.name.startsWith(\"${local.notion_secret_prefix}\")"
  }
}

# colonyNotionSecretDeleter for the data lifecycle on colony-notion-* only: an org's erasure
# deletes its workspaces' tokens (flows.tenants.erasure, phase "connections").
resource "google_project_iam_member" "lifecycle_notion_secret_delete" {
  project = var.project_id
  role    = google_project_iam_custom_role.notion_secret_deleter.id
  member  = "serviceAccount:${google_service_account.function["data-lifecycle"].email}"
  condition {
    title      = "colony-notion-secrets-only"
    expression = "resource.name.startsWith(\"${local.notion_secret_prefix}\")"
  }
}

# Sending domains' DKIM private keys (issue 39 item 3): one secret per key,
# colony-dkim-<digest of org, domain and selector>, created by the admin API when an org adds
# a domain, read by the send function to sign each message, deleted by an org's erasure.
locals {
  dkim_secret_prefix = "projects/${data.google_project.this.number}/secrets/colony-dkim-"
}

# roles/secretmanager.admin for the admin function on colony-dkim-* only: it creates the
# secret and adds its one version.
resource "google_project_iam_member" "admin_dkim_secrets" {
  project = var.project_id
  role    = "roles/secretmanager.admin"
  member  = "serviceAccount:${google_service_account.function["admin"].email}"
  condition {
    title      = "colony-dkim-secrets-only"
    expression = "resource.name.startsWith(\"${local.dkim_secret_prefix}\")"
  }
}

# roles/secretmanager.secretAccessor for the send function on colony-dkim-* only: it signs.
resource "google_project_iam_member" "send_dkim_secrets" {
  project = var.project_id
  role    = "roles/secretmanager.secretAccessor"
  member  = "serviceAccount:${google_service_account.function["send"].email}"
  condition {
    title      = "colony-dkim-secrets-only"
    expression = "resource.name.startsWith(\"${local.dkim_secret_prefix}\")"
  }
}

# colonyNotionSecretDeleter (delete, nothing else) for the data lifecycle on colony-dkim-*
# only: an org's erasure deletes its DKIM keys (flows.tenants.erasure, phase "connections").
resource "google_project_iam_member" "lifecycle_dkim_secret_delete" {
  project = var.project_id
  role    = google_project_iam_custom_role.notion_secret_deleter.id
  member  = "serviceAccount:${google_service_account.function["data-lifecycle"].email}"
  condition {
    title      = "colony-dkim-secrets-only"
    expression = "resource.name.startsWith(\"${local.dkim_secret_prefix}\")"
  }
}

# Per-org CRM tokens (issue 36): an org that connects HubSpot has its OAuth tokens in one
# secret, colony-crm-<digest of provider and org>, written by the admin function (connect,
# refresh on its calls, delete on disconnect). Conditioned on the name prefix like Notion's.
# The functions that will read them for sync and write-back get their grants with them.
locals {
  crm_secret_prefix = "projects/${data.google_project.this.number}/secrets/colony-crm-"
}

# roles/secretmanager.admin for the admin function on colony-crm-* only: it creates the
# secret, adds versions (a refresh, a reconnect) and deletes it (disconnect).
resource "google_project_iam_member" "admin_crm_secrets" {
  project = var.project_id
  role    = "roles/secretmanager.admin"
  member  = "serviceAccount:${google_service_account.function["admin"].email}"
  condition {
    title      = "colony-crm-secrets-only"
    expression = "resource.name.startsWith(\"${local.crm_secret_prefix}\")"
  }
}

# colonyNotionSecretDeleter (delete, nothing else) for the data lifecycle on colony-crm-*
# only: an org's erasure deletes its CRM tokens too (flows.tenants.erasure, "connections").
resource "google_project_iam_member" "lifecycle_crm_secret_delete" {
  project = var.project_id
  role    = google_project_iam_custom_role.notion_secret_deleter.id
  member  = "serviceAccount:${google_service_account.function["data-lifecycle"].email}"
  condition {
    title      = "colony-crm-secrets-only"
    expression = "resource.name.startsWith(\"${local.crm_secret_prefix}\")"
  }
}

# roles/secretmanager.secretAccessor for the crm function on colony-crm-* only: the CRM
# queue's tasks write approved deal updates and log engagements (colony.flows.crm.pushes),
# and run the org's backfill, webhook events and reconciliation (colony.runtime.crm_access),
# with the org's own token.
resource "google_project_iam_member" "crm_secret_read" {
  project = var.project_id
  role    = "roles/secretmanager.secretAccessor"
  member  = "serviceAccount:${google_service_account.function["crm"].email}"
  condition {
    title      = "colony-crm-secrets-only"
    expression = "resource.name.startsWith(\"${local.crm_secret_prefix}\")"
  }
}

# roles/secretmanager.secretVersionAdder for the crm function on colony-crm-* only: a token
# near its expiry is refreshed there, and the new one is kept as the secret's next version.
resource "google_project_iam_member" "crm_secret_refresh" {
  project = var.project_id
  role    = "roles/secretmanager.secretVersionAdder"
  member  = "serviceAccount:${google_service_account.function["crm"].email}"
  condition {
    title      = "colony-crm-secrets-only"
    expression = "resource.name.startsWith(\"${local.crm_secret_prefix}\")"
  }
}
