"""Knowledge flows' data: Notion workspaces and their sync runs, what Notion pages were synced from,
outcomes credited to the chunks behind a call (provenance). The Knowledge Core's own SQL lives in
``colony.knowledge``.

One repository per aggregate; every function takes a cursor from
``Database.transaction(org_id)`` (RLS scopes it) unless its docstring says otherwise."""
