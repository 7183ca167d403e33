"""One render's page in Chromium: the events it answers and the requests it made.

``PageSession.run`` drives one page target over ``DevTools`` (``colony.adapters.chromium``
says why the browser is kept off the network and how): its own document from the bytes we
hold, each paused request answered (``paused``: fetched through the polite, safe fetcher or
refused), dialogs dismissed, the frames and workers it starts guarded before they run, and,
once loaded, virtual time for its timers; then its DOM, visible text and a screenshot.
"""

from __future__ import annotations

import base64
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from colony.adapters.devtools import BrowserGone, CdpError, DeadlinePassed, DevTools, Event
from colony.adapters.polite_web import fetch_waiting, site_of
from colony.ports.render import Rendered, RenderOutcome, SubRequest
from colony.ports.web import FetchResult, WebFetcher

if TYPE_CHECKING:
    from collections.abc import Callable

FETCHED_KINDS = frozenset({"Script", "XHR", "Fetch"})  # what a page's scripts may load
ALL_REQUESTS = [{"urlPattern": "*", "requestStage": "Request"}]
# Run in every frame before its own scripts: no socket of any kind, no shared or service
# worker (their requests are not the page's to pause). The dead proxy already refuses them;
# this spares the attempt.
NO_SOCKETS = """
for (const name of ["WebSocket", "WebTransport", "RTCPeerConnection",
                    "webkitRTCPeerConnection", "RTCDataChannel", "SharedWorker"]) {
  try { delete window[name]; } catch (e) {}
}
try { Object.defineProperty(navigator, "serviceWorker", {get: () => undefined}); } catch (e) {}
"""
READ_DOM = "document.documentElement ? document.documentElement.outerHTML.slice(0, %d) : ''"
READ_TEXT = "document.body ? document.body.innerText.slice(0, %d) : ''"


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """One render's bounds: its wall-clock ``deadline`` (browser start to screenshot), the
    same-site fetches a page's scripts may have (``sub_requests``), the virtual time its
    timers get once loaded (``settle``, seconds), the viewport, and how much DOM and text is
    kept."""

    deadline: float = 30.0
    sub_requests: int = 10
    settle: float = 5.0
    width: int = 1280
    height: int = 1000
    max_html: int = 2_000_000
    max_text: int = 200_000


