"""The chat function's parts: the chat model, the Knowledge Core, the assets bucket (kit
links on its cards) and what approving each kind of item does (people decide on /overview)."""

from __future__ import annotations

import dataclasses

from colony.runtime.compose import model_assets
from colony.runtime.deps import Parts


def parts() -> Parts:
    # lazy: the appliers reach every capability that queues items; loaded on the first request
    from colony.runtime.appliers import applier

    return dataclasses.replace(model_assets.parts(), appliers=applier)
