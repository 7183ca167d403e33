"""URLs as the research runner keeps them: normalised, told apart by site, classified, and a
public job board's page turned into its JSON API.

- **Normalised** (``normalise``): absolute, ``http``/``https`` only, no credentials, host
  lower-case, default port dropped, dot segments resolved, fragment removed, tracking
  parameters (``utm_*``, ``gclid``, ``fbclid``…) dropped, at most ``MAX_URL`` characters.
- **A site** (``site``) is a host with ``www.`` folded in, as the fetcher's politeness sees
  it (docs/research.md): ``www.example.org`` and ``example.org`` are one site.
- **Job boards** (``board_api``): ``boards.greenhouse.io/{token}`` (or ``job-boards.``),
  ``jobs.lever.co/{company}`` (or the EU's ``jobs.eu.lever.co``) and
  ``jobs.ashbyhq.com/{org}`` are read through their public JSON APIs. The API URL keeps the
  scheme of the link it came from: production links are ``https``, the stand-in web speaks
  plain ``http`` and links ``http://boards.greenhouse.io/...`` (``testing/web/boards.py``),
  and the stand-in answers the API hosts on ``http`` too.
- **Kinds** (``kind_of``): by the path's last segment that names a section (``/about``,
  ``/about/leadership``, ``/news/{slug}``), else by a short anchor text ("Our team").
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, unquote, urljoin, urlsplit, urlunsplit

from colony.research.document import MAX_URL, LinkKind

_TRACKING = re.compile(r"^(utm_\w+|gclid|dclid|fbclid|msclkid|mc_cid|mc_eid|_ga|_hs\w+)$", re.I)
_SAFE_PATH = "/%:@!$&'()*+,;=-._~"
_SAFE_QUERY = _SAFE_PATH + "?"
_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_EXTENSION = re.compile(r"\.(html?|php|aspx?|jsp|cfm)$", re.I)
# Files a researcher never reads: following them costs a fetch the fetcher would refuse.
SKIPPED_EXTENSIONS = re.compile(
    r"\.(jpe?g|png|gif|webp|svg|ico|bmp|tiff?|css|js|mjs|map|woff2?|ttf|eot|otf|mp[34]|m4a"
    r"|wav|ogg|webm|mov|avi|zip|gz|tgz|rar|7z|docx?|xlsx?|pptx?|ics|vcf|exe|dmg|apk)$",
    re.I,
)


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


_SECTIONS: dict[LinkKind, frozenset[str]] = {
    "about": _names(
        "about about-us aboutus who-we-are our-story our-company company mission history"
    ),
    "leadership": _names(
        "leadership leaders our-leadership leadership-team team our-team management "
        "management-team executives executive-team people our-people board "
        "board-of-directors directors"
    ),
    "locations": _names(
        "locations our-locations offices our-offices find-a-location location clinics "
        "facilities sites where-we-are"
    ),
    "news": _names("news latest-news blog blogs updates announcements stories articles"),
    "press": _names(
        "press press-releases pressreleases press-room pressroom newsroom news-room media "
        "media-centre media-center in-the-news"
    ),
    "careers": _names(
        "careers career jobs job-openings openings join-us join-our-team work-with-us "
        "employment opportunities vacancies hiring"
    ),
}
_TEXTS: dict[LinkKind, tuple[str, ...]] = {
    "about": ("about", "about us", "who we are", "our story", "our mission"),
    "leadership": ("leadership", "our team", "team", "management", "executives", "our people"),
    "locations": ("locations", "our locations", "offices", "our offices", "find a location"),
    "news": ("news", "latest news", "blog", "updates", "announcements"),
    "press": ("press", "press releases", "newsroom", "media", "in the news"),
    "careers": ("careers", "jobs", "join us", "join our team", "work with us", "open positions"),
}
_FEED_PATH = re.compile(r"(/feed/?|/rss/?|\.rss|\.atom|/(rss|atom|feed|index)\.xml)$", re.I)
_SITEMAP_PATH = re.compile(r"/sitemap[\w-]*\.xml$", re.I)
_BOARDS = (
    # (host, path pattern giving the token) → API URL template (the scheme added in front)
    ("boards.greenhouse.io", re.compile(r"^/embed/job_board(?:/js)?$"), "query:for", "greenhouse"),
    ("boards.greenhouse.io", re.compile(r"^/([^/]+)"), "path", "greenhouse"),
    ("job-boards.greenhouse.io", re.compile(r"^/([^/]+)"), "path", "greenhouse"),
    ("jobs.lever.co", re.compile(r"^/([^/]+)"), "path", "lever"),
    ("jobs.eu.lever.co", re.compile(r"^/([^/]+)"), "path", "lever-eu"),
    ("jobs.ashbyhq.com", re.compile(r"^/([^/]+)"), "path", "ashby"),
)
_APIS = {
    "greenhouse": "boards-api.greenhouse.io/v1/boards/{token}/jobs?content=true",
    "lever": "api.lever.co/v0/postings/{token}?mode=json",
    "lever-eu": "api.eu.lever.co/v0/postings/{token}?mode=json",
    "ashby": "api.ashbyhq.com/posting-api/job-board/{token}",
}
# The hosts whose JSON is a job board (``boards.read_board`` tells the shapes apart).
BOARD_API_HOSTS = frozenset(
    {"boards-api.greenhouse.io", "api.lever.co", "api.eu.lever.co", "api.ashbyhq.com"}
)
_RESERVED_TOKENS = frozenset({"embed", "api", "v1", "static", "assets"})


def _dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4: ``/a/./b/../c`` → ``/a/c``."""
    out: list[str] = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    resolved = "/" + "/".join(out)
    return resolved + "/" if path.endswith(("/.", "/..")) and resolved != "/" else resolved


