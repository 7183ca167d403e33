"""The eval suite (issue 37): each agent's cases, what runs them and what grades them.

Owns the sets (``sets/``, written by ``generate`` and by hand), driving a case through the
agent's real model path as its flow does (``drive``), the deterministic checks (``checks``,
``numbers``), the rubric judge and its agreement with labelled answers (``judge``), a run and
its report, page, comparison and gate (``runner``, ``report``, ``page``, ``compare``,
``session``) and recording a run in Langfuse (``langfuse_runs``). Offers the rest
``session.execute`` (``colony eval``, ``local.cli_eval``) and ``cases.load``. Local-only:
nothing deployed imports it (docs/quality.md "Eval sets").
"""
