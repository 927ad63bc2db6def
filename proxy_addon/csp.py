"""Let the proxy's hashed <style> blocks through a Content-Security-Policy, weakening nothing.

``allow_style_hash(policy, *hashes)`` returns insertions ``(offset, text)`` into the
policy text: the hash sources are added to the directive that governs <style>
elements (``style-src-elem``, else ``style-src``), or, where only
``default-src`` restricts styles, a ``style-src`` with default-src's own
sources plus the hash is appended.  Nothing is removed.  A policy that already
allows inline styles (``'unsafe-inline'`` without nonces or hashes, which would
switch it off) or does not restrict styles is left alone.  A header may hold
several policies separated by commas; each is handled.
"""

from __future__ import annotations

import re

__all__ = ["allow_style_hash", "apply"]

_NONCE_OR_HASH = re.compile(r"'(nonce-|sha256-|sha384-|sha512-)", re.I)


def _split(text: str, separator: str, base: int = 0):
    start = 0
    for part in text.split(separator):
        yield base + start, part
        start += len(part) + 1


def allow_style_hash(policy: str, *hash_sources: str, html_attribute: bool = False) -> list[tuple[int, str]]:
    quote = "&#39;" if html_attribute else "'"
    token = " ".join(f"{quote}{hash_source}{quote}" for hash_source in hash_sources)
    edits: list[tuple[int, str]] = []
    for policy_start, one_policy in _split(policy, ","):
        directives: dict[str, tuple[int, str]] = {}
        for start, directive in _split(one_policy, ";", policy_start):
            words = directive.split()
            if words:
                name = words[0].lower()
                directives.setdefault(name, (start, directive))  # the first of a repeated directive counts
        for name in ("style-src-elem", "style-src", "default-src"):
            if name in directives:
                start, directive = directives[name]
                break
        else:
            continue  # styles are not restricted
        sources = directive.split()[1:]
        lowered = [source.lower() for source in sources]
        if "'unsafe-inline'" in lowered and not any(_NONCE_OR_HASH.match(s) for s in sources):
            continue  # inline styles already allowed; a hash would turn 'unsafe-inline' off
        if name == "default-src":
            kept = " ".join(s for s in sources if s.lower() != "'none'")
            value = f"{kept} {token}".strip()
            # ';' then the new directive, at the end of this policy's text
            tail = one_policy.rstrip()
            edits.append((policy_start + len(tail), ("" if tail.endswith(";") else ";") + f" style-src {value}"))
        else:
            end = start + len(directive.rstrip())
            edits.append((end, f" {token}"))
    return edits


def apply(policy: str, edits: list[tuple[int, str]]) -> str:
    pieces, previous = [], 0
    for offset, inserted in sorted(edits, key=lambda edit: edit[0]):
        pieces.append(policy[previous:offset])
        pieces.append(inserted)
        previous = offset
    pieces.append(policy[previous:])
    return "".join(pieces)
