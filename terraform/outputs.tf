output "function_urls" {
  description = "Function name → HTTPS URL."
  value = merge(
    { for name, fn in google_cloudfunctions2_function.function : name => fn.service_config[0].uri },
    { for name, service in google_cloud_run_v2_service.browser : name => service.uri },
  )
}

output "cloudsql_connection_name" {
  description = "COLONY_CLOUDSQL_INSTANCE for migrations and local debugging."
  value       = google_sql_database_instance.colony.connection_name
}

output "invoker_service_account" {
  description = "The identity Pub/Sub, Cloud Tasks and Scheduler call internal functions with."
  value       = google_service_account.invoker.email
}

output "build_service_account" {
  description = "The account Cloud Build builds the function images as."
  value       = google_service_account.build.email
}

output "function_service_accounts" {
  description = "Function name → its own service account."
  value       = { for name, sa in google_service_account.function : name => sa.email }
}

output "assets_bucket" {
  description = "The CMEK-encrypted assets bucket."
  value       = google_storage_bucket.assets.name
}

output "secret_ids" {
  description = "Setting name → Secret Manager secret to add a version to."
  value       = { for name, secret in google_secret_manager_secret.secret : name => secret.secret_id }
}
