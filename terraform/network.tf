# The private path from functions to Cloud SQL: a VPC whose private services access range
# holds the instance's private IP, and a Serverless VPC Access connector that functions send
# private-range traffic through (functions.tf, egress PRIVATE_RANGES_ONLY: calls to Google
# APIs still go direct). Functions then connect with pg8000 over TLS verified against the
# instance's CA, so their bundles carry no Cloud SQL connector (issue 12: bundle size).

resource "google_compute_network" "colony" {
  name                    = "colony-${var.environment}"
  auto_create_subnetworks = false
  depends_on              = [google_project_service.apis]
}

# Nothing reaches the VPC from outside: explicit (the implied rule denies ingress too, but an
# explicit, logged rule shows up in audits). Serverless VPC Access adds its own narrow allow
# rules for the connector at priority 100, which win over this one.
resource "google_compute_firewall" "deny_ingress" {
  name      = "colony-${var.environment}-deny-ingress"
  network   = google_compute_network.colony.name
  direction = "INGRESS"
  priority  = 65534
  deny {
    protocol = "all"
  }
  source_ranges = ["0.0.0.0/0"]
  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
}

# The range Google's service producer network (Cloud SQL) takes its private IPs from.
resource "google_compute_global_address" "sql_private" {
  name          = "colony-${var.environment}-sql"
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  prefix_length = 20
  network       = google_compute_network.colony.id
}

resource "google_service_networking_connection" "sql" {
  network                 = google_compute_network.colony.id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.sql_private.name]
}

# Two e2-micro instances carry a few hundred Mbps, far above what the pools' SQL traffic
# needs; it scales to three under load.
resource "google_vpc_access_connector" "colony" {
  name          = "colony-${var.environment}"
  region        = var.region
  network       = google_compute_network.colony.name
  ip_cidr_range = var.vpc_connector_cidr
  machine_type  = "e2-micro"
  min_instances = 2
  max_instances = 3
}
