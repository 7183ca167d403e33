"""Research's data (issue 33).

- ``sites``: the pace kept towards each site and each origin's robots.txt, shared by every
  org and every instance: not org-scoped, every function takes the cursor of a transaction
  opened with no org (``Database.transaction(None)``);
- ``jobs``: each org's research of a company, resumable (org-scoped);
- ``sources``: what it fetched, with provenance, and the passages AGT-003 is given
  (org-scoped).
"""
