"""Overview benchmark: the /overview approval queue in headless Chromium with N pending items.

A scratch database gets the demo org and N pending items of every kind
(``colony.local.queue_seed``); the chat function runs as a real functions-framework server.
Reported (one JSON line):

- ``first_card_ms``: from navigation start to the frame after the first cards are in the
  DOM (the page's ``colony:queue-first`` mark; it includes loading the page, opening the live
  stream and fetching the queue), on the first load and on a reload;
- ``page_served_ms``: when the page's own response ended (the first load's includes what
  the chat function's first request builds: its settings, pool and first connection; the
  routes are imported when the instance starts, before it listens);
- ``whole_queue_ms``: the same, until the whole listing of N items is in the page and the
  cards near the view are built (``colony:queue-complete``): from then on keys, filters,
  counts and bulk decisions reach all N; the page builds only ``rendered_cards`` of them
  (more as the list scrolls) and the browser lays out only those in view;
- ``page_memory_mb``: the page's used JS heap, and its DOM node count, with the queue shown;
- ``approvals_api``: the chat function's ``GET /approvals`` answer for the first screen
  (``limit=20``) and the whole queue (``limit=500``): median time over 5 requests, and size;
- ``click_to_update_ms``: from a real click on a draft's Approve (a capturing listener) to
  the frame after that card left the DOM, p50 and max over ``--clicks`` clicks; each
  decision (the message queued for the send function) is checked in the database.

Targets: first card ≤ 1000 ms on the first load (``meets_targets`` judges that one, not the
reload), click to update ≤ 300 ms.

    python bench/overview.py [--items 500] [--clicks 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from colony.adapters.embedding import OfflineHashEmbedder
from colony.knowledge import KnowledgeStore
from colony.local import embedded
from colony.local.browser import headless_chromium
from colony.local.campaign_demo import function_env
from colony.local.demo import load_demo
from colony.local.functions import FunctionServers
from colony.local.queue_seed import seed_queue
from colony.local.tokens import mint_local_token
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_value

ORG = "org_zoomprop_demo"
FIRST_CARD_TARGET_MS = 1000
CLICK_TARGET_MS = 300

# Installed before a click: the click's time (capturing, so before the page's own handler)
# and the frame after the card's node left the DOM.
WATCH = """
const id = arguments[0];
window.__bench = { t0: null, t1: null };
document.addEventListener("click", () => {
  if (window.__bench.t0 === null) window.__bench.t0 = performance.now();
}, { capture: true, once: true });
const node = document.querySelector('#queue [data-id="' + id + '"]');
const observer = new MutationObserver(() => {
  if (!node.isConnected) {
    observer.disconnect();
    requestAnimationFrame(() => { window.__bench.t1 = performance.now(); });
  }
});
observer.observe(document.getElementById("queue"), { childList: true });
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def marks(driver: Any) -> dict[str, float]:
    """The page's marks, and ``served`` (the page's own response ended: on a first load
    that includes the chat function's first request)."""
    return driver.execute_script(
        "const m = {};"
        " for (const e of performance.getEntriesByType('mark')) m[e.name] = e.startTime;"
        " m.served = performance.getEntriesByType('navigation')[0].responseEnd;"
        " return m;"
    )


def load(driver: Any, url: str | None, n: int) -> dict[str, float]:
    """Load the page (``None``: reload it; the token is in its session storage) and wait
    for the whole listing of ``n`` items."""
    if url is None:
        driver.refresh()
    else:
        driver.get(url)
    WebDriverWait(driver, 60).until(
        lambda d: d.execute_script(
            "return document.getElementById('queue').dataset.complete === 'true'"
        )
    )
    count = driver.find_element(By.ID, "queue-count").text
    assert count.startswith(f"{n} pending"), count
    return marks(driver)


