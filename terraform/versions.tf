# Providers pinned to exact versions: a plan means the same thing on every machine.
terraform {
  required_version = ">= 1.6.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "= 6.8.0"
    }
    random = {
      source  = "hashicorp/random"
      version = "= 3.6.3"
    }
  }

  # State lives in a bucket created once by hand (docs/deploy.md, step 3):
  #   terraform init -backend-config="bucket=<project>-colony-tfstate"
  backend "gcs" {
    prefix = "colony"
  }
}

provider "google" {
  project = var.project_id
  region  = var.region
}
