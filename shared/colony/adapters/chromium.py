"""``PageRenderer`` over headless Chromium, kept off the network by construction (issue 33).

    render(url, html)
      ├─ a throwaway profile (a temporary directory, removed after) and a dead proxy port
      ├─ DevTools.launch: Chromium over a pipe, ``FLAGS`` below, one deadline for everything
      ├─ a page target, every request paused (Fetch.enable, ``*``, Request stage); workers
      │  and frames it starts are attached paused and get the same before they run
      ├─ Page.navigate(url) → its Document request fulfilled with ``html`` (never fetched)
      ├─ each request the page makes (``_Page.paused``):
      │    Script / XHR / Fetch, GET, same site, within the budget → the polite, safe
      │    fetcher (robots.txt, the site's pace, the SSRF guard), its body handed over;
      │    anything else (another site, an address, an image, a font, a frame, a POST,
      │    over the budget or the time left) → Fetch.failRequest, never sent
      ├─ once loaded, ``settle`` of virtual time: timers run without our waiting for them
      └─ the DOM, its visible text, a PNG of the viewport; Browser.close, the group killed

Why the browser cannot reach the network even if a request slipped past the Fetch domain
(a WebSocket, a worker started before it was attached, a prefetch): every connection goes to
a proxy at a loopback port we hold bound and never listen on (refused at once), loopback
included (``<-loopback>`` drops Chromium's implicit bypass); its resolver answers no name
(``MAP * ~NOTFOUND``); WebRTC may use no UDP outside that proxy. A test drives the browser
with these flags and no interception at all, and nothing reaches a local server.

The sandbox: ``--no-sandbox`` is passed only when we run as root (a container's default
user), where Chromium refuses to start without it; ``--disable-dev-shm-usage`` because a
container's /dev/shm is 64 MB. Run as another user, Chromium keeps its sandbox.

The deadline is hard: every wait on the browser is bounded by it (``DevTools``), a fetch for
the page waits at most what is left (it runs on a worker thread and is abandoned, bounded by
its own limits, when the deadline passes), and a render past it is ``timeout`` with the
browser killed.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from colony.adapters.chromium_page import PageSession, RenderLimits
from colony.adapters.devtools import DeadlinePassed, DevTools, DevToolsError
from colony.adapters.polite_web import web_from_settings
from colony.adapters.web import Limits
from colony.adapters.web_body import SUBRESOURCE_TYPES
from colony.ports.render import Rendered
from colony.ports.web import WebFetcher

if TYPE_CHECKING:
    from collections.abc import Callable

    from colony.settings import Settings
    from colony.store.db import Database

__all__ = ["ChromiumRenderer", "RenderLimits", "flags", "renderer_from_settings"]


def flags(profile: str, proxy_port: int, limits: RenderLimits) -> list[str]:
    """Chromium's command line (module docstring says why each matters)."""
    found = [
        "--headless",
        f"--user-data-dir={profile}",
        f"--window-size={limits.width},{limits.height}",
        # the network: a dead proxy for everything, loopback included; no names resolved
        f"--proxy-server=http://127.0.0.1:{proxy_port}",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        # nothing of its own: no updates, sync, extensions, crash reports, first-run pages
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-breakpad",
        "--no-first-run",
        "--no-default-browser-check",
        "--no-pings",
        # what a page may not do: pop windows up, ask for permissions, play sound
        "--block-new-web-contents",
        "--deny-permission-prompts",
        "--mute-audio",
        "--hide-scrollbars",
        "--disable-dev-shm-usage",  # a container's /dev/shm is 64 MB
    ]
    if os.geteuid() == 0:  # Chromium refuses to start as root with its sandbox on
        found.append("--no-sandbox")
    return [*found, "about:blank"]


class ChromiumRenderer:
    """Renders pages in a new headless Chromium each (module docstring). ``executable`` is
    the browser binary itself (Debian: ``/usr/lib/chromium/chromium``; ``/usr/bin/chromium``
    is a shell wrapper that adds flags and API keys of its own); ``fetcher`` fetches what a
    page's scripts ask for (a ``PoliteWebFetcher`` accepting scripts)."""

    def __init__(
        self,
        executable: str,
        fetcher: WebFetcher,
        *,
        limits: RenderLimits | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.executable = executable
        self.fetcher = fetcher
        self.limits = limits or RenderLimits()
        self.sleep = sleep  # for a site's pace between a page's fetches

    def render(self, url: str, html: bytes, *, charset: str | None = None) -> Rendered:
        started = time.monotonic()
        deadline = started + self.limits.deadline
        with (
            tempfile.TemporaryDirectory(prefix="colony-render-", dir=profile_parent()) as profile,
            socket.socket(socket.AF_INET, socket.SOCK_STREAM) as hole,
        ):
            hole.bind(("127.0.0.1", 0))  # held, never listening: the dead proxy
            try:
                browser = DevTools.launch(
                    self.executable,
                    flags(profile, hole.getsockname()[1], self.limits),
                    profile,
                    deadline,
                )
            except OSError as error:
                return Rendered("failed", detail=f"the browser did not start: {error}"[:300])
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="colony-render-fetch")
            page = PageSession(self.fetcher, self.limits, self.sleep, url, html, charset, pool)
            try:
                return page.run(browser, started)
            except DeadlinePassed:
                detail = f"past the {self.limits.deadline:g} s deadline ({page.stage})"
                return page.answer("timeout", started, detail)
            except DevToolsError as error:
                return page.answer("failed", started, f"{page.stage}: {error}"[:300])
            finally:
                browser.close()
                pool.shutdown(wait=False, cancel_futures=True)


def profile_parent() -> str:
    """Where a throwaway profile goes: the temporary directory, unless its path is long.
    Chromium makes its singleton socket under TMPDIR (the profile, here), and a socket's
    path is at most 107 bytes."""
    found = tempfile.gettempdir()
    return found if len(found) <= 48 else "/tmp"


def renderer_from_settings(settings: Settings, db: Database) -> ChromiumRenderer | None:
    """The research runner's renderer where ``COLONY_RESEARCH_BROWSER`` names a browser
    (None: pages that need one are recorded as such, not rendered); what a page's scripts
    ask for is fetched as any page is (robots.txt, the site's pace, the SSRF guard), smaller
    and sooner."""
    if settings.research_browser is None:
        return None
    limits = Limits(
        max_bytes=1024 * 1024, connect_timeout=5.0, read_timeout=5.0, deadline=10.0, max_redirects=2
    )
    fetcher = web_from_settings(settings, db, limits=limits, accept=SUBRESOURCE_TYPES)
    return ChromiumRenderer(settings.research_browser, fetcher)