def api_timing(base: str, token: str, limit: int) -> dict[str, float]:
    """``GET /approvals?limit=`` as the page asks for it: median ms of 5, and its size."""
    times, size = [], 0
    for _ in range(5):
        started = time.perf_counter()
        response = requests.get(
            f"{base}/approvals",
            params={"limit": limit},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        times.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        size = len(response.content)
    return {"ms": round(statistics.median(times), 1), "kb": round(size / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--clicks", type=int, default=10)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    with embedded.scratch_database(Settings.from_env(), "bench_overview") as settings:
        db = Database(connect_factory(settings, "app"))
        load_demo(db, KnowledgeStore(db, OfflineHashEmbedder()), say=log)
        seeded = seed_queue(db, ORG, args.items)
        env = {**function_env(settings, settings.db_dsn or ""), "COLONY_TRANSPORT": "local"}
        token = mint_local_token(settings.data_dir, ORG)
        driver = headless_chromium()
        try:
            with FunctionServers(
                env, ["chat", "send"], log_dir=settings.data_dir / "logs"
            ) as servers:
                url = f"{servers.urls['chat']}/overview#token={token}"
                log(f"{args.items} pending items; first load…")
                cold = load(driver, url, args.items)
                log("reload…")
                warm = load(driver, None, args.items)
                rendered = int(
                    driver.find_element(By.ID, "queue").get_attribute("data-rendered") or 0
                )
                driver.execute_cdp_cmd("Performance.enable", {})
                got = driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
                metrics = {m["name"]: m["value"] for m in got}
                api = {
                    "first_screen": api_timing(servers.urls["chat"], token, 20),
                    "whole_queue": api_timing(servers.urls["chat"], token, 500),
                }
                clicks: list[float] = []
                for _ in range(args.clicks):
                    card = driver.find_element(
                        By.CSS_SELECTOR, "#queue .qcard[data-kind=outbound_message]"
                    )
                    item_id = card.get_attribute("data-id")
                    driver.execute_script(WATCH, item_id)
                    card.find_element(By.CSS_SELECTOR, "button[data-action=approve]").click()
                    WebDriverWait(driver, 30).until(
                        lambda d: d.execute_script("return window.__bench.t1 !== null")
                    )
                    t = driver.execute_script("return window.__bench.t1 - window.__bench.t0")
                    clicks.append(float(t))
                    with db.transaction(ORG) as cur:
                        status = fetch_value(
                            cur, "SELECT status FROM approval_items WHERE id = %s", (item_id,)
                        )
                    assert status == "applied", f"item {item_id} is {status} after its click"
        finally:
            driver.quit()
        assert len(seeded.ids) == args.items
        first = [cold["colony:queue-first"], warm["colony:queue-first"]]
        whole = [cold["colony:queue-complete"], warm["colony:queue-complete"]]
        click_p50 = statistics.median(clicks)
        print(
            json.dumps(
                {
                    "bench": "overview",
                    "items": args.items,
                    "first_card_ms": {"first_load": round(first[0]), "reload": round(first[1])},
                    "page_served_ms": {
                        "first_load": round(cold["served"]),
                        "reload": round(warm["served"]),
                    },
                    "whole_queue_ms": {"first_load": round(whole[0]), "reload": round(whole[1])},
                    "page_memory_mb": round(metrics["JSHeapUsedSize"] / 2**20, 1),
                    "dom_nodes": int(metrics["Nodes"]),
                    "rendered_cards": rendered,
                    "approvals_api": api,
                    "click_to_update_ms": {
                        "p50": round(click_p50, 1),
                        "max": round(max(clicks), 1),
                        "clicks": len(clicks),
                    },
                    "targets": {
                        "first_card_ms": FIRST_CARD_TARGET_MS,
                        "click_to_update_ms": CLICK_TARGET_MS,
                    },
                    # Judged on the first load, the one a person opening the page meets (a
                    # fresh browser, the function's first request); the reload is reported.
                    "meets_targets": first[0] <= FIRST_CARD_TARGET_MS
                    and max(clicks) <= CLICK_TARGET_MS,
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                    "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            )
        )


if __name__ == "__main__":
    main()
