"""Research's data (issue 33): the pace kept towards each site and each origin's robots.txt
(``sites``), shared by every org and every instance.

Not org-scoped: every function takes the cursor of a transaction opened with no org
(``Database.transaction(None)``).
"""
