"""Chaos soak: 5 orgs run campaigns totalling 5,000 contacts while things break; one JSON line.

Every function is served locally and supervised (a killed one is started again, as Cloud Run
replaces an instance); Pub/Sub and Cloud Tasks are a stand-in in this process with the
deployed retry policies; the model is a stand-in over OpenAI's wire that answers with the
offline model. Then, on a fixed seed, until 80% of the run: function servers SIGKILLed
(every ``--kill-every`` s on average), PostgreSQL restarted once, 10% of model calls
answered 429 (with Retry-After), 500 or not at all, 5% of SMTP recipients refused with a
4xx, 10% of Pub/Sub pushes delivered twice and Cloud Tasks dispatched up to 5 s late. A
simulated person of each org approves its drafts through the approval function with a real
token (a share rejected, a share left waiting); recipients reply (10%) and unsubscribe
(2%). The run ends when everything has settled or ``--minutes`` have passed.

Each check is a field with its own ``ok``; the line's ``ok`` is true only if all hold:
``contacts`` (every contact in a terminal state or waiting for a person), ``exactly_once``
(every approved message received by the SMTP server once, by Message-ID), ``model_calls``
(calls made = needed + retries of failed ones, nothing recomputed), ``leases`` (none held
past expiry), ``dead_letters`` (each recorded with its reason), ``rss`` (no function's
memory growing after warm-up) and ``db_connections`` (never above the budget of
docs/deploy.md, for one instance of each function). ``faults`` counts what was injected.
Progress goes to stderr.

    python bench/soak.py [--minutes 20] [--seed 38] [--scale 1.0] [--kill-every 45]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from colony.local.soak.run import Config, run_soak


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=None, help="the bound (default 20)")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="a share of the 5,000 contacts (smoke: 0.01)"
    )
    parser.add_argument("--kill-every", type=float, default=45.0, help="mean s between kills")
    parser.add_argument("--keep", type=Path, default=None, help="keep data and logs here")
    args = parser.parse_args()
    if not 0 < args.scale <= 10:
        parser.error("--scale must be in (0, 10]")
    contacts = max(5, round(5000 * args.scale))
    minutes = args.minutes if args.minutes is not None else min(20.0, max(4.0, 20 * args.scale))
    base = Config()
    config = Config(
        orgs=min(base.orgs, contacts),
        contacts=contacts,
        minutes=minutes,
        seed=args.seed,
        kill_every_s=args.kill_every,
        faults=type(base.faults)(seed=args.seed),
    )
    report = run_soak(config, log, keep=args.keep)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
