"""End-to-end flows: one module per flow, called by the thin function adapters."""
