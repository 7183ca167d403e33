# One service account per function, holding only what that function does. Project-level roles
# come from the registry (each with its reason, see `roles` in registry.auto.tfvars.json);
# everything else is granted on the single resource it concerns. No primitive roles anywhere.

resource "google_service_account" "function" {
  for_each     = var.functions
  account_id   = each.value.account_id
  display_name = "Colony function ${each.key}"
  description  = each.value.description
}

# The identity whose OIDC tokens Pub/Sub push, Cloud Tasks and Cloud Scheduler present to the
# internal functions (COLONY_INVOKER_SERVICE_ACCOUNT: the code accepts no other caller, see
# colony.runtime.edge.invoker). Its id comes from the registry (INVOKER_ACCOUNT).
resource "google_service_account" "invoker" {
  account_id   = var.invoker_account_id
  display_name = "Colony internal invoker (Pub/Sub push, Cloud Tasks, Scheduler)"
}

# The account Cloud Build builds every function's image as (build_config.service_account),
# instead of the project's default build or compute account and their broad project roles.
# It holds three grants, below, and nothing else: it never runs the functions, nor reads data
# or secrets.
resource "google_service_account" "build" {
  account_id   = "colony-build"
  display_name = "Colony function builds (Cloud Build)"
  description  = "Builds the function images from the source zips; runs nothing"
}

# roles/logging.logWriter: the build writes its logs to Cloud Logging (a project-level role;
# logs have no narrower resource to grant it on).
resource "google_project_iam_member" "build_logs" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = "serviceAccount:${google_service_account.build.email}"
}

# roles/storage.objectViewer on the function sources only: our zips, and the copy Cloud
# Functions stages in its gcf-v2-sources-<project number>-<region> bucket. That bucket appears
# with the first deploy, so the grant is project-level with a condition on the bucket names
# rather than on the bucket itself.
resource "google_project_iam_member" "build_sources" {
  project = var.project_id
  role    = "roles/storage.objectViewer"
  member  = "serviceAccount:${google_service_account.build.email}"

  condition {
    title       = "function-sources-only"
    description = "Read the function source zips, nothing else in Cloud Storage"
    expression  = "resource.name == \"projects/_/buckets/${google_storage_bucket.sources.name}\" || resource.name.startsWith(\"projects/_/buckets/${google_storage_bucket.sources.name}/\") || resource.name.startsWith(\"projects/_/buckets/gcf-v2-sources-${data.google_project.this.number}-${var.region}\")"
  }
}

# roles/artifactregistry.writer on the functions' image repository only: the build pushes the
# image (and its layer cache) there.
resource "google_artifact_registry_repository_iam_member" "build_images" {
  location   = google_artifact_registry_repository.functions.location
  repository = google_artifact_registry_repository.functions.name
  role       = "roles/artifactregistry.writer"
  member     = "serviceAccount:${google_service_account.build.email}"
}

locals {
  project_grants = merge([
    for name, fn in var.functions : {
      for role, why in fn.roles : "${name}/${role}" => { function = name, role = role, why = why }
    }
  ]...)
  publish_grants = merge([
    for name, fn in var.functions : { for topic in fn.publishes : "${name}/${topic}" => { function = name, topic = topic } }
  ]...)
  enqueue_grants = merge([
    for name, fn in var.functions : { for queue in fn.enqueues : "${name}/${queue}" => { function = name, queue = queue } }
  ]...)
  asset_users = { for name, fn in var.functions : name => fn if fn.assets != "none" }
  enqueuers   = toset(distinct([for grant in values(local.enqueue_grants) : grant.function]))
}

# Project roles each function declares: roles/logging.logWriter (its logs) for every function,
# plus any declared in the function's entry (colony/registry/*_functions.py). No Cloud SQL role:
# functions reach the instance's private IP with a password, not through the connector.
resource "google_project_iam_member" "function" {
  for_each = local.project_grants
  project  = var.project_id
  role     = each.value.role
  member   = "serviceAccount:${google_service_account.function[each.value.function].email}"
}

# roles/pubsub.publisher on each topic the function publishes to, and on no other topic.
resource "google_pubsub_topic_iam_member" "publisher" {
  for_each = local.publish_grants
  topic    = google_pubsub_topic.topic[each.value.topic].name
  role     = "roles/pubsub.publisher"
  member   = "serviceAccount:${google_service_account.function[each.value.function].email}"
}

# roles/cloudtasks.enqueuer on each queue the function adds tasks to, and on no other queue.
resource "google_cloud_tasks_queue_iam_member" "enqueuer" {
  for_each = local.enqueue_grants
  name     = google_cloud_tasks_queue.queue[each.value.queue].name
  location = var.region
  role     = "roles/cloudtasks.enqueuer"
  member   = "serviceAccount:${google_service_account.function[each.value.function].email}"
}

# roles/iam.serviceAccountUser on the invoker account only: a task carries an OIDC token of
# the invoker, and creating such a task requires acting as it.
resource "google_service_account_iam_member" "enqueuer_acts_as_invoker" {
  for_each           = local.enqueuers
  service_account_id = google_service_account.invoker.name
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${google_service_account.function[each.key].email}"
}

# roles/storage.objectViewer (read) or roles/storage.objectUser (read and write) on the assets
# bucket only, for functions that declare `assets`.
resource "google_storage_bucket_iam_member" "assets" {
  for_each = local.asset_users
  bucket   = google_storage_bucket.assets.name
  role     = each.value.assets == "write" ? "roles/storage.objectUser" : "roles/storage.objectViewer"
  member   = "serviceAccount:${google_service_account.function[each.key].email}"
}

# roles/iam.serviceAccountTokenCreator on its own account only: V4 signed URLs to assets are
# signed through the IAM signBlob API (a function has no key file).
resource "google_service_account_iam_member" "signs_urls" {
  for_each           = local.asset_users
  service_account_id = google_service_account.function[each.key].name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = "serviceAccount:${google_service_account.function[each.key].email}"
}

# The Cloud Run service behind each function: a Cloud Function's own, or the service itself
# for a function in an image of our own (browser.tf).
locals {
  function_services = merge(
    { for name, fn in google_cloudfunctions2_function.function : name => fn.service_config[0].service },
    { for name, service in google_cloud_run_v2_service.browser : name => service.name },
  )
}

# roles/run.invoker for the invoker account on internal functions (Pub/Sub push, Tasks and
# Scheduler targets). Nothing else may call them.
resource "google_cloud_run_v2_service_iam_member" "internal" {
  for_each = { for name, fn in var.functions : name => fn if !fn.public }
  name     = local.function_services[each.key]
  location = var.region
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.invoker.email}"
}

# Public functions are webhooks and user-facing HTTP: Drive, Notion, the ESP and browsers
# cannot present Google identities, so the function authenticates every request itself
# (Clerk JWT or signed approval link, Notion signature, Drive channel token, ESP HMAC) and
# answers 401 JSON otherwise (colony.runtime.auth, tests/test_functions_e2e.py).
resource "google_cloud_run_v2_service_iam_member" "public" {
  # checkov:skip=CKV_GCP_102:webhooks and browser calls carry no Google identity; each public function verifies its provider's signature or a Clerk JWT before doing anything
  for_each = { for name, fn in var.functions : name => fn if fn.public }
  name     = local.function_services[each.key]
  location = var.region
  role     = "roles/run.invoker"
  member   = "allUsers"
}
