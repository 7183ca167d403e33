# Cloud Scheduler: the daily brief (AGT-010), one job per org, POSTing {"org_id": ...} to the
# daily-brief function with an OIDC token of the invoker (verified by the function).

resource "google_cloud_scheduler_job" "daily_brief" {
  for_each    = toset(var.brief_org_ids)
  name        = "colony-daily-brief-${replace(lower(each.key), "/[^a-z0-9-]/", "-")}"
  description = "Daily GTM brief for ${each.key}"
  region      = var.region
  schedule    = var.daily_brief_schedule
  time_zone   = var.daily_brief_time_zone

  retry_config {
    retry_count          = 3
    min_backoff_duration = "30s"
    max_backoff_duration = "600s"
  }

  http_target {
    http_method = "POST"
    uri         = local.function_urls["daily-brief"]
    body        = base64encode(jsonencode({ org_id = each.key }))
    headers = {
      "Content-Type" = "application/json"
    }
    oidc_token {
      service_account_email = google_service_account.invoker.email
      audience              = local.function_urls["daily-brief"]
    }
  }

  depends_on = [google_cloudfunctions2_function.function]
}
