"""The error bad input raises (one line naming file, field, value and what is allowed) and its did-you-mean hint.

CatalogError is a ValueError: the CLI and the app catch it at the edge and print its message, never a traceback.
It lives in core because records validate their own values (a calibration override, a parameter's range) as the
catalogue's files are validated.
"""

from __future__ import annotations

import difflib


class CatalogError(ValueError):
    """A catalogue file (or a value given for one) is malformed. The message names the file, the field and the
    problem."""


def did_you_mean(name: str, known) -> str:
    """' (did you mean 'x'?)' for the closest known names to a mistyped one, or ''."""
    close = difflib.get_close_matches(str(name), list(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
