"""Character references in an attribute value, read as the HTML standard's tokenizer reads them there.

In text, :func:`html.unescape` reads them as the standard does.  In an attribute value one rule differs: a
legacy named reference written without its semicolon (``&copy``) is text, not a reference, when an ``=`` or an
ASCII letter or digit follows it (``?a=1&copy=2``).  The rewriter's scanner and the build's tokenizer
(:mod:`rankstore.extract`) read hrefs with this one function.
"""

from __future__ import annotations

import html
import html.entities
import re

__all__ = ["decode_attribute"]

_REFERENCE = re.compile(r"&(?:#[xX]([0-9A-Fa-f]+);?|#([0-9]+);?|([A-Za-z0-9]+;?))")
_LONGEST_ENTITY = max(map(len, html.entities.html5))


def _decode_reference(match: re.Match[str]) -> str:
    if match.group(3) is None:  # numeric: as the standard reads it (html.unescape follows it there)
        return html.unescape(match.group())
    candidate = match.group(3)[:_LONGEST_ENTITY]
    for length in range(len(candidate), 0, -1):
        name = candidate[:length]
        # the table's names without a semicolon are the legacy ones, the only ones that may omit it
        if name in html.entities.html5:
            following = match.string[match.start(3) + length : match.start(3) + length + 1]
            # in an attribute, a legacy reference followed by '=' or an alphanumeric is text (&section=2)
            if name[-1] != ";" and (following == "=" or following.isascii() and following.isalnum()):
                return match.group()
            return html.entities.html5[name] + match.group()[1 + length :]
    return match.group()


def decode_attribute(value: str) -> str:
    """An attribute value with its character references decoded as the HTML standard's tokenizer does."""
    return _REFERENCE.sub(_decode_reference, value) if "&" in value else value
