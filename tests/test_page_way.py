"""The annotations never get in the page's way (issue 46, point 9), judged in headless Chromium on real pages:
postgresql-doc-15 (its footer's "Next" link at the window's bottom right) and a page of Debian's rust-doc
(tests/data/rustdoc: code examples whose "Run" links rustdoc hides until hovered, icon buttons of a fixed size).

Each page is browsed straight from its server and through a real pagerank-proxy, and what the person can reach
is compared: every control of the page stays where it was and clickable, with the panel closed and once it has
been opened and closed again; the page's last line can be scrolled into view, uncovered; a control of a fixed
size keeps its size and its icon's place; a link the page hides shows no bar; a link's accessible name starts
with its own text.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading

import pytest
import test_proxy_e2e
from barkit import panel_root
from selenium.webdriver.common.by import By

from conftest import POSTGRES_DOC, ROOT

RUSTDOC = os.path.join(ROOT, "tests", "data", "rustdoc")
# test_proxy_e2e's fixtures, by name: python3.11-doc's store ranked, a pagerank-proxy on it, Chromium through it
# and straight to the origins
ranked_store, proxy = test_proxy_e2e.ranked_store, test_proxy_e2e.proxy
proxied, direct = test_proxy_e2e.proxied, test_proxy_e2e.direct


def _serve(directory: str) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_Quiet, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def sites():
    if not os.path.isdir(POSTGRES_DOC):
        pytest.fail("postgresql-doc-15 is missing: run tools/setup.sh")
    servers = [_serve(RUSTDOC), _serve(POSTGRES_DOC)]
    yield {"rust": servers[0][1], "postgres": servers[1][1]}
    for server, _ in servers:
        server.shutdown()
        server.server_close()


# Every control of the page (links, buttons, form fields, summaries) that the person can see: scrolled to the
# top of the window in turn, is the element at its centre itself (or inside it)?  Its box, and whether it is
# reached, by document order.
CONTROLS = """
const out = [];
const controls = [...document.querySelectorAll('a[href], button, input, select, textarea, summary')];
for (const el of controls) {
  if (el.closest('[data-pagerank-bar]')) continue;
  el.scrollIntoView({block: 'start', inline: 'nearest'});
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1 || getComputedStyle(el).visibility !== 'visible') {
    out.push({tag: el.tagName, hidden: true});
    continue;
  }
  // the middle of the control's first line: a link that wraps has its text there
  const rects = el.getClientRects();
  const first = rects.length ? rects[0] : r;
  const x = first.left + Math.min(first.width / 2, 8), y = first.top + first.height / 2;
  const hit = document.elementFromPoint(x, y);
  out.push({tag: el.tagName, text: (el.textContent || '').trim().slice(0, 40), hidden: false,
            reached: !!hit && (hit === el || el.contains(hit))});
}
window.scrollTo(0, 0);
return out;
"""


def _controls(driver, url: str) -> list[dict]:
    driver.get(url)
    return driver.execute_script(CONTROLS)


def _covered(controls: list[dict]) -> list[str]:
    return [f"{c['tag']} {c.get('text')!r}" for c in controls if not c["hidden"] and not c["reached"]]


@pytest.mark.parametrize("page", ["rust:std/vec/index.html", "postgres:sql-select.html", "postgres:index.html"])
def test_every_control_of_the_page_stays_reachable_and_clickable(sites, proxied, direct, page):
    site, path = page.split(":")
    url = sites[site] + path
    plain = _controls(direct, url)
    shown = _controls(proxied, url)
    assert [c["tag"] for c in shown] == [c["tag"] for c in plain]  # no control added or taken
    assert _covered(shown) == _covered(plain)


def test_the_footers_next_link_and_the_last_line_are_clickable_with_the_panel_closed_opened_and_closed(sites, proxied):
    """postgresql-doc-15's footer "Next" link (sql-selectinto.html) sits at the window's bottom right once the
    page is scrolled to its end, where the collapsed panel used to cover it."""
    proxied.get(sites["postgres"] + "sql-select.html")
    reach_next = """
        window.scrollTo(0, document.documentElement.scrollHeight);
        const next = [...document.querySelectorAll('.navfooter a[accesskey=n]')][0];
        const r = next.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + 4, r.top + r.height / 2);
        const cells = document.querySelectorAll('.navfooter td');
        const last = cells[cells.length - 1].getBoundingClientRect();
        const lastHit = document.elementFromPoint(last.right - 4, last.top + last.height / 2);
        return {next: hit === next || next.contains(hit), inView: r.bottom <= innerHeight,
                last: last.bottom <= innerHeight && !!lastHit && cells[cells.length - 1].contains(lastHit)};
    """
    assert proxied.execute_script(reach_next) == {"next": True, "inView": True, "last": True}
    root = panel_root(proxied)
    root.find_element(By.CSS_SELECTOR, "label.tab").click()  # open it
    box = root.find_element(By.CSS_SELECTOR, ".box")
    assert box.size["height"] > 100  # open: the panel's box
    root.find_element(By.CSS_SELECTOR, "label.close").click()  # and close it
    assert not root.find_element(By.CSS_SELECTOR, ".box").is_displayed()
    assert proxied.execute_script(reach_next) == {"next": True, "inView": True, "last": True}
    # and the link takes the person where it says
    proxied.execute_script("document.querySelector('.navfooter a[accesskey=n]').click()")
    assert proxied.current_url.endswith("sql-selectinto.html")


ICON_BUTTONS = """
return ['#settings-menu a', '#settings-menu a img', '#help-button', '.sidebar .logo-container img']
  .map(selector => {
    const el = document.querySelector(selector);
    if (!el) return [selector, null];
    const r = el.getBoundingClientRect();
    return [selector, [r.x, r.y, r.width, r.height].map(v => Math.round(v * 10) / 10)];
  });
