"""The chaos soak (issue 38 item 3; ``bench/soak.py`` is its command line).

Several orgs run campaigns through every function while things break underneath, and at the
end what happened is checked against what should have: nothing lost, nothing done twice.

- ``world``: the orgs (the demo org's data under other ids), their contacts and people;
- ``stack``: the local stack under test: every function served and supervised, the
  Pub/Sub + Cloud Tasks stand-in (``colony.testing.gcp_queues``), the model stand-in that
  fails (``colony.testing.chaos_model``), the SMTP server that defers;
- ``injector``: the fault injector on a fixed seed (SIGKILLs, a PostgreSQL restart) and the
  sampler (database connections, each function's memory);
- ``person``: the people's acts: approvals through the approval function with a real token,
  replies and one-click unsubscribes as recipients make them;
- ``checks``: each check, computed from what the stand-ins and the database observed;
- ``run``: all of it, returning the report ``bench/soak.py`` prints.

Local and test wiring only: nothing here is deployed, and the fault hooks live in the
stand-ins (``colony.testing``), never in a production path.
"""
