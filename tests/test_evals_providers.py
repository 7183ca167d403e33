"""``colony eval`` against providers other than the offline model, and into Langfuse (issue 37
item 3).

Real parts: the project's OpenAI and Gemini adapters through their official SDKs over HTTP,
the runner, assembler and templates, and the official Langfuse SDK recording the run as
dataset runs. Stood in (they cannot run here): the providers' APIs (``colony.testing.wire``,
answering as each API answers, with scripted answers) and Langfuse
(``colony.testing.langfuse_server``, which speaks the routes the SDK uses for datasets, their
items, its OpenTelemetry export and scores).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colony.evals.cases import load
from colony.evals.langfuse_runs import PREFIX, item_id
from colony.evals.session import Target, execute
from colony.settings import Settings
from colony.testing.langfuse_server import PUBLIC_KEY, SECRET_KEY, LangfuseServer
from colony.testing.wire import Route, WireServer, gemini_content_reply, openai_chat_reply

pytestmark = [pytest.mark.usefixtures("no_ambient_config"), pytest.mark.covers("TECH-008")]

DISQUALIFIED = "AGT-004/demo/P-007"  # 34 employees: AICP-01
BEST_FIT = "AGT-004/demo/P-001"  # the rubric gives it T1
ZERO = dict.fromkeys(("size", "vertical", "tech_stack", "signals", "timing"), 0)


def answer(score: int, disqualifiers: list[str]) -> str:
    body: dict[str, Any] = {
        "total_score": score,
        "dimension_scores": ZERO if disqualifiers else {**ZERO, "size": 25, "vertical": 25},
        "disqualifiers": disqualifiers,
        "recommendation": "disqualify" if disqualifiers else None,
        "reasoning": "Scored from the rubric.",
    }
    return json.dumps({"answer": body})


def test_a_compatible_server_is_reached_through_the_openai_adapter_and_graded(
    server: WireServer, tmp_path: Path
) -> None:
    server.script(  # the set's order: P-001, then P-007
        openai_chat_reply(answer(50, []), prompt_tokens=1000),  # T3: the rubric says T1
        openai_chat_reply(answer(0, ["AICP-01"]), prompt_tokens=900),
    )
    cases = load().select(ids=[DISQUALIFIED, BEST_FIT])
    built, _ = execute(
        Settings.from_env({}),
        cases,
        Target(base_url=server.openai_base_url, model="qwen-local"),
        out=tmp_path,
        judge="none",
    )

    sent = [r.body for r in server.requests]
    assert [b["model"] for b in sent] == ["qwen-local", "qwen-local"]
    assert all(b["max_tokens"] == b["max_completion_tokens"] for b in sent)  # its dialect
    assert all(b["response_format"]["type"] == "json_schema" for b in sent)
    assert built["run"]["provider"] == "openai-compatible"
    by_id = {c["id"]: c for c in built["cases"]}
    assert by_id[DISQUALIFIED]["passed"] and not by_id[BEST_FIT]["passed"]
    tier = next(p for p in by_id[BEST_FIT]["properties"] if p["check"] == "tier")
    assert tier == {
        "check": "tier",
        "passed": False,
        "detail": "tier T3 (score 50), expected T1 (rubric: 100)",
        "counted": True,
    }
    assert by_id[BEST_FIT]["tokens_in"] == 1000
    assert built["summary"]["cost_usd"] == 0.0  # a server on this machine
    assert not built["gate"]["passed"]  # 50% under the default 80%


def test_gemini_with_a_key_is_priced_from_its_list_price(
    server: WireServer, tmp_path: Path
) -> None:
    reply = gemini_content_reply(
        answer(0, ["AICP-01"]),
        model_version="gemini-2.5-pro",
        prompt_tokens=1_000_000,
        candidates_tokens=100_000,
    )
    # only the answer is scripted: the token counter's countTokens keeps its own route
    path = r"/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+):generateContent"
    server.add_route(Route.of("eval.generate", "POST", path, lambda _: reply))
    settings = Settings.from_env(
        {"GEMINI_API_KEY": "g-test", "COLONY_GEMINI_BASE_URL": server.gemini_base_url}
    )
    built, _ = execute(
        settings, load().select(ids=[DISQUALIFIED]), Target("gemini"), out=tmp_path, judge="none"
    )

    (sent,) = server.requests_to("eval.generate")
    assert sent.path.endswith("models/gemini-2.5-pro:generateContent")
    assert server.requests_to("gemini.countTokens")  # Gemini's own count, with its key
    assert built["cases"][0]["passed"]
    assert built["summary"]["cost_usd"] == pytest.approx(1.25 + 1.0)  # $1.25/M in, $10/M out


def test_a_model_judge_has_its_own_profile_and_grades_the_rubric(
    server: WireServer, tmp_path: Path
) -> None:
    verdicts = [json.dumps({"answer": {"passed": True, "reason": "meets it"}})] * 40
    server.script(*(openai_chat_reply(v) for v in verdicts))
    cases = load().select(ids=["AGT-007/follow-up/00"])
    built, _ = execute(
        Settings.from_env({}),
        cases,
        Target(),  # the agents: offline
        out=tmp_path,
        judge=server.openai_base_url,
        judge_model="judge-model",
    )

    judged = [r.body for r in server.requests]
    assert {b["model"] for b in judged} == {"judge-model"}
    assert len(judged) == built["judge"]["labelled"] + 1  # the labelled answers, then the case
    # a judge that passes everything disagrees with every bad labelled answer: not trusted
    assert not built["judge"]["trusted"]
    rubric = next(p for p in built["cases"][0]["properties"] if p["check"] == "rubric")
    assert rubric == {"check": "rubric", "passed": True, "detail": "", "counted": False}


def test_a_run_is_recorded_in_langfuse_as_dataset_runs(tmp_path: Path) -> None:
    cases = load().select(ids=[DISQUALIFIED, BEST_FIT, "AGT-005/missing/no-signals"])
    with LangfuseServer() as langfuse:
        settings = Settings.from_env(
            {
                "LANGFUSE_PUBLIC_KEY": PUBLIC_KEY,
                "LANGFUSE_SECRET_KEY": SECRET_KEY,
                "LANGFUSE_HOST": langfuse.url,
            }
        )
        built, _ = execute(settings, cases, Target(), out=tmp_path, judge="none")
        datasets = langfuse.datasets

        assert set(built["langfuse"]) == {"AGT-004", "AGT-005"}
        items = datasets.items(f"{PREFIX}AGT-004")
        assert {i["id"] for i in items} == {item_id(DISQUALIFIED), item_id(BEST_FIT)}
        assert items[0]["expectedOutput"]["outcome"] == "answer"
        runs = datasets.experiments()  # one per agent's dataset, named by the run
        run = runs[built["langfuse"]["AGT-004"]["experiment_id"]]
        assert run["name"] == built["run"]["id"] and run["dataset"] == items[0]["datasetId"]
        assert set(run["items"]) == {item_id(DISQUALIFIED), item_id(BEST_FIT)}
        assert run["items"][item_id(BEST_FIT)]["trace_id"]
        scores = datasets.scores()
        passed = [s for s in scores if s["name"] == "passed"]
        assert sorted(s["value"] for s in passed) == [1.0, 1.0, 1.0]  # offline passes all three
        assert {"disqualifiers", "tier", "outcome"} <= {s["name"] for s in scores}
