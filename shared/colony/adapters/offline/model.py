"""The offline ChatModel's dispatch: output name → the module that answers it, loaded on use.

Each family of contracts lives in its own module (``prospects``, ``outbound``, ``calls``,
``content``, ``brief``, ``chat``, ``records``); ``FAMILIES`` says which answers an output, and
``_answer`` imports only that module (explicitly, so the import contract sees it): a request
imports only the module it needs (a qualification call never compiles the
call-signal patterns), and importing this package stays as cheap as ``colony.ports``.
An answer function takes the parsed prompt (``prompt.parse(request.messages)``: the data
blocks, the ICP grounding and the task text, read as a model reads them) and returns a dict
that must validate against ``OUTPUT_CONTRACTS[output_name]``. A responder (the chat turn,
which may answer with tool calls) takes the whole request and returns the ``ModelResponse``
itself.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from colony.adapters.offline.prompt import PromptLacks, parse
from colony.adapters.offline.usage import MODEL_NAME, estimate_tokens
from colony.adapters.text_stream import replay
from colony.contracts.outputs import OUTPUT_CONTRACTS
from colony.contracts.outputs.common import MissingData
from colony.errors import ProviderError
from colony.ports import ModelRequest, ModelResponse, TextSink, Usage

Answer = Callable[[Any], dict[str, Any]]

# Output name → the module that answers it (each answer function is named as its output).
FAMILIES: dict[str, str] = {
    "qualification_score": "prospects",
    "prospect_enrichment": "prospects",
    "outbound_message": "outbound",
    "call_signals": "calls",
    "call_summary": "calls",
    "follow_up_draft": "calls",
    "content_piece": "content",
    "deployment_kit": "content",
    "daily_brief": "brief",
    "conversation_summary": "chat",
    "missing_data": "records",
    "kc_update_candidate": "records",
}


def _answer(output_name: str) -> Answer | None:
    """The answer function for ``output_name`` (None: the offline model has none)."""
    family = FAMILIES.get(output_name)
    # lazy (each branch): a request loads only its family's module
    if family == "prospects":
        from colony.adapters.offline import prospects  # lazy: (see above)

        return _named(prospects, output_name)
    if family == "outbound":
        from colony.adapters.offline import outbound  # lazy: (see above)

        return _named(outbound, output_name)
    if family == "calls":
        from colony.adapters.offline import calls  # lazy: (see above)

        return _named(calls, output_name)
    if family == "content":
        from colony.adapters.offline import content  # lazy: (see above)

        return _named(content, output_name)
    if family == "brief":
        from colony.adapters.offline import brief  # lazy: (see above)

        return _named(brief, output_name)
    if family == "chat":
        from colony.adapters.offline import chat  # lazy: (see above)

        return _named(chat, output_name)
    if family == "records":
        from colony.adapters.offline import records  # lazy: (see above)

        return _named(records, output_name)
    return None


def _named(module: ModuleType, name: str) -> Answer:
    found: Answer = getattr(module, name)
    return found


class OfflineChatModel:
    """Deterministic ``ChatModel`` for local runs and tests; see the package docstring.

    ``stream`` derives the same answer and hands its text out word by word
    (``colony.adapters.text_stream``): deterministic deltas, no delay."""

    model = MODEL_NAME

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        return replay(self.request(request), on_text)

    def request(self, request: ModelRequest) -> ModelResponse:
        if request.output_name == "orchestrator_reply":  # AGT-001: it may answer with tools
            from colony.adapters.offline.chat import orchestrator_response  # lazy: (as above)

            return orchestrator_response(request)
        answer_for = _answer(request.output_name)
        contract = OUTPUT_CONTRACTS.get(request.output_name)
        if answer_for is None or contract is None:
            raise ProviderError(
                f"the offline model has no answer for output {request.output_name!r}"
            )
        try:
            answer = answer_for(parse(request.messages))
        except PromptLacks as lack:  # CONST-004: say what is missing rather than guess
            answer, contract = lack.answer(), MissingData
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
