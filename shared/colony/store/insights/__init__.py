"""What the team reads: daily briefs (ENT-009), campaign funnels, the pipeline by stage.

One repository per aggregate; every function takes a cursor from
``Database.transaction(org_id)`` (RLS scopes it) unless its docstring says otherwise."""
