"""What the chat function loads before its first request (issue 32 item 4): the page's routes
and the views it asks for (queue, brief, funnels, audit log), and nothing a person only
reaches later: no turn (the model stack), no decision (each kind's edit rules, the contracts
they check). A fresh interpreter loads ``functions/chat/main.py`` as functions-framework does."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAIN = REPO / "functions" / "chat" / "main.py"
LATER = (
    "colony.llm",  # the model stack: a turn
    "colony.flows.chat.turn",
    "colony.contracts.chat",  # the turn's and the decision's bodies, the tools' arguments
    "colony.flows.approvals.approval",  # deciding: a decision
    "colony.flows.approvals.approval_kinds",
    "colony.contracts.admin",
)
NOW = ("colony.chat.api", "colony.flows.approvals.approval_queue", "colony.flows.chat.session")


def test_the_page_loads_without_the_turn_and_the_decisions() -> None:
    probe = textwrap.dedent(
        f"""
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location("main", {str(MAIN)!r})
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        print(json.dumps([m for m in {list(LATER + NOW)!r} if m in sys.modules]))
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == list(NOW)
