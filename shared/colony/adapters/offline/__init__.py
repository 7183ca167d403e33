"""The offline ChatModel: deterministic, no network, model name ``offline-deterministic-v1``.

It is not a language model. For each contract it computes an answer from ``request.context``
alone (never from the rendered prompt in ``request.messages``) with rules, templates and
extraction, then returns it as JSON text that validates against
``OUTPUT_CONTRACTS[request.output_name]``. Usage is an estimate (``ceil(chars / 4)`` of the
messages' text in, of the answer out), since there is no tokenizer behind it.

Callers build the context shape each contract documents; a missing required key raises
``ValidationFailed`` naming it, an unknown ``output_name`` raises ``ProviderError``. The
shapes are documented beside their answers:

- ``prospects``: ``qualification_score``, ``prospect_enrichment``;
- ``outbound``: ``outbound_message``;
- ``calls``: ``call_signals``, ``call_summary``, ``follow_up_draft``;
- ``content``: ``content_piece``, ``deployment_kit``;
- ``brief``: ``daily_brief``;
- ``chat``: ``orchestrator_reply`` (AGT-001's turn), ``conversation_summary``;
- ``records``: ``missing_data``, ``kc_update_candidate``;
- ``common``: the context-access and text helpers they share.

``model`` holds the dispatch table; answer modules are imported on first use.
"""

from colony.adapters.offline.model import MODEL_NAME, OfflineChatModel, estimate_tokens

__all__ = ["MODEL_NAME", "OfflineChatModel", "estimate_tokens"]
