"""An org's postal address as its footer prints it (issue 39 item 4; CAN-SPAM asks every
commercial message for a valid physical postal address: a street address, a post office box
or a private mailbox).

We cannot prove an address exists, so the check is of its shape: two to five parts (lines,
or parts separated by commas), a number somewhere (a street or box number, a postcode), 10
to 300 characters, nothing that is not an address (a link, an email address, markup, control
characters). It is stored as one line, its parts joined by ", ", the way a footer prints it.
"""

from __future__ import annotations

import re

from colony.errors import Unprocessable

MIN_LENGTH, MAX_LENGTH = 10, 300
MIN_PARTS, MAX_PARTS = 2, 5
_NOT_AN_ADDRESS = re.compile(r"https?:|www\.|@|[<>{}\[\]]", re.IGNORECASE)


def check(text: str) -> str:
    """The address, normalised to one line; ``Unprocessable`` naming what is wrong."""
    if not isinstance(text, str):
        raise Unprocessable("postal_address must be text")
    if any(ord(c) < 32 and c not in "\n\r\t" for c in text):
        raise Unprocessable("postal_address has control characters")
    parts = [" ".join(p.split()) for p in re.split(r"[\n\r,;]+", text)]
    parts = [p for p in parts if p]
    line = ", ".join(parts)
    if not MIN_LENGTH <= len(line) <= MAX_LENGTH:
        raise Unprocessable(
            f"postal_address must be {MIN_LENGTH} to {MAX_LENGTH} characters (it is {len(line)})"
        )
    if not MIN_PARTS <= len(parts) <= MAX_PARTS:
        raise Unprocessable(
            "postal_address must have a street (or PO box) and a town, on separate lines or"
            f" separated by commas ({MIN_PARTS} to {MAX_PARTS} parts; it has {len(parts)})"
        )
    if not any(c.isdigit() for c in line):
        raise Unprocessable("postal_address needs a street or box number, or a postcode")
    if _NOT_AN_ADDRESS.search(line):
        raise Unprocessable("postal_address must be a postal address, not a link or an email")
    return line
