"""The offline ChatModel's dispatch: output name → the module that answers it, loaded on use.

Each family of contracts lives in its own module (``prospects``, ``outbound``, ``calls``,
``content``, ``brief``, ``chat``, ``records``); ``ANSWERS`` names them as ``"module:function"``
so a request imports only the module it needs (a qualification call never compiles the
call-signal patterns), and importing this package stays as cheap as ``colony.ports``.
An answer function takes ``request.context`` and returns a dict that must validate against
``OUTPUT_CONTRACTS[output_name]``; a responder (the chat turn, which may answer with tool
calls) takes the whole request and returns the ``ModelResponse`` itself.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from colony.contracts.outputs import OUTPUT_CONTRACTS
from colony.errors import ProviderError, ValidationFailed
from colony.ports import ModelRequest, ModelResponse, Usage

MODEL_NAME = "offline-deterministic-v1"

Answer = Callable[[Mapping[str, Any]], dict[str, Any]]
Responder = Callable[[ModelRequest], ModelResponse]

ANSWERS: dict[str, str] = {
    "qualification_score": "colony.adapters.offline.prospects:qualification_score",
    "prospect_enrichment": "colony.adapters.offline.prospects:prospect_enrichment",
    "outbound_message": "colony.adapters.offline.outbound:outbound_message",
    "call_signals": "colony.adapters.offline.calls:call_signals",
    "call_summary": "colony.adapters.offline.calls:call_summary",
    "follow_up_draft": "colony.adapters.offline.calls:follow_up_draft",
    "content_piece": "colony.adapters.offline.content:content_piece",
    "deployment_kit": "colony.adapters.offline.content:deployment_kit",
    "daily_brief": "colony.adapters.offline.brief:daily_brief",
    "conversation_summary": "colony.adapters.offline.chat:conversation_summary",
    "missing_data": "colony.adapters.offline.records:missing_data",
    "kc_update_candidate": "colony.adapters.offline.records:kc_update_candidate",
}
RESPONDERS: dict[str, str] = {
    "orchestrator_reply": "colony.adapters.offline.chat:orchestrator_response",  # AGT-001
}


def _load(target: str) -> Any:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def estimate_tokens(text: str) -> int:
    """An estimate, not a tokenizer count: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


class OfflineChatModel:
    """Deterministic ``ChatModel`` for local runs and tests; see the package docstring."""

    model = MODEL_NAME

    def request(self, request: ModelRequest) -> ModelResponse:
        responder = RESPONDERS.get(request.output_name)
        if responder is not None:
            respond: Responder = _load(responder)
            return respond(request)
        target = ANSWERS.get(request.output_name)
        contract = OUTPUT_CONTRACTS.get(request.output_name)
        if target is None or contract is None:
            raise ProviderError(
                f"the offline model has no answer for output {request.output_name!r}"
            )
        if not isinstance(request.context, Mapping):
            raise ValidationFailed("request.context must be an object")
        answer_for: Answer = _load(target)
        answer = answer_for(request.context)
        try:
            validated = contract.model_validate(answer)
        except ValidationError as exc:  # our own bug: say so loudly
            raise ProviderError(
                f"offline answer for {request.output_name!r} broke its contract: {exc}"
            ) from exc
        text = validated.model_dump_json()
        prompt = "".join(message.content for message in request.messages)
        return ModelResponse(
            text=text,
            usage=Usage(tokens_in=estimate_tokens(prompt), tokens_out=estimate_tokens(text)),
            model=MODEL_NAME,
        )
