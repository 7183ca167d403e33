"""Prospect and deal imports from real files: reading (encodings, dialects, JSON lines),
rows (header aliases, validation) and the error report (CSV, formula-safe). Pure: no I/O;
``colony.flows.tenants.imports`` drives them."""
