# Cloud Scheduler: the daily brief (AGT-010) and the daily retention run, one job per org each,
# POSTing to their function with an OIDC token of the invoker (verified by the function).

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

# Retention (issue 14): each org's data classes expired past its periods, daily, by the
# data-lifecycle function ({"task": {"kind": "retention", "org_id": ...}}).
resource "google_cloud_scheduler_job" "retention" {
  for_each    = toset(var.retention_org_ids)
  name        = "colony-retention-${replace(lower(each.key), "/[^a-z0-9-]/", "-")}"
  description = "Daily retention for ${each.key}"
  region      = var.region
  schedule    = var.retention_schedule
  time_zone   = "Etc/UTC"

  retry_config {
    retry_count          = 3
    min_backoff_duration = "60s"
    max_backoff_duration = "900s"
  }

  http_target {
    http_method = "POST"
    uri         = local.function_urls["data-lifecycle"]
    body        = base64encode(jsonencode({ task = { kind = "retention", org_id = each.key } }))
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

# Notion reconciliation (issue 17 item 4): each org's connected workspaces compared with what
# was synced (last_edited_time), daily, by the reembed function
# ({"kind": "notion.reconcile", "org_id": ...}); missed webhooks are caught here.
resource "google_cloud_scheduler_job" "notion_reconcile" {
  for_each    = toset(var.notion_org_ids)
  name        = "colony-notion-reconcile-${replace(lower(each.key), "/[^a-z0-9-]/", "-")}"
  description = "Daily Notion reconciliation for ${each.key}"
  region      = var.region
  schedule    = var.notion_reconcile_schedule
  time_zone   = "Etc/UTC"

  retry_config {
    retry_count          = 3
    min_backoff_duration = "60s"
    max_backoff_duration = "900s"
  }

  http_target {
    http_method = "POST"
    uri         = local.function_urls["reembed"]
    body        = base64encode(jsonencode({ kind = "notion.reconcile", org_id = each.key }))
    headers = {
      "Content-Type" = "application/json"
    }
    oidc_token {
      service_account_email = google_service_account.invoker.email
      audience              = local.function_urls["reembed"]
    }
  }

  depends_on = [google_cloudfunctions2_function.function]
}

# Drive channel renewal (issue 17 item 5): a watch channel lives at most a day, so every few
# hours each org's channels expiring within 12 hours get a successor before they are stopped,
# by the data-lifecycle function ({"task": {"kind": "drive.renew", "org_id": ...}}).
resource "google_cloud_scheduler_job" "drive_renew" {
  for_each    = toset(var.drive_org_ids)
  name        = "colony-drive-renew-${replace(lower(each.key), "/[^a-z0-9-]/", "-")}"
  description = "Drive watch channel renewal for ${each.key}"
  region      = var.region
  schedule    = var.drive_renew_schedule
  time_zone   = "Etc/UTC"

  retry_config {
    retry_count          = 3
    min_backoff_duration = "60s"
    max_backoff_duration = "900s"
  }

  http_target {
    http_method = "POST"
    uri         = local.function_urls["data-lifecycle"]
    body        = base64encode(jsonencode({ task = { kind = "drive.renew", org_id = each.key } }))
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
