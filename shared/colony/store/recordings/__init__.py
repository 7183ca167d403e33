"""Recordings' data: ENT-006 recordings and the Drive watch channels.

One repository per aggregate; every function takes a cursor from
``Database.transaction(org_id)`` (RLS scopes it) unless its docstring says otherwise."""
