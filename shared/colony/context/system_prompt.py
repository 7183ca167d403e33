"""The system message of a call (seed §5.1): the agent's role and task, the org's product,
ICP and anti-ICP rules, the agent's behavioural constraints and the data policy.

Only our instructions and what the org's admins set go here; everything a call reads from
elsewhere is data in the other messages (``colony.context.untrusted``), fenced by the same
per-call ``boundary`` the data policy names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.context import templates, untrusted
from colony.context.serialize import dumps
from colony.contracts import OrgContext
from colony.registry.agents import AGENTS

_OPS = {
    "eq": "=",
    "neq": "≠",
    "lt": "<",
    "lte": "≤",
    "gt": ">",
    "gte": "≥",
    "in": "in",
    "not_in": "not in",
    "contains": "contains",
}


def system_message(org: OrgContext, org_id: str, agent_id: str, boundary: str) -> str:
    """The system message agent ``agent_id`` is sent for ``org``."""
    a = AGENTS[agent_id]
    icp = org.icp
    rules = icp.anti_icp_rules if icp else []
    anti = "\n".join(_rule_text(r) for r in rules)
    constraints = "\n".join(templates.load(f"constraints/{c}").strip() for c in a.constraints)
    return templates.render(
        "system",
        {
            "agent_name": a.name,
            "primary_task": a.primary_task,
            "product_description": org.product_description,
            "icp_definition": icp.description if icp else "(no ICP definition on record)",
            "anti_icp_list": anti or "- (none on record)",
            "org_id": org_id,
            "agent_constraints": constraints,
            "data_policy": untrusted.policy(boundary),
        },
    )


def _rule_text(rule: Mapping[str, Any]) -> str:
    """An anti-ICP rule as its condition: denser and more exact than its prose reason."""
    field, op = rule.get("field", "?"), rule.get("op", "?")
    if op == "missing":
        condition = f"{field} is missing"
    else:
        condition = f"{field} {_OPS.get(op, op)} {dumps(rule.get('value'))}"
    return f"- {rule.get('id', '?')}: {condition}"