class PageSession:
    """One render's page: the events it answers and the requests it made."""

    def __init__(
        self,
        fetcher: WebFetcher,
        limits: RenderLimits,
        sleep: Callable[[float], None],
        url: str,
        html: bytes,
        charset: str | None,
        pool: ThreadPoolExecutor,
    ) -> None:
        self.fetcher, self.limits, self.sleep = fetcher, limits, sleep
        self.url, self.html, self.charset, self.pool = url, html, charset, pool
        self.site = site_of(url)
        self.requests: list[SubRequest] = []
        self.fetched = 0
        self.served = False  # the page's own document was handed over
        self.stage = "starting the browser"

    def answer(self, outcome: RenderOutcome, started: float, detail: str, **found: Any) -> Rendered:
        return Rendered(
            outcome,
            requests=tuple(self.requests),
            detail=detail,
            seconds=round(time.monotonic() - started, 3),
            **found,
        )

    def run(self, browser: DevTools, started: float) -> Rendered:
        self.browser = browser
        browser.call("Browser.setDownloadBehavior", {"behavior": "deny"})
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self.session = session = str(attached["sessionId"])
        self._guard(session)
        browser.call("Page.enable", session=session)
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            {
                "width": self.limits.width,
                "height": self.limits.height,
                "deviceScaleFactor": 1,
                "mobile": False,
            },
            session,
        )
        self.stage = "loading the page"
        # answered once the document is (by us): its answer is read among the events
        navigation = browser.send("Page.navigate", {"url": self.url}, session, keep=True)
        while True:
            event = browser.event()
            navigated = browser.answers.pop(navigation, None)
            if navigated is not None and _navigation_error(navigated):
                return self.answer("failed", started, _navigation_error(navigated)[:300])
            if event.method == "Fetch.requestPaused":
                self.paused(event)
            elif event.method == "Target.attachedToTarget":
                self._attached(event)
            elif event.method == "Page.javascriptDialogOpening":
                browser.send("Page.handleJavaScriptDialog", {"accept": False}, event.session)
            elif event.method == "Page.loadEventFired" and event.session == session:
                self.stage = "running the page's scripts"
                budget = {"policy": "pauseIfNetworkFetchesPending", "budget": self._settle_ms()}
                browser.send("Emulation.setVirtualTimePolicy", budget, session)
            elif event.method == "Emulation.virtualTimeBudgetExpired":
                break
            elif event.method in ("Inspector.targetCrashed", "Target.targetCrashed"):
                raise BrowserGone("the page crashed")
        self.stage = "reading what it shows"
        html = self._evaluate(READ_DOM % self.limits.max_html)
        text = self._evaluate(READ_TEXT % self.limits.max_text)
        shot = browser.call("Page.captureScreenshot", {"format": "png"}, session)
        png = base64.b64decode(shot["data"])
        took = sum(r.verdict == "fetched" for r in self.requests)
        detail = f"{took} fetched, {len(self.requests) - took} not"
        return self.answer("rendered", started, detail, html=html, text=text, screenshot_png=png)

    def paused(self, event: Event) -> None:
        """Answer one paused request: the page's own document, a fetch, or a refusal."""
        params = event.params
        request, kind = params.get("request") or {}, str(params.get("resourceType", ""))
        rid, url = params["requestId"], str(request.get("url", ""))
        if kind == "Document" and not self.served and event.session == self.session:
            self.served = True  # the navigation we started: the bytes we already have
            content_type = "text/html" + (f"; charset={self.charset}" if self.charset else "")
            self._fulfil(event, rid, content_type, self.html)
            return
        refusal = self._refusal(url, kind, str(request.get("method", "")))
        if refusal is not None:
            self.requests.append(SubRequest(url, kind, "refused", refusal))
            self._fail(event, rid, "BlockedByClient")
            return
        self.fetched += 1
        self.stage, waiting = f"fetching {url[:200]} for the page", self.stage
        result = self._fetch(url)
        self.stage = waiting
        if result.outcome != "ok":
            self.requests.append(SubRequest(url, kind, "failed", result.outcome))
            self._fail(event, rid, "Failed")
            return
        content_type = (result.content_type or "application/octet-stream") + (
            f"; charset={result.charset}" if result.charset else ""
        )
        self.requests.append(SubRequest(url, kind, "fetched", content_type))
        self._fulfil(event, rid, content_type, result.content)

    def _refusal(self, url: str, kind: str, method: str) -> str | None:
        """Why the page may not have ``url`` (None: fetch it for the page)."""
        if kind not in FETCHED_KINDS:
            return f"{kind or 'this kind of request'} is never fetched for a rendered page"
        if method != "GET":
            return f"{method} is never sent for a page"
        if not url.startswith(("http://", "https://")):
            return "not http(s)"
        try:
            same = site_of(url) == self.site
        except (httpx.InvalidURL, UnicodeError, ValueError):
            return "not a URL we fetch"
        if not same:
            return "another site"
        if self.fetched >= self.limits.sub_requests:
            return f"over the page's {self.limits.sub_requests} fetches"
        if self.browser.deadline - time.monotonic() < 1.0:
            return "too little time left"
        return None

    def _fetch(self, url: str) -> FetchResult:
        """``url`` through the polite, safe fetcher, waiting at most what is left."""
        left = self.browser.deadline - time.monotonic()
        future = self.pool.submit(fetch_waiting, self.fetcher, url, max_wait=left, sleep=self.sleep)
        try:
            return future.result(timeout=max(left, 0.0))
        except FutureTimeout as error:
            raise DeadlinePassed("a fetch for the page outlived the deadline") from error

    def _guard(self, session: str) -> None:
        """Pause every request of ``session`` (ours to answer), keep sockets out, and attach
        what it starts (workers, frames) paused, so each is guarded before it runs."""
        self.browser.call("Fetch.enable", {"patterns": ALL_REQUESTS}, session)
        self.browser.call("Page.addScriptToEvaluateOnNewDocument", {"source": NO_SOCKETS}, session)
        self.browser.call(
            "Target.setAutoAttach",
            {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True},
            session,
        )

    def _attached(self, event: Event) -> None:
        """A frame or worker the page started, attached paused: a frame's requests are paused
        too before it runs. A dedicated worker has no Fetch domain of its own: its requests
        are the page's, paused on the page's session (the hostile page's worker is refused
        there), so it runs. Anything else that cannot be guarded is left waiting for a
        debugger: it never runs."""
        child = str(event.params.get("sessionId", ""))
        if child == self.session:  # the page itself, attached by us
            return
        try:
            self.browser.call("Fetch.enable", {"patterns": ALL_REQUESTS}, child)
        except CdpError:
            if (event.params.get("targetInfo") or {}).get("type") != "worker":
                return
        self.browser.send("Runtime.runIfWaitingForDebugger", {}, child)

    def _evaluate(self, expression: str) -> str:
        found = self.browser.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, self.session
        )
        value = (found.get("result") or {}).get("value")
        return value if isinstance(value, str) else ""

    def _fulfil(self, event: Event, rid: str, content_type: str, body: bytes) -> None:
        self.browser.send(
            "Fetch.fulfillRequest",
            {
                "requestId": rid,
                "responseCode": 200,
                "responseHeaders": [{"name": "Content-Type", "value": content_type}],
                "body": base64.b64encode(body).decode("ascii"),
            },
            event.session,
        )

    def _fail(self, event: Event, rid: str, reason: str) -> None:
        self.browser.send(
            "Fetch.failRequest", {"requestId": rid, "errorReason": reason}, event.session
        )

    def _settle_ms(self) -> int:
        return int(self.limits.settle * 1000)


def _navigation_error(answer: dict[str, Any]) -> str:
    """Why ``Page.navigate`` failed ("" if it did not)."""
    if "error" in answer:
        return f"navigation: {answer['error'].get('message', '')}"
    error = (answer.get("result") or {}).get("errorText")
    return f"navigation: {error}" if error else ""
