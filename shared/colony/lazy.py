"""Package names that load with their first use (PEP 562), for the packages whose
``__init__`` re-exports many modules' names but whose importers need only a few of them:
importing the package stays cheap at a function's cold start (``bench/cold_start.py``).

Standard library only, so ``colony.contracts`` may use it too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name in ``homes`` is read from the
    module named there on first use; any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(homes[name]), name)

    return __getattr__
