"""Campaigns' data: campaigns, their runs and contacts (ENT-005), contacts' signals with provenance.

One repository per aggregate; every function takes a cursor from
``Database.transaction(org_id)`` (RLS scopes it) unless its docstring says otherwise."""
