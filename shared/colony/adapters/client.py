"""What every SDK-backed adapter shares: it closes the client it created, not one it was given."""

from __future__ import annotations

from typing import Any, Self


class OwnsClient:
    """Mixin: ``_client`` is the SDK client; ``_owns_client`` whether this adapter made it."""

    _client: Any
    _owns_client: bool

    def close(self) -> None:
        """Close the HTTP client this adapter created (an injected one is the caller's)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