def normalise(href: str, base: str | None = None) -> str | None:
    """``href`` (relative to ``base``) as an absolute, normalised http(s) URL, or None for
    anything that is not one (``mailto:``, ``javascript:``, credentials, a bad port)."""
    href = (href or "").strip()
    if not href or len(href) > MAX_URL or href.startswith("#"):
        return None
    try:
        parts = urlsplit(urljoin(base, href) if base else href)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").rstrip(".")
    if parts.scheme.lower() not in ("http", "https") or not host or parts.username is not None:
        return None
    scheme = parts.scheme.lower()
    name = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
    netloc = name if port in (None, 80 if scheme == "http" else 443) else f"{name}:{port}"
    # Quoting keeps what is already escaped ('%' is safe) and escapes what is not.
    path = quote(_dot_segments(parts.path or "/"), safe=_SAFE_PATH)
    kept = [p for p in parts.query.split("&") if p and not _TRACKING.match(p.split("=", 1)[0])]
    query = quote("&".join(kept), safe=_SAFE_QUERY)
    url = urlunsplit((scheme, netloc, path, query, ""))
    return url if len(url) <= MAX_URL else None


def host(url: str) -> str:
    """The host of a normalised URL (lower-case, no port)."""
    return urlsplit(url).hostname or ""


def site(url_or_host: str) -> str:
    """The site a URL (or host) belongs to: its host with ``www.`` folded in."""
    name = host(url_or_host) if "/" in url_or_host else url_or_host.lower()
    return name.removeprefix("www.")


def same_site(url: str, other: str) -> bool:
    return site(url) == site(other)


def board_api(url: str) -> str | None:
    """The public JSON API of the job board a (normalised) URL is on, keeping its scheme;
    None when it is not a board we know."""
    parts = urlsplit(url)
    name = (parts.hostname or "").lower()
    for board_host, pattern, where, provider in _BOARDS:
        if name != board_host or not (found := pattern.match(parts.path)):
            continue
        if where == "path":
            token = unquote(found.group(1))
        else:
            token = dict(parse_qsl(parts.query)).get(where.split(":", 1)[1], "")
        if _TOKEN.match(token) and token.lower() not in _RESERVED_TOKENS:
            return f"{parts.scheme}://" + _APIS[provider].format(token=token)
    return None


def _segments(url: str) -> list[str]:
    path = urlsplit(url).path
    return [_EXTENSION.sub("", unquote(s)).lower() for s in path.split("/") if s]


def kind_of(url: str, text: str = "") -> LinkKind:
    """What a same-site link probably leads to, from its path, else its anchor text."""
    path = urlsplit(url).path
    if path.lower().endswith(".pdf"):
        return "pdf"
    if _SITEMAP_PATH.search(path):
        return "sitemap"
    if _FEED_PATH.search(path):
        return "feed"
    for segment in reversed(_segments(url)):
        for kind, names in _SECTIONS.items():
            if segment in names:
                return kind
    words = text.lower().strip(" .:›»>")
    if len(words.split()) <= 4:
        for kind, phrases in _TEXTS.items():
            if words in phrases:
                return kind
    return "page"


def is_feed_url(url: str) -> bool:
    return bool(_FEED_PATH.search(urlsplit(url).path))
