"""The offline ChatModel: deterministic, no network, model name ``offline-deterministic-v1``.

It is not a language model, but like one it reads only the messages it is sent:
``prompt.parse`` reads the rendered prompt back (the data blocks opened with the boundary the
system message states, the ICP description and anti-ICP conditions, the task text), and each
contract's answer is computed from that with rules, templates and extraction, then returned
as JSON text that validates against ``OUTPUT_CONTRACTS[request.output_name]``. Usage is an
estimate (``ceil(chars / 4)`` of the messages' text in, of the answer out), since there is no
tokenizer behind it.

A prompt that lacks a block an answer needs raises ``ValidationFailed`` naming it (``the
prompt has no contact entity``), so a flow whose prompt loses a field fails rather than
getting an answer built from nothing; one whose data lacks a value an answer needs (an
entity's field) is answered ``missing_data`` naming it (``PromptLacks``, CONST-004); an
unknown ``output_name`` raises ``ProviderError``.
What each answer reads is documented beside it:

- ``prospects``: ``qualification_score``, ``prospect_enrichment``;
- ``outbound``: ``outbound_message``;
- ``calls``: ``call_signals``, ``call_summary``, ``follow_up_draft``;
- ``content``: ``content_piece``, ``deployment_kit``;
- ``brief``: ``daily_brief``;
- ``chat``: ``orchestrator_reply`` (AGT-001's turn), ``conversation_summary``;
- ``records``: ``missing_data``, ``kc_update_candidate``;
- ``prompt``: the parser every answer reads through;
- ``common``: the value-access and text helpers they share;
- ``usage``: the model's name and token estimate every answer reports.

``model`` holds the dispatch table; answer modules are imported on first use.
"""

from colony.adapters.offline.model import OfflineChatModel
from colony.adapters.offline.usage import MODEL_NAME, estimate_tokens

__all__ = ["MODEL_NAME", "OfflineChatModel", "estimate_tokens"]
