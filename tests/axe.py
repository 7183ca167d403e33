"""axe-core in the page under test: the serious and critical violations of what it shows now.

axe-core is pinned in ``tests/browser/package-lock.json`` and installed by ``make browser``;
it is injected by WebDriver (the page's CSP governs the page's own scripts, not the
driver's), so the page never serves or requests it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE = Path(__file__).parent / "browser" / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")

RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, { resultTypes: ["violations"] })
  .then((r) => done(r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }))))
  .catch((e) => done([{ id: "axe-error", impact: "critical", help: String(e), nodes: [] }]));
"""


def serious_violations(driver: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the current page (empty: none)."""
    if not driver.execute_script("return typeof window.axe !== 'undefined'"):
        driver.execute_script(AXE.read_text())
    found = driver.execute_async_script(RUN)
    return [v for v in found if v["impact"] in SERIOUS]
