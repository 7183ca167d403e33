"""The stand-in web's pages that only a browser can read, beyond ``needs-js.example``: one
whose script reaches for everything it should not, and two that never finish.

=====================  ====================================================================
host                   what a renderer meets
=====================  ====================================================================
hostile-js.example     / is empty; /app.js (same site) tries loopback (the stand-in's own
                       port), the metadata server by address and by name, another stand-in
                       site, an image, a frame, a WebSocket, a beacon (a POST), a worker,
                       and 15 same-site XHRs past /data.json; then writes
                       ``HOSTILE_JS_TEXT`` from /data.json and how many of its four reaches
                       were blocked
spinning-js.example    / is a script that never returns (``while (true) {}``)
slow-js.example        / loads /slow.js, which drips a byte every ``drip_gap`` s
=====================  ====================================================================

Every request that reaches the stand-in is counted there (``WebServer.requests``): an IP
literal or a forbidden name as ``Host`` is a refused address, so a test proves none of the
hostile page's reaches left the browser by counting nothing at the server.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from colony.testing.web.pages import Page, Robots, Site, Stream

SCRIPTED: dict[str, str] = {  # host → the company it stands for
    "hostile-js.example": "Hostile Script Health",
    "spinning-js.example": "Endless Loop Clinics",
    "slow-js.example": "Slow Script Dental",
}
HOSTILE_JS_TEXT = "Hostile Script Health opened a sleep clinic in Spokane on 4 November 2026."
ANOTHER_SITE = "needs-js.example"  # a stand-in site the hostile script reaches for
EMPTY = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>{name}</title></head><body>'
    '<div id="root"></div><noscript>Please enable JavaScript.</noscript>{script}</body></html>'
)


def hostile_script(port: int) -> str:
    """/app.js: every reach a page should not have, then the text it may write."""
    own = f"http://127.0.0.1:{port}"
    return f"""
const root = document.getElementById("root");
const data = fetch("/data.json").then((r) => r.json());
const reaches = ["{own}/stolen", "http://169.254.169.254/computeMetadata/v1/",
                 "http://metadata.google.internal/computeMetadata/v1/",
                 "http://{ANOTHER_SITE}/"];
new Image().src = "{own}/pixel";
const frame = document.createElement("iframe");
frame.src = "{own}/frame";
document.body.appendChild(frame);
try {{ new WebSocket("ws://127.0.0.1:{port}/socket"); }} catch (e) {{}}
try {{ navigator.sendBeacon("/beacon", "x"); }} catch (e) {{}}
try {{
  new Worker(URL.createObjectURL(new Blob(["fetch('{own}/worker')"])));
}} catch (e) {{}}
for (let i = 0; i < 15; i++) {{ fetch("/data.json?n=" + i).catch(() => null); }}
Promise.all(reaches.map((u) => fetch(u).then(() => "reached", () => "blocked")))
  .then((results) => data.then((found) => {{
    const blocked = results.filter((r) => r === "blocked").length;
    root.innerHTML = "<h1>Hostile Script Health</h1><p>" + found.text + "</p><p>" +
      blocked + " of " + results.length + " reaches blocked.</p>";
  }}));
"""


def _drip() -> Iterator[bytes]:
    yield b"document.title = 'loading"
    yield from itertools.repeat(b".")


def scripted_sites(port: int, drip_gap: float, drip_limit: float) -> list[Site]:
    """The three sites; ``port`` is the stand-in's own (the hostile script's loopback)."""
    script = '<script src="/app.js"></script>'
    hostile = Site(
        "hostile-js.example",
        {
            "/": Page(EMPTY.format(name=SCRIPTED["hostile-js.example"], script=script).encode()),
            "/app.js": Page(hostile_script(port).encode(), "text/javascript"),
            "/data.json": Page(f'{{"text": "{HOSTILE_JS_TEXT}"}}'.encode(), "application/json"),
        },
        Robots(),
    )
    spin = "<script>while (true) {}</script>"
    spinning = Site(
        "spinning-js.example",
        {"/": Page(EMPTY.format(name=SCRIPTED["spinning-js.example"], script=spin).encode())},
        Robots(),
    )
    slow_script = '<script src="/slow.js"></script>'
    slow = Site(
        "slow-js.example",
        {
            "/": Page(EMPTY.format(name=SCRIPTED["slow-js.example"], script=slow_script).encode()),
            "/slow.js": Page(
                content_type="text/javascript",
                stream=Stream(_drip, 1_000_000, drip_gap, drip_limit),
                etag='"drip"',
            ),
        },
        Robots(),
    )
    return [hostile, spinning, slow]
