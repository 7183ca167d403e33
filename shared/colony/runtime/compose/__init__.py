"""Each function's composition: which parts, beyond the database and the transport, its
``Deps`` builds on first use (``colony.runtime.deps.Parts``).

A function's ``main.py`` passes one of these ``parts`` to ``deps()``. The builders are imported
inside ``parts`` (on the first request, so the cold start stays small) and nowhere else, so
the static import graph of a function, from which its bundle's requirements are computed,
reaches a model SDK, the embedders or the GCS client only if its composition names them.
Which composition a function uses must agree with its registry entry (provider and tracing
secrets, assets access): a test holds them together.
"""
