"""Local-only machinery (embedded database, demo data, CLI helpers). Never deployed."""
