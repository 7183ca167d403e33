"""Tenants' data: orgs, their admins' settings, imports, erasure jobs and their reports, retention
periods, the schedules' fan-out.

One repository per aggregate; every function takes a cursor from
``Database.transaction(org_id)`` (RLS scopes it) unless its docstring says otherwise."""
