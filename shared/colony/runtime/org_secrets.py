"""Per-org credentials in the secret store (Secret Manager deployed, files locally): one store
per process, and a cache for the readers that need the same secret for every message.

The send function reads its org's DKIM private key for each message it signs; Secret
Manager's access is a network call (and a metered one), so ``CachedSecrets`` keeps what it
read for ``TTL_SECONDS``. A key is made once per domain and never rotated in place (a new key
gets a new selector and a new secret name), so a cached value cannot go stale; a deleted
secret (the org erased) is still cached by a warm instance for at most that long, and the
erasure has deleted the domain's row first, so nothing asks for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from colony.adapters.secrets import secrets_from_settings
from colony.ports import SecretStore
from colony.settings import Settings

TTL_SECONDS = 300.0

# Keyed by what decides the store (not the Settings object's id, which Python reuses once
# an object is freed: a new Settings could get a store pointing at another endpoint).
_stores: dict[tuple[str, str, str, str], SecretStore] = {}
_stores_lock = threading.Lock()


def secret_store(settings: Settings) -> SecretStore:
    """This process's ``SecretStore`` for ``settings`` (built once)."""
    with _stores_lock:
        key = (
            settings.secret_manager_endpoint or "",
            settings.env,
            settings.gcp_project,
            str(settings.data_dir),
        )
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = secrets_from_settings(settings)
        return store


class CachedSecrets:
    """A ``SecretStore`` that remembers what it read for ``ttl`` seconds; writes and deletes
    go through and forget the name."""

    def __init__(
        self,
        store: SecretStore,
        ttl: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store, self._ttl, self._clock = store, ttl, clock
        self._values: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> str:
        with self._lock:
            cached = self._values.get(name)
            if cached is not None and self._clock() - cached[0] < self._ttl:
                return cached[1]
        value = self._store.get(name)
        with self._lock:
            self._values[name] = (self._clock(), value)
        return value

    def put(self, name: str, value: str) -> None:
        self._forget(name)
        self._store.put(name, value)

    def delete(self, name: str) -> None:
        self._forget(name)
        self._store.delete(name)

    def _forget(self, name: str) -> None:
        with self._lock:
            self._values.pop(name, None)


def cached_store(settings: Settings) -> SecretStore:
    """This process's store, read through a cache (the send function's part)."""
    return CachedSecrets(secret_store(settings))
