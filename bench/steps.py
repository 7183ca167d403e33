"""Durable-step benchmark: DB round trips and ms per trivial step, first run and replay.

A trivial step (``compute`` returns a small dict at once, no effects) is run N times on a
scratch database: first run (claim, compute, finish), then replay (the stored output is
returned; nothing is computed). The pool's one connection passes through the same counting
proxy as ``bench/chat.py`` (``colony.testing.pgproxy``), so round trips (Query + Sync
messages) are measured, not estimated; the connection is opened before measuring, so its
start-up is not counted. Targets from issue 13 item 8: at most 8 round trips on the first run
and 3 on replay (DBOS, a durable execution library on Postgres, takes 10.1 and 5.05). One JSON
line.

    python bench/steps.py [--steps 200]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from colony.local import embedded
from colony.runtime.steps import step
from colony.settings import Settings
from colony.store import Database, connect_factory
from colony.testing.pgproxy import CountingProxy

ORG = "org_bench_steps"
RUN = "bench-run"
TARGETS = {"first_run": 8, "replay": 3}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def measure(db: Database, proxy: CountingProxy, steps: int, computed: list[int]) -> dict:
    before, started = proxy.round_trips, time.perf_counter()
    for n in range(steps):
        out = step(db, ORG, RUN, f"step-{n}", lambda n=n: computed.append(n) or {"n": n})
        assert out == {"n": n}, f"step {n} returned {out!r}"
    elapsed = time.perf_counter() - started
    return {
        "round_trips": round((proxy.round_trips - before) / steps, 2),
        "ms": round(elapsed * 1000 / steps, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    with embedded.scratch_database(Settings.from_env(), "bench_steps") as settings:
        app_dsn = settings.db_dsn or ""
        proxy = CountingProxy.in_front_of(app_dsn)
        via_proxy = Settings.from_env({"COLONY_DB_MODE": "dsn", "COLONY_DB_DSN": proxy.dsn})
        db = Database(connect_factory(via_proxy, "app"), pool_size=1)
        with db.transaction(ORG) as cur:  # also opens the one connection, before measuring
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'bench')", (ORG,))
        computed: list[int] = []
        log(f"{args.steps} trivial steps, first run then replay…")
        first = measure(db, proxy, args.steps, computed)
        replay = measure(db, proxy, args.steps, computed)
        assert len(computed) == args.steps, "a replayed step was computed again"
        db.close()
    print(
        json.dumps(
            {
                "bench": "steps",
                "steps": args.steps,
                "first_run": first,
                "replay": replay,
                "targets": {"round_trips": TARGETS},
                "met": first["round_trips"] <= TARGETS["first_run"]
                and replay["round_trips"] <= TARGETS["replay"],
            }
        )
    )


if __name__ == "__main__":
    main()
