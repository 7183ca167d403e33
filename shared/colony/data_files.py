"""Data files another distribution installs, found without importing it.

A module that reads such a file at run time declares it in a module-level ``RUNTIME_DATA``
tuple of ``(distribution, path inside it)`` pairs. The deploy builder (``colony.deploy``)
reads those declarations from every module a function can import and copies each file into
the bundle under ``colony/_data/<distribution>/<path>``, so a deployed function carries the
file it reads, not the distribution (bpe-openai's token files are 3 MB; the package, with its
Rust extension, is 75 MB). Locally the installed distribution answers.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from colony.errors import ConfigError

BUNDLED = Path(__file__).parent / "_data"  # where the builder puts the declared files


def bundled_path(distribution: str, path: str) -> Path:
    """Where the builder copies ``path`` of ``distribution`` inside a bundle."""
    return BUNDLED / distribution / path


def data_file(distribution: str, path: str) -> Path:
    """The file ``path`` of ``distribution``: the bundle's copy, else the installed one."""
    bundled = bundled_path(distribution, path)
    if bundled.is_file():
        return bundled
    try:
        installed = Path(str(metadata.distribution(distribution).locate_file(path)))
    except metadata.PackageNotFoundError:
        installed = None
    if installed is None or not installed.is_file():
        raise ConfigError(
            f"{path!r} of {distribution!r} is neither bundled nor installed: declare it in the "
            f"module's RUNTIME_DATA (deployed) or `pip install {distribution}` (local)"
        )
    return installed
