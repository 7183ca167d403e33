"""Conformance suites: one per port, run against its fake(s) and its real adapter(s)."""
