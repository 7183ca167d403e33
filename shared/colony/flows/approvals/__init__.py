"""Approvals: people decide, and it is recorded (CONST-001; SPEC §6.5; ENT-011).

Owns deciding an item (``approval``: approve, reject, edit, writing the audit log, the guard
that no applier decides another item), what each kind allows a person to edit
(``approval_kinds``), the cards, the queue and the audit log people see (``approval_cards``,
``approval_queue``), the signed links
to the assets bucket they show (``links``) and what a card says about untrusted text behind a
draft (``flags``).

Offers the rest: ``approval`` (``decide``, ``Actor``) to the edges and to a sequence's
later steps; ``approval_queue`` to the chat; ``links`` to AGT-009; ``approval_kinds`` to the
chat's gated tools; ``flags`` to every capability that drafts. What approving a kind *does*
is not here: each capability owns the applier of the kinds it queues, and
``colony.runtime.appliers`` names them, so this package knows no capability above it.
"""
