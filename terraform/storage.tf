# Buckets: `colony-assets` (transcripts, recordings, deployment kits; CMEK, uniform access,
# public access prevention, versioned, lifecycle rules), the function sources, and the access
# logs of both.

resource "google_storage_bucket" "assets" {
  name                        = var.assets_bucket
  location                    = var.region
  storage_class               = "STANDARD"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false
  labels = {
    colony = "assets"
    env    = var.environment
  }

  encryption {
    default_kms_key_name = google_kms_crypto_key.assets.id
  }

  versioning {
    enabled = true
  }

  logging {
    log_bucket        = google_storage_bucket.logs.name
    log_object_prefix = "assets/"
  }

  # Recordings and kits are read in the first weeks; keep them cheaper after that.
  lifecycle_rule {
    condition {
      age = 90
    }
    action {
      type          = "SetStorageClass"
      storage_class = "NEARLINE"
    }
  }

  # Retention (issue 14): no transcript outlives the deployment's limit, whatever an org set
  # (the daily job deletes them sooner at an org's shorter period). Erasure and retention
  # delete live objects; the noncurrent versions they leave go by the rule below.
  lifecycle_rule {
    condition {
      age            = var.retention_max_days["transcripts"]
      matches_prefix = ["transcripts/"]
    }
    action {
      type = "Delete"
    }
  }

  # Issue 33: no stored page of a researched company outlives the research limit either.
  lifecycle_rule {
    condition {
      age            = var.retention_max_days["research"]
      matches_prefix = ["research/"]
    }
    action {
      type = "Delete"
    }
  }

  # An overwritten or deleted object stays recoverable for 30 days, then goes.
  lifecycle_rule {
    condition {
      days_since_noncurrent_time = 30
      with_state                 = "ARCHIVED"
    }
    action {
      type = "Delete"
    }
  }

  lifecycle_rule {
    condition {
      age = 1
    }
    action {
      type = "AbortIncompleteMultipartUpload"
    }
  }

  depends_on = [google_kms_crypto_key_iam_member.gcs_agent]
}

resource "google_storage_bucket" "sources" {
  name                        = "${var.project_id}-colony-sources"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false
  labels = {
    colony = "sources"
    env    = var.environment
  }

  encryption {
    default_kms_key_name = google_kms_crypto_key.assets.id
  }

  versioning {
    enabled = true
  }

  logging {
    log_bucket        = google_storage_bucket.logs.name
    log_object_prefix = "sources/"
  }

  # Zips are named by content hash; old ones are only needed for a rollback.
  lifecycle_rule {
    condition {
      age = 180
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_kms_crypto_key_iam_member.gcs_agent]
}

resource "google_storage_bucket" "logs" {
  # checkov:skip=CKV_GCP_62:this is the access-log bucket itself; logging it into itself would loop
  name                        = "${var.project_id}-colony-access-logs"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false
  labels = {
    colony = "logs"
    env    = var.environment
  }

  encryption {
    default_kms_key_name = google_kms_crypto_key.assets.id
  }

  versioning {
    enabled = true
  }

  lifecycle_rule {
    condition {
      age = 365
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_kms_crypto_key_iam_member.gcs_agent]
}
