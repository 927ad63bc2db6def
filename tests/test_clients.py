"""Which clients are shown the annotations (``proxy_addon.clients``): a browser only where it attaches closed
declarative shadow roots, whose content the page's script cannot read; any client that runs no page script."""

from __future__ import annotations

import pytest

from proxy_addon.clients import shows_annotations

SHOWN = [
    None,
    "",
    "curl/8.5.0",
    "Wget/1.21.3",
    "Python-urllib/3.11",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.8078.73 Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/111.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 "
    "Edg/120.0.0.0",
    "Mozilla/5.0 (X11; Linux x86_64; rv:123.0) Gecko/20100101 Firefox/123.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/16.4 Safari/605.1.15",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.2 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/119.0 "
    "Mobile/15E148 Safari/604.1",
]
NOT_SHOWN = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/110.0.0.0 Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:122.0) Gecko/20100101 Firefox/122.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/16.3 Safari/605.1.15",
    # Chrome's name on iOS is WebKit underneath: the OS's version decides
    "Mozilla/5.0 (iPhone; CPU iPhone OS 16_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/119.0 "
    "Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.1; Trident/6.0)",
    "Mozilla/5.0 (some new browser)",
]


@pytest.mark.parametrize("user_agent", SHOWN)
def test_browsers_that_attach_closed_shadow_roots_and_clients_without_page_scripts_are_shown(user_agent):
    assert shows_annotations(user_agent)


@pytest.mark.parametrize("user_agent", NOT_SHOWN)
def test_older_or_unknown_browsers_get_the_page_as_it_came(user_agent):
    assert not shows_annotations(user_agent)
