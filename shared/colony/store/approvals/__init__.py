"""Approvals' data: the approval queue (ENT-011) and the append-only audit log.

One repository per aggregate; every function takes a cursor from
``Database.transaction(org_id)`` (RLS scopes it) unless its docstring says otherwise."""
