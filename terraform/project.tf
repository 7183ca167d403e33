# The project itself: its number (deterministic function URLs) and the APIs Colony uses.

data "google_project" "this" {
  project_id = var.project_id
}

locals {
  apis = toset([
    "cloudbuild.googleapis.com",
    "cloudfunctions.googleapis.com",
    "cloudkms.googleapis.com",
    "cloudscheduler.googleapis.com",
    "cloudtasks.googleapis.com",
    "compute.googleapis.com",
    "iam.googleapis.com",
    "iamcredentials.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "artifactregistry.googleapis.com",
    "secretmanager.googleapis.com",
    "servicenetworking.googleapis.com",
    "sqladmin.googleapis.com",
    "storage.googleapis.com",
    "vpcaccess.googleapis.com",
  ])

  # A gen2 function is a Cloud Run service of the same name; its URL is known before it
  # exists, so functions can name each other (COLONY_FUNCTION_URLS) without a dependency cycle.
  function_urls = {
    for name in keys(var.functions) :
    name => "https://${name}-${data.google_project.this.number}.${var.region}.run.app"
  }
}

resource "google_project_service" "apis" {
  for_each           = local.apis
  project            = var.project_id
  service            = each.key
  disable_on_destroy = false
}
