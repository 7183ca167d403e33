# Secret Manager: one secret per credential the settings read (colony.settings.SECRETS), each
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
