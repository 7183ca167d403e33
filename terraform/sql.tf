# Cloud SQL for PostgreSQL 16 with pgvector. Two ways in, both TLS-only (ssl_mode
# ENCRYPTED_ONLY): functions connect to the private IP (network.tf) and verify the server
# against its instance CA; tools (the migration step in Cloud Build) and people use the Cloud
# SQL connector over the public IP, which has no authorized networks, so nothing but an
# IAM-authorised connector client reaches it. IAM database authentication on, daily backups
# with point-in-time recovery, and the logging flags CIS asks for.

resource "google_sql_database_instance" "colony" {
  # checkov:skip=CKV_GCP_79:the design fixes PostgreSQL 16 (pgvector 1536-d Knowledge Core); a major upgrade is a planned migration, not a default
  # checkov:skip=CKV_GCP_6:ssl_mode ENCRYPTED_ONLY refuses every connection without TLS; functions verify the server against the instance CA and log in with a Secret Manager password, so client certificates (the only mode this check accepts) would add a per-function private key to distribute
  # checkov:skip=CKV_GCP_60:the public IP has no authorized networks, so only IAM-authorised Cloud SQL connector clients (the migration step, people) reach it; functions use the private IP
  name                = "colony-${var.environment}"
  database_version    = "POSTGRES_16"
  region              = var.region
  deletion_protection = true

  settings {
    tier              = var.db_tier
    edition           = "ENTERPRISE"
    availability_type = "REGIONAL"
    disk_autoresize   = true
    disk_type         = "PD_SSD"
    user_labels = {
      colony = "database"
      env    = var.environment
    }

    ip_configuration {
      ipv4_enabled    = true
      private_network = google_compute_network.colony.id
      ssl_mode        = "ENCRYPTED_ONLY" # TLS always; the connector adds client certificates
    }
    # Functions connect directly (private IP, verify-ca); requiring the connector would put
    # it, aiohttp and a gRPC admin client back in every bundle (issue 12).
    connector_enforcement = "NOT_REQUIRED"

    backup_configuration {
      enabled                        = true
      point_in_time_recovery_enabled = true
      start_time                     = "03:00"
      transaction_log_retention_days = 7
      backup_retention_settings {
        retained_backups = 14
      }
    }

    maintenance_window {
      day  = 7
      hour = 4
    }

    insights_config {
      query_insights_enabled  = true
      record_application_tags = false
      record_client_address   = false
    }

    database_flags {
      name  = "cloudsql.iam_authentication"
      value = "on"
    }
    # The connection budget: every function's max_instances x its pool must fit in this
    # (docs/deploy.md, "Connection budget"; tests/test_deploy_terraform.py adds it up).
    database_flags {
      name  = "max_connections"
      value = var.db_max_connections
    }
    database_flags {
      name  = "cloudsql.enable_pgaudit"
      value = "on"
    }
    database_flags {
      name  = "log_checkpoints"
      value = "on"
    }
    database_flags {
      name  = "log_connections"
      value = "on"
    }
    database_flags {
      name  = "log_disconnections"
      value = "on"
    }
    database_flags {
      name  = "log_lock_waits"
      value = "on"
    }
    database_flags {
      name  = "log_min_messages"
      value = "error"
    }
    database_flags {
      name  = "log_min_error_statement"
      value = "error"
    }
    database_flags {
      name  = "log_temp_files"
      value = "0"
    }
    database_flags {
      name  = "log_min_duration_statement"
      value = "-1"
    }
    database_flags {
      name  = "log_statement"
      value = "ddl"
    }
    database_flags {
      name  = "log_duration"
      value = "on"
    }
    database_flags {
      name  = "log_hostname"
      value = "on"
    }
  }

  depends_on = [google_project_service.apis, google_service_networking_connection.sql]
}

resource "google_sql_database" "colony" {
  name     = var.db_name
  instance = google_sql_database_instance.colony.name
}

# The owner runs migrations (Cloud Build); the application role is what every function uses,
# and row-level security scopes it to one org per transaction. Both passwords live only in
# Secret Manager (secrets.tf).
resource "google_sql_user" "owner" {
  name     = "colony_owner"
  instance = google_sql_database_instance.colony.name
  type     = "BUILT_IN"
  password = random_password.db["COLONY_DB_OWNER_PASSWORD"].result
}

resource "google_sql_user" "app" {
  name     = "colony_app"
  instance = google_sql_database_instance.colony.name
  type     = "BUILT_IN"
  password = random_password.db["COLONY_DB_PASSWORD"].result
}

# People log in with their Google identity (IAM database authentication), never a password.
resource "google_sql_user" "iam" {
  for_each = toset(var.db_iam_users)
  name     = each.key
  instance = google_sql_database_instance.colony.name
  type     = "CLOUD_IAM_USER"
}

# The deployer connects to run migrations.
resource "google_project_iam_member" "deployer_sql_client" {
  project = var.project_id
  role    = "roles/cloudsql.client"
  member  = "serviceAccount:${var.deployer_service_account}"
}