"""


def test_a_bar_never_changes_the_size_or_the_content_of_an_icon_button(sites, proxied, direct):
    url = sites["rust"] + "std/vec/index.html"
    direct.get(url)
    plain = direct.execute_script(ICON_BUTTONS)
    proxied.get(url)
    shown = proxied.execute_script(ICON_BUTTONS)
    assert all(box is not None for _, box in plain[:2]), plain
    assert shown == plain
    # the page gets no wider (a bar past the window's edge would make it scroll sideways)
    widths = "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    assert proxied.execute_script(widths) == direct.execute_script(widths)
    # the settings link's bar is there, out of the flow, letting clicks through to the icon
    icon = proxied.execute_script(
        "const b = document.querySelector('#settings-menu a [data-pagerank-bar]');"
        "return b && [b.hasAttribute('data-icon'), getComputedStyle(b).position, getComputedStyle(b).pointerEvents]"
    )
    assert icon == [True, "absolute", "none"]


def test_a_link_the_page_hides_shows_no_bar(sites, proxied):
    """rustdoc's "Run" links are visibility:hidden until their example is hovered: their bars with them."""
    proxied.get(sites["rust"] + "std/vec/index.html")
    seen = proxied.execute_script(
        """
        return [...document.querySelectorAll('a[href]')].map(a => {
          const bar = [...a.children].find(c => c.hasAttribute('data-pagerank-bar'));
          const shown = el => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
                                return r.width > 0 && r.height > 0 && s.visibility === 'visible'; };
          return {run: a.classList.contains('test-arrow'), link: shown(a), bar: bar ? shown(bar) : null,
                  text: a.textContent.trim().slice(0, 30),
                  target: a.protocol.startsWith('http') && a.href.split('#')[0] !== location.href.split('#')[0]};
        });
        """
    )
    runs = [one for one in seen if one["run"]]
    assert len(runs) == 5 and all(not one["link"] and one["bar"] is False for one in runs)
    assert all(one["bar"] in (None, False) for one in seen if not one["link"])  # no hidden link's bar shows
    # every link shown to another page has its bar shown (one within the page, or to javascript:, has none)
    unbarred = [one for one in seen if one["link"] and not one["bar"] and one["target"]]
    assert unbarred == [] and sum(1 for one in seen if one["link"] and one["bar"]) >= 15


