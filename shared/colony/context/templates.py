"""Prompt templates are data (``prompts/*.md``), rendered by one strict function.

``render`` raises ``TemplateError`` when a variable the template names is missing, or when
a variable is given that the template does not use: a renamed field fails loudly instead of
silently vanishing from the prompt. Literal braces are written ``{{`` and ``}}``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from colony.errors import TemplateError


@lru_cache(maxsize=64)
def load(name: str) -> str:
    path = resources.files("colony.context").joinpath("prompts", f"{name}.md")
    if not path.is_file():
        raise TemplateError(f"no prompt template named {name!r}")
    return path.read_text(encoding="utf-8")


@lru_cache(maxsize=64)
def fields(name: str) -> frozenset[str]:
    """The variable names template ``name`` uses."""
    found = set()
    for _, field, spec, conversion in string.Formatter().parse(load(name)):
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise TemplateError(f"template {name!r}: only plain {{name}} fields are allowed")
        found.add(field)
    return frozenset(found)


def render(name: str, variables: Mapping[str, Any]) -> str:
    wanted = fields(name)
    missing = sorted(wanted - set(variables))
    unexpected = sorted(set(variables) - wanted)
    if missing:
        raise TemplateError(f"template {name!r} is missing variable(s): {', '.join(missing)}")
    if unexpected:
        raise TemplateError(
            f"template {name!r} got unexpected variable(s): {', '.join(unexpected)}"
        )
    return load(name).format_map(dict(variables)).strip()
