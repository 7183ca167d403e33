"""Insights: what the team reads about its own work.

Owns AGT-010's daily brief (``brief``: SQL aggregates, the prior brief, ≤250 words), the
/overview workbench's pipeline chart and campaign funnels (``workbench``) and provenance
(``explain``: the model calls behind an output and what their context was built from).
Reads only: it changes nothing but the brief it writes. Knows no other capability.
"""
