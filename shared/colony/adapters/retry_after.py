"""How long a vendor asked us to wait: what every HTTP adapter (model or REST) reads.

Standard library only: the Drive and Notion adapters use it, and their webhooks' bundles must
not carry a model SDK.
"""

from __future__ import annotations

import email.utils
import math
import time
from typing import Any


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date).

    ``headers`` is any mapping (an httpx ``Headers`` is case-insensitive; a plain dict is
    searched case-insensitively). ``None`` when absent, unparseable or negative.
    """
    if headers is None:
        return None
    try:
        items = {str(k).lower(): str(v) for k, v in headers.items()}
    except (AttributeError, TypeError):
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = items.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / divisor
        except ValueError:
            if name == "retry-after-ms":
                continue
            try:
                when = email.utils.parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                continue
            value = when.timestamp() - time.time()
        if math.isfinite(value) and value >= 0:
            return value
    return None
