"""What outbound raises on /overview's Alerts (``GET /alerts`` on the chat function): each
sending domain whose DNS broke (``sending_domains``), each campaign, mailbox or domain the
circuit breaker paused and what resumes it (``breaker``), and campaign mail waiting for the
org's postal address (``postal_address``)."""

from __future__ import annotations

from typing import Any

from colony.flows.deps import FlowDeps
from colony.flows.outbound import breaker, postal_address, sending_domains


def alerts(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The org's outbound alerts, the DNS ones first."""
    found = sending_domains.alerts(deps, org_id)["alerts"] + breaker.alerts(deps, org_id)
    return {"alerts": found + postal_address.alerts(deps, org_id)}
