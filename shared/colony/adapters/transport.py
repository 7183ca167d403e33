"""Transport adapters (``colony.ports.Transport``): how functions reach each other.

- ``GcpTransport`` (``transport_gcp``): Pub/Sub topics and Cloud Tasks queues through their
  REST APIs (or local servers speaking them: ``PUBSUB_EMULATOR_HOST``,
  ``COLONY_TASKS_ENDPOINT``);
- ``LocalTransport`` (``transport_local``): in-process queues and worker threads that POST the
  same Pub/Sub push envelopes and Cloud Tasks requests to the functions' local URLs, with
  retries and dead-lettering.

``transport_from_settings`` is the one place that picks one. What both check and how they
name things (task names, topic paths, target URLs) is in ``transport_checks``, below both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from colony.settings import Settings

if TYPE_CHECKING:
    from colony.ports import Transport
    from colony.store.db import Database


def transport_from_settings(settings: Settings, *, db: Database | None = None) -> Transport:
    """The configured transport: ``gcp`` (Pub/Sub + Cloud Tasks) or ``local``.

    Locally, messages that exhaust their attempts are recorded in ``dead_letters`` when ``db``
    is given (``DbDeadLetters``), otherwise logged and kept in memory by the transport.
    """
    if settings.transport == "gcp":
        # lazy: a function loads only the transport it is configured with
        from colony.adapters.transport_gcp import GcpTransport

        return GcpTransport(
            settings.gcp_project,
            settings.gcp_region,
            function_urls=settings.function_urls,
            invoker_service_account=settings.invoker_service_account,
            pubsub_endpoint=(
                f"http://{settings.pubsub_emulator_host}" if settings.pubsub_emulator_host else None
            ),
            tasks_endpoint=settings.tasks_endpoint,
        )
    # lazy: a function loads only the transport it is configured with
    from colony.adapters.dead_letters import DbDeadLetters
    from colony.adapters.transport_local import LocalTransport

    return LocalTransport(
        settings.function_urls,
        project=settings.gcp_project,
        region=settings.gcp_region,
        dead_letter=DbDeadLetters(db) if db is not None else None,
        copies=settings.local_delivery_copies,
    )
