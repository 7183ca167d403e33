"""Campaigns: a run over an org's prospects and the chain of agents each contact walks
(SPEC §6.2).

Owns AGT-002's run control (``campaign``: start, anti-ICP pre-filter, handoffs, resume,
checkpoints), the specialists AGT-003 ``enrichment``, AGT-004 ``qualification`` and AGT-005
``message_generator``, and what they share (``specialist``, internal).

Offers each agent module's handler to ``flows.handlers`` (the functions' dispatch table).
Uses below it: approvals (queue a draft), outbound (sequences, the send queue), tenants
(the org's ICP, sequences and settings, and its budget: a launch refused, a step held while
it is spent).
"""
