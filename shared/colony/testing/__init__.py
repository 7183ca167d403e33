"""Fakes and local stand-ins shared by tests and local runs."""
