# Functions that run in an image of our own (the registry's image "browser": research, whose
# pages that need JavaScript are rendered by Chromium, which a Cloud Function's buildpack image
# cannot carry). Each is a Cloud Run service serving the same bundle a Cloud Function would,
# from deploy/browser/Dockerfile's image (the bundle plus Debian's Chromium), which
# cloudbuild.yaml builds and pushes to the functions' repository, tagged with the hash of the
# bundle's zip and the Dockerfile, before the deploy.
#
# A service, not a job: the work arrives as Cloud Tasks HTTP requests (one per company, with
# the invoker's OIDC token, retried on a 5xx, rescheduling itself while a site's pace holds it
# back), which a service answers as the function did; a Cloud Run job takes no requests (it
# runs to completion when executed), so tasks would need a dispatcher of their own.
#
# Everything else is the function's: its own account, the same environment and secret names,
# the private path to Cloud SQL through the VPC connector, internal ingress, and concurrency,
# max instances (the connection budget, docs/deploy.md) and timeout from the registry. Its
# name is the function's, so its URL is the one local.function_urls gives (project.tf):
# COLONY_FUNCTION_URLS, hence the Cloud Tasks target and the OIDC audience, and K_SERVICE
# (the pool size, the log lines) are the same as a Cloud Function's.

locals {
  # Where Debian's chromium package puts the browser itself (/usr/bin/chromium is a wrapper
  # script that adds flags of its own); set only here: a Cloud Function has no browser, and
  # the setting is checked at start-up.
  browser_binary = "/usr/lib/chromium/chromium"
  image_registry = "${google_artifact_registry_repository.functions.location}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.functions.repository_id}"
}

resource "google_cloud_run_v2_service" "browser" {
  for_each    = local.browser_functions
  name        = each.key
  location    = var.region
  description = each.value.description
  labels      = merge(local.function_labels[each.key], { image = each.value.image })
  # Pub/Sub push, Cloud Tasks and Cloud Scheduler count as internal traffic, as for the
  # Cloud Functions (functions.tf).
  ingress = each.value.public ? "INGRESS_TRAFFIC_ALL" : "INGRESS_TRAFFIC_INTERNAL_ONLY"
  # Like a Cloud Function, it is code from the registry and holds no data: terraform replaces
  # or removes it when the registry says so (provider 6 protects services by default).
  deletion_protection = false

  template {
    service_account                  = google_service_account.function[each.key].email
    timeout                          = "${each.value.timeout_seconds}s"
    max_instance_request_concurrency = each.value.concurrency
    # Full Linux (not gen1's gVisor sandbox): Chromium's own sandbox puts each renderer in
    # namespaces of its own under a seccomp filter.
    execution_environment = "EXECUTION_ENVIRONMENT_GEN2"

    scaling {
      min_instance_count = 0
      max_instance_count = each.value.max_instances
    }

    # Private ranges (Cloud SQL's private IP) through the VPC connector; Google APIs direct.
    vpc_access {
      connector = google_vpc_access_connector.colony.id
      egress    = "PRIVATE_RANGES_ONLY"
    }

    containers {
      image = "${local.image_registry}/${each.value.image}/${each.key}:${var.function_images[each.key]}"

      resources {
        limits = {
          cpu    = each.value.cpu
          memory = each.value.memory
        }
        cpu_idle          = true # CPU while requests run, as a function's: the work is in them
        startup_cpu_boost = true
      }

      dynamic "env" {
        for_each = merge(local.function_env, {
          COLONY_SECRETS          = join(",", each.value.secrets)
          COLONY_RESEARCH_BROWSER = local.browser_binary
          # what functions-framework serves (the image's CMD reads them), as Cloud Functions
          # sets them from the entry point and trigger
          FUNCTION_TARGET         = each.value.entry_point
          FUNCTION_SIGNATURE_TYPE = each.value.trigger == "pubsub" ? "cloudevent" : "http"
          # gunicorn's threads: one per request an instance is sent at once
          THREADS = tostring(each.value.concurrency)
        })
        content {
          name  = env.key
          value = env.value
        }
      }
    }
  }

  traffic {
    type    = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
    percent = 100
  }

  depends_on = [
    google_project_service.apis,
    google_secret_manager_secret_iam_member.function,
  ]
}
