"""Entity (ENT), constraint (CONST) and technology (TECH) ids, SPEC §4."""

from __future__ import annotations

ENTITIES: dict[str, str] = {
    "ENT-001": "organization",
    "ENT-002": "contact / prospect",
    "ENT-003": "deal",
    "ENT-004": "sequence library",
    "ENT-005": "campaign and campaign runs",
    "ENT-006": "recording",
    "ENT-007": "knowledge core",
    "ENT-008": "chat session turns",
    "ENT-009": "daily brief",
    "ENT-010": "ICP definition",
    "ENT-011": "approval queue",
    "ENT-012": "outbox",
}

CONSTRAINTS: dict[str, str] = {
    "CONST-001": "human in the loop: nothing LLM-made leaves without an approved ENT-011 item",
    "CONST-002": "anti-ICP short-circuit: deterministic score 0, no LLM token spent",
    "CONST-003": "org isolation: no agent, query or function crosses orgs",
    "CONST-004": "grounded output: missing required data yields missing_data, never a guess",
    "CONST-005": "circuit breaker: pause on bounce/complaint rate; resume skips finished steps",
    "CONST-006": "outbound shape: sentence limits per tier, subject ≤8 words, one signal, "
    "no competitor",
}

TECHNOLOGIES: dict[str, str] = {
    "TECH-001": "PostgreSQL + pgvector (HNSW, cosine)",
    "TECH-002": "Cloud Functions (functions-framework)",
    "TECH-003": "Pub/Sub",
    "TECH-004": "Cloud Tasks",
    "TECH-005": "Cloud Storage (CMEK, V4 signed URLs)",
    "TECH-006": "Langfuse (OpenTelemetry)",
    "TECH-007": "Sentry",
    "TECH-008": "OpenAI / Gemini",
}
