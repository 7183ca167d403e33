"""A model agent that also decides approval items (the approval function; AGT-005, which
approves a sequence's later steps in the name of the person who approved step 1): the chat
model, the Knowledge Core and what approving each kind of item does."""

from __future__ import annotations

import dataclasses

from colony.runtime.compose import model
from colony.runtime.deps import Parts


def parts() -> Parts:
    # lazy: the appliers reach every capability that queues items; loaded on the first request
    from colony.runtime.appliers import applier

    return dataclasses.replace(model.parts(), appliers=applier)
