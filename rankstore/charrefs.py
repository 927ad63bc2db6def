"""Character references, read as the HTML standard's tokenizer reads them: in text and in attribute values.

:func:`html.unescape` reads named references as the standard does in text, but not every numeric one: it drops
a reference to a control character or a noncharacter (``&#6;``), which the standard keeps (a parse error, not a
change), and so does lexbor.  Here a numeric reference is read by the standard's table: NUL, a surrogate or a
number past U+10FFFF is U+FFFD, 0x80-0x9F are windows-1252's characters where it has one, and every other number
is its own character.  In an attribute value one rule more: a legacy named reference written without its
semicolon (``&copy``) is text, not a reference, when an ``=`` or an ASCII letter or digit follows it
(``?a=1&copy=2``).  The rewriter's scanner and the build's tokenizer (:mod:`rankstore.extract`) read with these.
"""

from __future__ import annotations

import html.entities
import re

__all__ = ["decode_attribute", "decode_text"]

_REFERENCE = re.compile(r"&(?:#[xX]([0-9A-Fa-f]+);?|#([0-9]+);?|([A-Za-z0-9]+;?))")
_LONGEST_ENTITY = max(map(len, html.entities.html5))
# the standard's numeric character reference end state: what 0x80-0x9F stand for (windows-1252's characters)
_C1 = {
    0x80: "\u20ac", 0x82: "\u201a", 0x83: "\u0192", 0x84: "\u201e", 0x85: "\u2026", 0x86: "\u2020", 0x87: "\u2021",
    0x88: "\u02c6", 0x89: "\u2030", 0x8A: "\u0160", 0x8B: "\u2039", 0x8C: "\u0152", 0x8E: "\u017d", 0x91: "\u2018",
    0x92: "\u2019", 0x93: "\u201c", 0x94: "\u201d", 0x95: "\u2022", 0x96: "\u2013", 0x97: "\u2014", 0x98: "\u02dc",
    0x99: "\u2122", 0x9A: "\u0161", 0x9B: "\u203a", 0x9C: "\u0153", 0x9E: "\u017e", 0x9F: "\u0178",
}  # fmt: skip


def _numeric(digits: str, base: int) -> str:
    digits = digits.lstrip("0")
    if len(digits) > 8:  # far past U+10FFFF (and never a number too long to read)
        return "\ufffd"
    number = int(digits or "0", base)
    if number == 0 or number > 0x10FFFF or 0xD800 <= number <= 0xDFFF:
        return "\ufffd"
    return _C1.get(number) or chr(number)


def _decode(match: re.Match[str], in_attribute: bool) -> str:
    if match.group(1) is not None:
        return _numeric(match.group(1), 16)
    if match.group(2) is not None:
        return _numeric(match.group(2), 10)
    candidate = match.group(3)[:_LONGEST_ENTITY]
    for length in range(len(candidate), 0, -1):
        name = candidate[:length]
        # the table's names without a semicolon are the legacy ones, the only ones that may omit it
        if name in html.entities.html5:
            following = match.string[match.start(3) + length : match.start(3) + length + 1]
            # in an attribute, a legacy reference followed by '=' or an alphanumeric is text (&section=2)
            if in_attribute and name[-1] != ";" and (following == "=" or following.isascii() and following.isalnum()):
                return match.group()
            return html.entities.html5[name] + match.group()[1 + length :]
    return match.group()


def _in_attribute(match: re.Match[str]) -> str:
    return _decode(match, True)


def _in_text(match: re.Match[str]) -> str:
    return _decode(match, False)


def decode_attribute(value: str) -> str:
    """An attribute value with its character references decoded as the HTML standard's tokenizer does."""
    return _REFERENCE.sub(_in_attribute, value) if "&" in value else value


def decode_text(value: str) -> str:
    """Text (data or RCDATA) with its character references decoded as the HTML standard's tokenizer does."""
    return _REFERENCE.sub(_in_text, value) if "&" in value else value
