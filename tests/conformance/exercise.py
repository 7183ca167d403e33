"""``exercised``: every member of a port used, the guard of the ``test_it_is_a_*`` tests.

``isinstance`` against a runtime-checkable Protocol checks only that the names exist, so a
``test_it_is_a_*`` test that stopped there passed for an implementation whose every method
was wrong. Each one now goes through ``exercised``: it calls every method the port declares
(and reads every attribute) and checks what comes back, and leaving a member out fails the
test, so a method added to a port later cannot go unexercised by its suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_NOT_DECLARED_BY_A_PORT = ("Protocol", "Generic", "object")


def members(port: type) -> set[str]:
    """The public names ``port`` declares, its Protocol bases' included."""
    names: set[str] = set()
    for base in port.__mro__:
        if base.__name__ in _NOT_DECLARED_BY_A_PORT:
            continue
        declared = (*vars(base), *getattr(base, "__annotations__", {}))
        names |= {name for name in declared if not name.startswith("_")}
    return names


class Exercise:
    """The members of ``port`` used so far, through any of the implementations it wrapped
    (``exercise(impl)``): ``Generation``'s ``succeed`` and ``fail`` end two different
    generations, for instance. ``check`` fails while a member is unused."""

    def __init__(self, port: type) -> None:
        self.port, self.names, self.used = port, members(port), set[str]()
        assert self.names, f"{port.__name__} declares nothing to exercise"

    def __call__(self, impl: object) -> Any:
        assert isinstance(impl, self.port), f"{type(impl).__name__} is not a {self.port.__name__}"
        return _Watched(impl, self)

    def check(self) -> None:
        unused = sorted(self.names - self.used)
        assert not unused, f"{self.port.__name__}'s {', '.join(unused)} never exercised"


class _Watched:
    """Hands out the implementation's members, noting each one used (a method when called)."""

    def __init__(self, impl: object, exercise: Exercise) -> None:
        self._impl, self._exercise = impl, exercise

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._impl, name)
        if name not in self._exercise.names:
            return value
        if not callable(value):
            self._exercise.used.add(name)
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            self._exercise.used.add(name)
            return value(*args, **kwargs)

        return call


@contextmanager
def exercised(port: type, impl: object) -> Iterator[Any]:
    """``impl``, checked to be a ``port``, for the block to use; once the block has ended,
    every member of ``port`` must have been used through it."""
    exercise = Exercise(port)
    yield exercise(impl)
    exercise.check()
