"""Who the own pages answer, and the host they answer to: pure functions the addon's hooks follow.

The own pages read the store: a page's status and size say whether a URL is
in it, and with ``--record`` that is the user's browsing.  The person at the
screen may read them; another site's page must learn nothing, yet it can make
the browser ask for any URL of ours as an image, a script, a stylesheet, a
prefetch or a frame and watch the load and error events.  So a request that
another site's page made (Fetch Metadata: ``Sec-Fetch-Site`` neither ``none``
nor ``same-origin``, ``Sec-Fetch-Dest`` not ``document``) gets one answer
(:func:`other_site`), the same status and bytes whatever it asks and whatever
the store holds; and every answer of ours carries :data:`OWN_ONLY_HEADERS`,
which keep the browser from handing it to another site's page or frame.

What stays open, and why: a typed URL (``Sec-Fetch-Site: none``), a link
within the own pages (``same-origin``), a link from a page's panel (a
cross-site navigation of the top-level window, ``Sec-Fetch-Dest: document``:
the opener cannot read another origin's window), and a client that sends no
Fetch Metadata at all (curl, scripts; and browsers, which send it only to
potentially trustworthy URLs, so not to ``http://pagerank.proxy``), which
is answered as ever, unless it says it prefetches (``Sec-Purpose``, a header
no page's script can set or drop).
"""

from __future__ import annotations

import enum

from ..markup import PROXY_HOST
from .layout import HEADERS, error

__all__ = ["Asker", "asker", "is_reserved", "other_site", "OWN_ONLY_HEADERS"]


class Asker(enum.Enum):
    """Who a request to the own pages comes from, as far as the browser says."""

    PERSON = "person"  # a navigation the person made (typed, a link followed), or a client without Fetch Metadata
    OTHER_SITE = "other site"  # a subresource or frame another site's page asked for, or a prefetch


# Sec-Fetch-Site values of a request the own pages themselves, or the person, started
_OURS = frozenset(("none", "same-origin"))

# Beside the pages' own headers, on every answer (errors and downloads too): a browser hands the answer to no
# other origin's page (an <img>, a <script>, a fetch in no-cors mode are blocked before their load event can
# tell one answer from another) and shows it in no frame.
OWN_ONLY_HEADERS = {"Cross-Origin-Resource-Policy": "same-origin", "X-Frame-Options": "DENY"}


def asker(site: str | None, destination: str | None, purpose: str | None = None) -> Asker:
    """Who asked, from the request's ``Sec-Fetch-Site``, ``Sec-Fetch-Dest`` and ``Sec-Purpose`` (None: absent).

    Without ``Sec-Fetch-Site`` the request carries no Fetch Metadata and is the person's, as it always was,
    unless it is a prefetch: a prefetch is never a navigation the person made, and its load and error events are
    what another site reads.  (A browser's own prefetch or prerender gets the refusal, a 403, which it drops:
    the person's navigation then asks again.)
    """
    if site is not None and site.strip().lower() in _OURS:
        return Asker.PERSON
    if purpose is not None and "prefetch" in purpose.lower():
        return Asker.OTHER_SITE
    if site is None:
        return Asker.PERSON
    # another site's page: only its top-level navigation is the person's (a link of the panel)
    if destination is not None and destination.strip().lower() == "document":
        return Asker.PERSON
    return Asker.OTHER_SITE


def is_reserved(authority: str | None) -> bool:
    """Does ``authority`` (a host, or a Host header's ``host:port``) name the own pages' host, in any spelling
    a client may send: any case, a trailing dot (the absolute name), any port or none?  Such a request is
    answered by the proxy and never forwarded: its query holds what the person asked the store."""
    if not authority:
        return False
    name = authority.strip()
    if name.startswith("["):  # an IPv6 literal: no name at all
        return False
    # a host name has no colon; what follows one is a port (an unbracketed IPv6 literal leaves no name)
    name = name.partition(":")[0]
    return name.rstrip(".").lower() == PROXY_HOST


_REFUSAL_STATUS, _, _REFUSAL_BODY = error(
    403, "The PageRank proxy's pages answer only the person at the screen: open http://pagerank.proxy/ yourself."
)


def other_site() -> tuple[int, dict, bytes]:
    """(status, headers, body), as :func:`~proxy_addon.pages.respond` gives: the one answer to every request
    another site makes, whatever it asks and whatever the store holds (made of constants alone)."""
    return _REFUSAL_STATUS, {**HEADERS, **OWN_ONLY_HEADERS}, _REFUSAL_BODY
