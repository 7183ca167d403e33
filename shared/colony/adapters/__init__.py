"""Adapters: the only modules that import vendor SDKs (lazily, to keep cold starts small)."""
