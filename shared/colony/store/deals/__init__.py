"""Deals' data: deals (ENT-003) and the deployment kits AGT-009 made for them.

One repository per aggregate; every function takes a cursor from
``Database.transaction(org_id)`` (RLS scopes it) unless its docstring says otherwise."""
