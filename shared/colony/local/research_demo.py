"""``make run``'s stand-in web (issue 33 item 6): a site for every demo and Harbor prospect's
company (``colony.testing.web.demo``) and the hard cases, served on 127.0.0.1; the functions
are pointed at it by ``COLONY_RESEARCH_WEB`` (its hostnames, and only those, resolve to it).

The demo org's prospects were researched by hand (their signals are written in its files), so
its campaign does not research them; Harbor, the new customer, imports names and titles only,
and its campaign researches each company before AGT-003 (``customer_demo``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from colony.testing.web.demo import add_demo_companies
from colony.testing.web_server import WebServer


@contextmanager
def research_web(say: Callable[[str], None]) -> Iterator[dict[str, str]]:
    """Serve the stand-in web; yield the functions' environment that points them at it."""
    with WebServer(seed=11) as web:
        domains = add_demo_companies(web)
        say(f"serving the stand-in web: {len(domains)} company sites on {web.address}")
        yield {"COLONY_RESEARCH_WEB": web.research_setting()}
