"""What the registry says about one deployed function (``Function``): its trigger, the
secrets and project roles it is granted (``Grant``), what it publishes and enqueues, and its
deployment facts, among them the image it runs in (``Image``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from colony.registry.secrets import RUNTIME_SECRETS

Trigger = Literal["pubsub", "http"]
# What a function runs in. ``buildpack``: a Cloud Function (gen2) that Cloud Build makes into
# an image from the source zip with Google's Python buildpack, which can carry no browser.
# ``browser``: a Cloud Run service from our own image, ``deploy/browser/Dockerfile`` (the same
# bundle plus Debian's Chromium), built by the pipeline before the deploy (terraform/browser.tf,
# docs/deploy.md "Functions in an image of our own").
Image = Literal["buildpack", "browser"]


@dataclass(frozen=True, slots=True)
class Grant:
    """A project-level IAM role a function's service account holds, and why it needs it."""

    role: str
    why: str


@dataclass(frozen=True, slots=True)
class Function:
    """One deployed function: a Cloud Function (gen2), or a Cloud Run service serving the same
    bundle from an image of our own (``image``). The fields after ``entry_point`` are
    deployment facts: ``terraform/registry.auto.tfvars.json`` is generated from them
    (colony.deploy)."""

    name: str  # folder under functions/ and the deployed function's name
    trigger: Trigger
    topic: str | None  # for pubsub-triggered functions
    agent: str | None  # AGT id it runs, if any
    purpose: str
    entry_point: str = "handle"
    memory: str = "512Mi"
    cpu: str = "1"
    timeout_seconds: int = 120  # Pub/Sub's ack deadline follows it (at most 600)
    concurrency: int = 8  # requests one instance serves at once (I/O-bound: LLM, database)
    # Instances at most: the sum over functions of max_instances x connections per instance
    # must fit Cloud SQL's max_connections (docs/deploy.md, "Connection budget"; a test adds
    # it up), so raise one only with that budget in view.
    max_instances: int = 2
    secrets: tuple[str, ...] = RUNTIME_SECRETS  # only these are readable by its account
    publishes: tuple[str, ...] = ()  # topics it publishes to (publisher on these topics only)
    enqueues: tuple[str, ...] = ()  # Cloud Tasks queues it adds tasks to
    assets: Literal["none", "read", "write"] = "none"  # access to the colony-assets bucket
    public: bool = False  # anyone may invoke: the function authenticates callers itself
    roles: tuple[Grant, ...] = ()  # further project roles, each with its reason
    image: Image = "buildpack"  # what it runs in (``Image`` above)
