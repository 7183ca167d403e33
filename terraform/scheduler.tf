# Cloud Scheduler: one job per schedule in the registry (colony.registry.schedules), however
# many orgs there are. Each posts {"task": {"kind": "schedule", "name": ...}} to the
# data-lifecycle function with an OIDC token of the invoker (verified by the function), which
# puts one task per org the schedule serves on the schedule's queue, a page at a time
# (colony.flows.tenants.schedules). An org created through the Clerk webhook is served from its first
# run; no org id is listed here.

resource "google_cloud_scheduler_job" "schedule" {
  for_each    = var.schedules
  name        = "colony-${each.key}"
  description = each.value.purpose
  region      = var.region
  schedule    = coalesce(try(var.schedule_overrides[each.key].cron, null), each.value.cron)
  time_zone   = coalesce(try(var.schedule_overrides[each.key].time_zone, null), each.value.time_zone)

  retry_config {
    retry_count          = 3
    min_backoff_duration = "30s"
    max_backoff_duration = "600s"
  }

  http_target {
    http_method = "POST"
    uri         = local.function_urls["data-lifecycle"]
    body        = base64encode(jsonencode({ task = { kind = "schedule", name = each.key } }))
    headers = {
      "Content-Type" = "application/json"
    }
    oidc_token {
      service_account_email = google_service_account.invoker.email
      audience              = local.function_urls["data-lifecycle"]
    }
  }

  depends_on = [google_cloudfunctions2_function.function]
}
