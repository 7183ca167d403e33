"""Outbound's data: the outbox (ENT-012), suppressions, replies, sequence enrollments, inbound mail
held until it can be read.

One repository per aggregate; every function takes a cursor from
``Database.transaction(org_id)`` (RLS scopes it) unless its docstring says otherwise."""
