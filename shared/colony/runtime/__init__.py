"""What every deployed function stands on: the HTTP and Pub/Sub edge, auth, and one
composition root per process (``colony.runtime.edge``, ``colony.runtime.auth``)."""
