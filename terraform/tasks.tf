# Cloud Tasks queues from the registry, with their dispatch rate and bounded retries. Tasks are
# created by the code (colony.adapters.transport_gcp) with the invoker's OIDC token.

resource "google_cloud_tasks_queue" "queue" {
  for_each = var.queues
  name     = each.key
  location = var.region

  rate_limits {
    max_dispatches_per_second = each.value.max_dispatches_per_second
    max_concurrent_dispatches = 10
  }

  retry_config {
    max_attempts       = each.value.max_attempts
    max_retry_duration = "3600s"
    min_backoff        = "5s"
    max_backoff        = "300s"
    max_doublings      = 4
  }

  stackdriver_logging_config {
    sampling_ratio = 1.0
  }

  depends_on = [google_project_service.apis]
}
