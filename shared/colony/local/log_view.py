"""``colony logs <function>``: the local servers' Cloud Logging lines, made readable.

Each local function server appends its output to ``.colony/logs/<function>.log``: our JSON
lines (``colony.observability.logs``) and whatever else the process prints (gunicorn's
start-up lines, a crash before logging was configured), which is shown as it is.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

from colony.errors import NotFound
from colony.observability.logs import TRACE_FIELD
from colony.registry.functions import FUNCTIONS

_IDS = (("org_id", "org"), ("run_id", "run"), ("event_id", "event"))
_INDENT = "    "


def log_file(log_dir: Path, function: str) -> Path:
    """The log of ``function`` under ``log_dir``; NotFound naming the known functions if the
    name is not one, or if that function has written no log there yet."""
    known = ", ".join(sorted(FUNCTIONS))
    if function not in FUNCTIONS:
        raise NotFound(f"no function named {function!r}; the functions are: {known}")
    path = log_dir / f"{function}.log"
    if not path.is_file():
        written = sorted(p.stem for p in log_dir.glob("*.log") if p.stem in FUNCTIONS)
        have = f"logs exist for: {', '.join(written)}" if written else "no function has one yet"
        raise NotFound(
            f"no log for {function!r} at {path} (the local servers write one while `make run`"
            f" runs; {have}); the functions are: {known}"
        )
    return path


def render(line: str) -> str:
    """One log line for a reader: time, severity, ids, message, then the traceback indented.
    A line that is not one of our JSON entries comes back as it is."""
    text = line.rstrip("\n")
    try:
        entry = json.loads(text)
    except ValueError:
        return text
    if not isinstance(entry, dict) or "severity" not in entry or "message" not in entry:
        return text
    ids = [f"{label}={entry[key]}" for key, label in _IDS if entry.get(key)]
    trace = entry.get(TRACE_FIELD)
    if isinstance(trace, str) and trace:
        ids.append(f"trace={trace.rsplit('/', 1)[-1]}")
    first, *rest = str(entry["message"]).split("\n")
    head = [_time(entry.get("time")), f"{entry['severity']!s:<8}", *ids, first]
    return "\n".join([" ".join(part for part in head if part), *(_INDENT + r for r in rest)])


def _time(value: object) -> str:
    if not isinstance(value, str):
        return ""
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return value
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def lines(
    path: Path, *, follow: bool = False, poll: float = 0.5, stop: threading.Event | None = None
) -> Iterator[str]:
    """The file's lines; with ``follow``, then the lines appended to it, until ``stop`` is set
    (or forever). A line still being written is held back until its newline arrives."""
    stopped = stop or threading.Event()
    with path.open(encoding="utf-8", errors="replace") as file:
        pending = ""
        while True:
            chunk = file.readline()
            if chunk:
                pending += chunk
                if pending.endswith("\n"):
                    yield pending
                    pending = ""
                continue
            if not follow:
                if pending:
                    yield pending
                return
            if stopped.wait(poll):  # nothing new yet: look again shortly
                return


def show(
    log_dir: Path,
    function: str,
    say: Callable[[str], None],
    *,
    follow: bool = False,
    stop: threading.Event | None = None,
) -> None:
    """Print ``function``'s log from ``log_dir``, rendered line by line."""
    for line in lines(log_file(log_dir, function), follow=follow, stop=stop):
        say(render(line))