def test_a_links_accessible_name_starts_with_its_own_text(sites, proxied):
    """A screen reader says the link's text first, then its bar's tooltip: the bar goes before </a>."""
    proxied.get(sites["postgres"] + "sql-select.html")
    texts = proxied.execute_script(
        "return [...document.querySelectorAll('a[href]')].slice(0, 60)"
        ".map(a => [a.href, a.textContent.replace(/\\s+/g, ' ').trim()]).filter(([, t]) => t)"
    )
    tree = proxied.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
    names = [
        node["name"]["value"].replace("\u00a0", " ")
        for node in tree
        if node.get("role", {}).get("value") == "link" and node.get("name", {}).get("value")
    ]
    checked = 0
    for _, text in texts:
        named = [name for name in names if name.startswith(text)]
        assert named, f"no link is named first by its text {text!r}: {names[:5]}"
        checked += 1
    assert checked >= 20
    # and the bar's tooltip follows the text in the name, so the score is still said
    assert any("PageRank" in name or "Not in the PageRank store" in name for name in names)


def test_the_panel_opens_and_closes_from_the_keyboard(sites, proxied):
    """Tab reaches the panel's tab first (its checkbox, named by the panel's summary), Space opens it, Tab goes
    through its links to its close box, Space closes it; the page's own links come next, as they came."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    proxied.get(sites["postgres"] + "sql-select.html")
    host = proxied.find_element(By.CSS_SELECTOR, "aside[data-pagerank-panel]")
    keys = ActionChains(proxied)
    keys.send_keys(Keys.TAB).perform()
    assert proxied.switch_to.active_element == host  # focus inside the closed shadow root: the page sees its host
    root = panel_root(proxied)
    opener = root.find_element(By.CSS_SELECTOR, "#pagerank-open")
    assert opener.get_attribute("aria-label").startswith("PageRank panel: ")
    keys.send_keys(Keys.SPACE).perform()
    box = root.find_element(By.CSS_SELECTOR, ".box")
    assert box.size["height"] > 100 and root.find_element(By.CSS_SELECTOR, ".body").is_displayed()
    links = len(root.find_elements(By.CSS_SELECTOR, ".body a"))
    for _ in range(links + 1):  # through the panel's links to its close box
        keys.send_keys(Keys.TAB).perform()
    assert proxied.execute_script("return document.activeElement") == host
    keys.send_keys(Keys.SPACE).perform()
    assert not root.find_element(By.CSS_SELECTOR, ".box").is_displayed()
    keys.send_keys(Keys.TAB).perform()
    first = proxied.execute_script("return document.querySelector('a[href]')")
    assert proxied.switch_to.active_element == first  # the page's first link, as without the panel


def test_a_link_of_the_panel_takes_the_person_to_the_proxys_own_page(proxied, python_doc_crawl):
    """The panel's links are in its closed shadow root, and navigate the window as any link does: the own page
    answers the person (a navigation), not as it answers another site's requests."""
    page = python_doc_crawl.base_url + "library/functions.html"
    proxied.get(page)
    root = panel_root(proxied)
    root.find_element(By.CSS_SELECTOR, "label.tab").click()
    root.find_element(By.LINK_TEXT, "This page").click()
    assert proxied.current_url.startswith("http://pagerank.proxy/page?url=")
    said = proxied.find_element(By.TAG_NAME, "body").text
    assert page in said and "PageRank" in said and "answer only the person" not in said


@pytest.mark.parametrize("path", ["/top?n=40", "/backlinks?url={page}"])
def test_the_own_pages_bars_line_up_whatever_the_numbers_beside_them(proxied, python_doc_crawl, path):
    """A score's text is as wide as its digits (0.0123, 4.56e-05): the bars of a column start at one place."""
    from urllib.parse import quote

    page = quote(python_doc_crawl.base_url + "library/index.html", safe="")
    proxied.get("http://pagerank.proxy" + path.format(page=page))
    lefts = proxied.execute_script(
        "return [...document.querySelectorAll('td.n > span[data-pagerank-bar]')]"
        ".map(bar => Math.round(bar.getBoundingClientRect().left))"
    )
    assert len(lefts) >= 10 and len(set(lefts)) == 1, lefts
