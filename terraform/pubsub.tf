# Pub/Sub: every registered topic (CMEK-encrypted), and for each Pub/Sub-triggered function a
# push subscription to it with an OIDC token, exponential retry and a dead-letter topic after
# the topic's bounded delivery attempts (the registry's max_delivery_attempts).

locals {
  pubsub_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  subscribers  = { for name, fn in var.functions : name => fn if fn.trigger == "pubsub" }
}

resource "google_pubsub_topic" "topic" {
  for_each                   = var.topics
  name                       = each.key
  kms_key_name               = google_kms_crypto_key.pubsub.id
  message_retention_duration = "604800s"
  labels = {
    colony = "topic"
    env    = var.environment
  }

  depends_on = [google_kms_crypto_key_iam_member.pubsub_agent]
}

resource "google_pubsub_subscription" "push" {
  for_each = local.subscribers
  name     = "${each.key}-push"
  topic    = google_pubsub_topic.topic[each.value.topic].id

  # The function must answer within its timeout; Pub/Sub redelivers after the ack deadline.
  ack_deadline_seconds       = min(600, max(10, each.value.timeout_seconds))
  message_retention_duration = "604800s"
  retain_acked_messages      = false

  push_config {
    push_endpoint = local.function_urls[each.key]
    oidc_token {
      service_account_email = google_service_account.invoker.email
      audience              = local.function_urls[each.key]
    }
  }

  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.topic[var.dead_letter_topic].id
    max_delivery_attempts = each.value.max_delivery_attempts
  }

  expiration_policy {
    ttl = "" # never expires, however quiet the topic is
  }
}

# Dead letters are kept for inspection and replay (pull only; nothing consumes them).
resource "google_pubsub_subscription" "dead_letter" {
  name                       = "${var.dead_letter_topic}-inspect"
  topic                      = google_pubsub_topic.topic[var.dead_letter_topic].id
  ack_deadline_seconds       = 60
  message_retention_duration = "604800s"
  expiration_policy {
    ttl = ""
  }
}

# The Pub/Sub service agent moves undeliverable messages: it must publish to the dead-letter
# topic and acknowledge on the source subscription.
resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  topic  = google_pubsub_topic.topic[var.dead_letter_topic].name
  role   = "roles/pubsub.publisher"
  member = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "dead_letter_subscriber" {
  for_each     = local.subscribers
  subscription = google_pubsub_subscription.push[each.key].name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}
