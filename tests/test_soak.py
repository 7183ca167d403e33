"""The chaos soak's machinery at a tiny scale (issue 38 item 3): one org, 20 contacts, every
fault kind injected at least once, and the checks computed from what was observed. A
message delivered twice to the SMTP server on purpose (the same bytes, over SMTP) must fail
the exactly-once check and the line's ``ok``; everything else must hold. Real parts: the
embedded PostgreSQL (a cluster of the soak's own, restarted once), every function served
by functions-framework and supervised, the Pub/Sub and Cloud Tasks stand-in, the model
stand-in over OpenAI's wire, the SMTP server; nothing is mocked."""

from __future__ import annotations

import smtplib

from colony.local.soak.run import Config, run_soak
from colony.local.soak.stack import Faults, Stack

TINY = Config(
    orgs=1,
    contacts=20,
    minutes=6.0,  # a bound: the run ends once everything has settled
    seed=7,
    kill_every_s=6.0,
    restart_pg_at=0.05,
    faults=Faults(
        seed=7,
        model_rate=0.3,
        model_hang_s=1.0,
        smtp_defer_rate=0.3,
        push_duplicate_rate=0.3,
        task_delay_max_s=1.0,
    ),
    push_backoff=(0.5, 5.0),  # the deployed policies' shapes, shorter: a test's minutes
    task_backoff=(0.5, 5.0),
    warm_up=0.5,
    settle_s=300.0,  # faults for the first minute or so, then settling
    min_faults_s=45.0,
    # Functions that hold no step or send lease: a killed holder keeps its step until its
    # invocation's time is up (two and a half minutes; five for a send), long for a test;
    # the default soak kills every kind and leaves that time to settle.
    victims=("approval", "delivery-events", "campaign-resume"),
    sample_every_s=0.5,  # enough memory readings in a minute or two
)


def _deliver_one_again(stack: Stack) -> None:
    """What a relay that lost our QUIT's answer might do: the same message delivered again."""
    first = stack.smtp.received[0]
    with smtplib.SMTP(stack.smtp.host, stack.smtp.port, timeout=20) as smtp:
        smtp.sendmail(first.mail_from, list(first.rcpt_tos), first.raw)


def test_the_soak_checks_what_it_observed_and_catches_a_duplicate_delivery() -> None:
    said: list[str] = []
    report = run_soak(TINY, said.append, before_checks=_deliver_one_again)

    faults = report["faults"]
    for kind in (
        "sigkills",
        "restarts_by_supervisor",
        "model_429",
        "model_500",
        "model_timeouts",
        "smtp_4xx",
        "pushes_duplicated",
        "tasks_delayed",
    ):
        assert faults[kind] >= 1, (kind, faults)
    assert faults["pg_restarts"] == 1 and faults["fault_errors"] == []
    assert report["settled_in_s"] is not None, report["progress"]

    once = report["exactly_once"]  # the duplicate we made, and only it
    assert once["ok"] is False and once["duplicates"] == 1
    assert once["missing"] == 0 and once["unexpected"] == 0
    assert once["received"] == once["approved_and_sent"] + 1 >= 2
    assert report["ok"] is False

    calls = report["model_calls"]  # from the stand-in's log and llm_calls
    assert calls["made"] > calls["needed"] > 0 and calls["balance"]
    assert calls["recomputed"] == 0 and calls["ok"]
    assert sum(calls["failed_by_fault"].values()) == (
        faults["model_429"] + faults["model_500"] + faults["model_timeouts"]
    )
    contacts = report["contacts"]
    assert contacts["ok"] and sum(contacts["states"].values()) == 20, contacts
    for check in ("leases", "dead_letters", "db_connections"):
        assert report[check]["ok"], (check, report[check])
    # Memory is read, not judged, here: a one-minute run has no steady state after its
    # warm-up (a function's first decisions load their modules late: approval grew 57% on
    # one loaded machine); the default soak judges growth (docs/soak.md).
    assert report["rss"]["functions_measured"] >= 1, report["rss"]
    assert report["db_connections"]["samples"] > 0
    assert 0 < report["db_connections"]["peak"] <= report["db_connections"]["budget"]
