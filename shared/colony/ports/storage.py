"""Where things outside the database are kept: objects in the assets bucket
(``BlobStore``) and per-org credentials (``SecretStore``)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class BlobStore(Protocol):
    """Objects in the assets bucket (GCS): transcripts, deployment kits. Agents are handed
    V4 signed URLs, never raw bytes (seed §3.4). Adapters raise ``NotFound`` for a missing
    object and ``ProviderUnavailable`` when the store cannot be reached."""

    bucket: str

    def put(self, name: str, data: bytes, content_type: str) -> str:
        """Store ``data`` under ``name``; returns ``gs://<bucket>/<name>``."""
        ...

    def get(self, name: str) -> bytes: ...

    def signed_url(self, name: str, ttl_seconds: int) -> str:
        """A V4 signed GET URL for ``name`` that expires after ``ttl_seconds``."""
        ...

    def signed_upload(
        self, name: str, ttl_seconds: int, max_bytes: int
    ) -> tuple[str, dict[str, str]]:
        """A V4 signed PUT URL for ``name`` and the headers the upload must carry (they cap
        its size at ``max_bytes``)."""
        ...

    def size(self, name: str) -> int:
        """The size in bytes of ``name`` (``NotFound`` if missing), without reading it."""
        ...

    def names(self, prefix: str) -> list[str]:
        """Every object name starting with ``prefix`` (all pages), sorted. ``prefix`` must
        end with ``/`` (a folder: erasure and retention never match by a name's stem), else
        ``ValidationFailed``."""
        ...

    def delete(self, name: str) -> bool:
        """Delete ``name``; False if it did not exist (deleting twice is not an error, so an
        erasure that is re-run after a crash finishes)."""
        ...


@runtime_checkable
class SecretStore(Protocol):
    """Per-org credentials we are handed at run time (an org's Notion token): Secret Manager
    in production. ``name`` is a secret id (``[a-zA-Z0-9_-]``, at most 255); a value is
    never logged, and only its name is stored anywhere else."""

    def put(self, name: str, value: str) -> None:
        """Create the secret if needed and make ``value`` its latest version."""
        ...

    def get(self, name: str) -> str:
        """The latest version; ``NotFound`` if there is none."""
        ...

    def delete(self, name: str) -> None:
        """Remove the secret and every version (absent: nothing to do)."""
        ...
