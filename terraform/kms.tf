# Customer-managed keys: one key ring, a key for the assets bucket, one for Pub/Sub and one for
# the function images, rotated every 90 days and protected from deletion.

resource "google_kms_key_ring" "colony" {
  name     = "colony-${var.environment}"
  location = var.region

  depends_on = [google_project_service.apis]
}

resource "google_kms_crypto_key" "assets" {
  name            = "colony-assets"
  key_ring        = google_kms_key_ring.colony.id
  rotation_period = "7776000s"
  purpose         = "ENCRYPT_DECRYPT"

  lifecycle {
    prevent_destroy = true
  }
}

resource "google_kms_crypto_key" "pubsub" {
  name            = "colony-pubsub"
  key_ring        = google_kms_key_ring.colony.id
  rotation_period = "7776000s"
  purpose         = "ENCRYPT_DECRYPT"

  lifecycle {
    prevent_destroy = true
  }
}

resource "google_kms_crypto_key" "artifacts" {
  name            = "colony-artifacts"
  key_ring        = google_kms_key_ring.colony.id
  rotation_period = "7776000s"
  purpose         = "ENCRYPT_DECRYPT"

  lifecycle {
    prevent_destroy = true
  }
}

data "google_storage_project_service_account" "gcs" {}

# The Cloud Storage service agent encrypts and decrypts bucket objects with the assets key.
resource "google_kms_crypto_key_iam_member" "gcs_agent" {
  crypto_key_id = google_kms_crypto_key.assets.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = "serviceAccount:${data.google_storage_project_service_account.gcs.email_address}"
}

# The Pub/Sub service agent encrypts and decrypts messages with the Pub/Sub key.
resource "google_kms_crypto_key_iam_member" "pubsub_agent" {
  crypto_key_id = google_kms_crypto_key.pubsub.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = local.pubsub_agent
}

# The Artifact Registry service agent encrypts and decrypts the function images.
resource "google_kms_crypto_key_iam_member" "artifacts_agent" {
  crypto_key_id = google_kms_crypto_key.artifacts.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-artifactregistry.iam.gserviceaccount.com"
}
