"""Which clients may be shown the annotations: those that keep them from the page's script.

The bars and the panel hold what they show in closed declarative shadow roots (``<template
shadowrootmode="closed">``: ``proxy_addon.markup``).  A browser that does not attach them keeps the template as
an ordinary element, whose content the page's script can read: such a browser must get the page as it came.
A browser says what it is in its User-Agent (every one starts it with ``Mozilla/``); a client that is not a
browser (curl, wget, a crawler, a library) runs no page script, so nothing can read what it is shown.

The engines and the first release of each that attaches declarative shadow roots as the HTML standard
writes them (``shadowrootmode``): Chromium 111 (Chrome, Edge, Opera, and headless), Firefox 123, Safari 16.4
(and every browser on iOS 16.4, all WebKit).  An unknown browser gets nothing: a leak is worse than no bars.
"""

from __future__ import annotations

import re

__all__ = ["is_browser", "shows_annotations"]

_CHROMIUM = re.compile(r"\b(?:Chrome|Chromium|HeadlessChrome|CriOS)/(\d+)")
_FIREFOX = re.compile(r"\bFirefox/(\d+)")
_IOS = re.compile(r"\bCPU (?:iPhone )?OS (\d+)_(\d+)")
_SAFARI = re.compile(r"\bVersion/(\d+)(?:\.(\d+))?.*\bSafari/")

FIRST_CHROMIUM = 111
FIRST_FIREFOX = 123
FIRST_WEBKIT = (16, 4)


def is_browser(user_agent: str | None) -> bool:
    """Does a client of this User-Agent header run the scripts of the pages it shows?"""
    return bool(user_agent) and user_agent.startswith("Mozilla/")  # type: ignore[union-attr]


def shows_annotations(user_agent: str | None) -> bool:
    """May a client of this User-Agent header be sent annotated pages (it attaches closed declarative
    shadow roots, or runs no page script)?"""
    if user_agent is None or not is_browser(user_agent):
        return True  # not a browser: no script of the page runs
    if (found := _IOS.search(user_agent)) is not None:  # every iOS browser is WebKit, whatever it names
        return (int(found.group(1)), int(found.group(2))) >= FIRST_WEBKIT
    if (found := _CHROMIUM.search(user_agent)) is not None:
        return int(found.group(1)) >= FIRST_CHROMIUM
    if (found := _FIREFOX.search(user_agent)) is not None:
        return int(found.group(1)) >= FIRST_FIREFOX
    if (found := _SAFARI.search(user_agent)) is not None:
        return (int(found.group(1)), int(found.group(2) or 0)) >= FIRST_WEBKIT
    return False
