"""How long the model calls of one invocation may take: the function's timeout, less the
time it needs after its last call (``WRAP_UP_SECONDS``: storing the result, finishing the
step, acknowledging).

The edge opens the window when a request or push arrives (``colony.runtime.edge``);
``StructuredRunner`` reads it before every attempt: a call gets at most the time left as its
timeout, a back-off that would outlast the window is not slept, and no call starts with
less than ``MIN_CALL_SECONDS`` left. The runner then raises ``ProviderUnavailable``, so the
transport redelivers later, rather than the platform killing the function mid-call. Outside
a function (tests, tools, ``make run``'s scenario) there is no window. A thread that works
for the request (AGT-006's pass 1, a chat turn) must run in a copy of the request's context
(``contextvars.copy_context``) to keep it.

Outside a window a call still has a timeout, never the SDK's own: ``DEFAULT_CALL_SECONDS``,
the window of a function with the registry's default timeout, which is also the adapters'
client default (``call_timeout``). A tool or a local eval run then waits for a call exactly as
long as a deployed function of the default kind could, not the 120 s an adapter once fixed
while that function's window was 100 s (issue 37 item 6).

With the window, the registry's invariant holds for every function (tests/test_call_limits.py):
model time < window < function timeout < step lease (``colony.runtime.steps``), so a step's
lease never lapses while its holder may still be calling the model.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import cast

from colony.registry.function_spec import Function
from colony.registry.functions import FUNCTIONS

WRAP_UP_SECONDS = 20
MIN_CALL_SECONDS = 5.0
# A function's timeout unless its registry entry says otherwise, and the model window it gives.
_DEFAULT_TIMEOUT = next(f for f in dataclasses.fields(Function) if f.name == "timeout_seconds")
DEFAULT_CALL_SECONDS = float(cast(int, _DEFAULT_TIMEOUT.default) - WRAP_UP_SECONDS)

Clock = Callable[[], float]
_ends: ContextVar[float | None] = ContextVar("colony_model_window_ends", default=None)


def window_seconds(function_name: str | None) -> float | None:
    """The model-call window of one invocation of ``function_name`` (None: not a function)."""
    function = FUNCTIONS.get(function_name) if function_name else None
    if function is None:
        return None
    return float(function.timeout_seconds - WRAP_UP_SECONDS)


@contextmanager
def model_window(seconds: float | None, clock: Clock = time.monotonic) -> Iterator[None]:
    """Open a window of ``seconds`` (None: none) for the calls made inside."""
    token = _ends.set(None if seconds is None else clock() + seconds)
    try:
        yield
    finally:
        _ends.reset(token)


def time_left(clock: Clock = time.monotonic) -> float | None:
    """Seconds left in the current window (None: no window)."""
    ends = _ends.get()
    return None if ends is None else ends - clock()


def call_timeout(clock: Clock = time.monotonic) -> float:
    """The timeout of a model call starting now: what is left of the window, or
    ``DEFAULT_CALL_SECONDS`` outside one."""
    left = time_left(clock)
    return DEFAULT_CALL_SECONDS if left is None else left
