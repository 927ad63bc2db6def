"""The attacker of issue 46 (point 10): a small intranet site with one private page, two stores built from it
that differ only by that page, and a hostile page whose own script reads everything a page's script can
reach, to be browsed through ``pagerank-proxy`` in headless Chromium (tests/test_privacy_browser.py).

The site (origin ``site``, served from a folder by ``tools/sitecrawl.py --serve``):

* ``index.html``, ``about.html``, ``team.html``, ``news.html``: public pages linking to each other, and
  ``index.html`` and ``news.html`` to the attacker's page (so the attacker's URL is a link target in both
  stores, with backlinks in both);
* ``private/payroll.html``, titled "Payroll (confidential)": linked from no page of the site; it links to
  the attacker's page and to three public pages.  Store A's crawl starts at it as well as at the home page
  (the user browsed it); store B's starts at the home page only, so B lacks it and everything else is the same;
* ``unlisted.html``: served, but linked from no crawled page: a URL in neither store;
* ``guest/evil.html``: the attacker's page again, on the site's own origin (a page a guest may put on a wiki),
  linked from nothing, in neither store: the attacker who may ``fetch()`` the private page same-origin.

The attacker's origin (``evil``, another port of 127.0.0.1: another origin, and the usual case, any site the
user happens to visit): ``evil.html`` (the same script) and ``planted.html`` (what a page would like to
write into the user's record).  The browser's same-origin policy already keeps ``evil.html`` from reading
the site's pages, so whatever it learns about the payroll page it learns from the proxy.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass

PRIVATE_TITLE = "Payroll (confidential)"
OWN = "http://pagerank.proxy"


@dataclass(frozen=True)
class World:
    site: str  # http://127.0.0.1:PORT/ of the intranet site
    evil: str  # http://127.0.0.1:PORT/ of the attacker's origin
    site_dir: str
    evil_dir: str
    store_a: str  # with the private page
    store_b: str  # without it

    @property
    def private(self) -> str:
        return self.site + "private/payroll.html"

    @property
    def nowhere(self) -> str:
        return self.site + "unlisted.html"

    @property
    def attacker(self) -> str:
        return self.evil + "evil.html"

    @property
    def guest(self) -> str:
        return self.site + "guest/evil.html"

    @property
    def planted(self) -> str:
        return self.evil + "planted.html"

    def served(self, url: str) -> bytes:
        """The bytes the origin serves for ``url`` (one of the two origins' files)."""
        for base, folder in ((self.site, self.site_dir), (self.evil, self.evil_dir)):
            if url.startswith(base):
                with open(os.path.join(folder, url[len(base) :]), "rb") as file:
                    return file.read()
        raise KeyError(url)


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>\n"
    )


def write_site(site: str, evil: str, site_dir: str, evil_dir: str) -> None:
    """The site's pages and the attacker's, each origin's URL written into the other's pages."""
    attacker = evil + "evil.html"
    pages = {
        "index.html": _page(
            "Intranet home",
            '<ul><li><a href="about.html">About us</a></li><li><a href="team.html">The team</a></li>'
            f'<li><a href="news.html">News</a></li><li><a href="{attacker}">A page out there</a></li></ul>',
        ),
        "about.html": _page(
            "About us", '<p>We make things. <a href="index.html">Home</a>, <a href="team.html">the team</a>.</p>'
        ),
        "team.html": _page(
            "The team",
            '<p><a href="index.html">Home</a> <a href="about.html">About</a> <a href="news.html">News</a></p>',
        ),
        "news.html": _page(
            "News", f'<p><a href="index.html">Home</a>; see <a href="{attacker}">this page out there</a>.</p>'
        ),
        "unlisted.html": _page("Unlisted", '<p><a href="index.html">Home</a></p>'),
        "private/payroll.html": _page(
            PRIVATE_TITLE,
            "<p>Salaries for March. Do not share.</p>"
            f'<ul><li><a href="{attacker}">Vendor portal</a></li><li><a href="../team.html">Team</a></li>'
            '<li><a href="../about.html">About</a></li><li><a href="../news.html">News</a></li></ul>',
        ),
        "guest/evil.html": attacker_page(site, evil, site + "guest/evil.html"),
    }
    for name, text in pages.items():
        path = os.path.join(site_dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as file:
            file.write(text)
    with open(os.path.join(evil_dir, "evil.html"), "w") as file:
        file.write(attacker_page(site, evil, attacker))
    with open(os.path.join(evil_dir, "planted.html"), "w") as file:
        file.write(_page("Planted by a page", f'<p><a href="{site}unlisted.html">what the page wants ranked</a></p>'))


def crawl(site: str, evil: str, warc_base: str, folder: str, private: bool) -> str:
    """wget --mirror of the site into ``warc_base``.warc.gz, from its home page (and the private page, for
    store A); the attacker's origin is never fetched (wget would follow another port of the same host)."""
    starts = [site + "index.html"] + ([site + "private/payroll.html"] if private else [])
    command = [
        "wget", "--mirror", "--quiet", "-e", "robots=off",
        "--reject-regex", "^" + evil.replace(".", r"\.") + "|/guest/",
        f"--warc-file={warc_base}", "--no-warc-keep-log", "--directory-prefix", folder, *starts,
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode not in (0, 8):
        raise RuntimeError(f"wget failed ({result.returncode}): {result.stderr[-2000:]}")
    return warc_base + ".warc.gz"


# The attacker's script: everything a page's script can read, gathered after load and a settle, into
# window.__observed (a JSON string).  Nothing is normalised here; the test removes only what differs between
# two runs of the same store, and says what.
_SCRIPT = r"""
(() => {
const C = __CONFIG__;
const enc = encodeURIComponent;
const sleep = ms => new Promise(r => setTimeout(r, ms));
const own = {
  page_private: C.own + '/page?url=' + enc(C.private),
  backlinks_private: C.own + '/backlinks?url=' + enc(C.private),
  builds_private: C.own + '/builds?url=' + enc(C.private),
  compare_private: C.own + '/compare?target=' + enc(C.private),
  page_nowhere: C.own + '/page?url=' + enc(C.nowhere),
  backlinks_self: C.own + '/backlinks?url=' + enc(C.self),
};

function snapshot() {
  const all = [...document.querySelectorAll('*')];
  const index = new Map(all.map((e, i) => [e, i]));
  const rect = r => [r.x, r.y, r.width, r.height];
  const elements = all.map(el => {
    const cs = getComputedStyle(el);
    const style = {};
    for (let i = 0; i < cs.length; i++) style[cs[i]] = cs.getPropertyValue(cs[i]);
    const sr = el.shadowRoot;
    return {
      tag: el.tagName,
      parent: el.parentElement ? index.get(el.parentElement) ?? null : null,
      attributes: [...el.attributes].map(a => [a.name, a.value]),
      text: el.children.length ? null : el.textContent,
      childNodes: el.childNodes.length,
      rect: rect(el.getBoundingClientRect()),
      rects: [...el.getClientRects()].map(rect),
      offset: [el.offsetLeft, el.offsetTop, el.offsetWidth, el.offsetHeight,
               el.offsetParent ? index.get(el.offsetParent) ?? el.offsetParent.tagName : null],
      scroll: [el.scrollLeft, el.scrollTop, el.scrollWidth, el.scrollHeight],
      client: [el.clientLeft, el.clientTop, el.clientWidth, el.clientHeight],
      style,
      shadowRoot: sr ? {mode: sr.mode, html: sr.innerHTML} : null,
      defined: el.tagName.includes('-') ? customElements.get(el.localName) !== undefined : null,
      computedName: 'computedName' in el ? el.computedName : null,
      computedRole: 'computedRole' in el ? el.computedRole : null,
      checkVisibility: el.checkVisibility ? el.checkVisibility() : null,
    };
  });
  const sheets = [...document.styleSheets].map(s => {
    let rules;
    try { rules = [...s.cssRules].map(r => r.cssText); } catch (e) { rules = 'unreadable: ' + e.name; }
    return {href: s.href, owner: s.ownerNode ? s.ownerNode.tagName : null, disabled: s.disabled, rules};
  });
  const grid = [];
  for (let y = 0; y < innerHeight; y += 10) {
    const row = [];
    for (let x = 0; x < innerWidth; x += 10) {
      const e = document.elementFromPoint(x, y);
      row.push(e === null ? null : index.has(e) ? index.get(e) : e.tagName);
    }
    grid.push(row);
  }
  const de = document.documentElement;
  return {
    outerHTML: de.outerHTML,
    innerText: document.body.innerText,
    getHTML: typeof de.getHTML === 'function' ? de.getHTML({serializableShadowRoots: true}) : 'unsupported',
    elements, sheets, grid,
    adoptedStyleSheets: document.adoptedStyleSheets.length,
    viewport: [innerWidth, innerHeight, devicePixelRatio, de.scrollWidth, de.scrollHeight],
    title: document.title,
  };
}

async function grab(url, init) {
  try {
    const r = await fetch(url, init);
    let text;
    try { text = await r.text(); } catch (e) { text = 'unreadable: ' + e.name; }
    // the Date header is the only one that differs between two runs of the same store
    return {status: r.status, type: r.type, ok: r.ok, redirected: r.redirected, url: r.url,
            headers: [...r.headers].filter(([k]) => k !== 'date'), text};
  } catch (e) {
    return {error: e.name};
  }
}

function outcome(make, ms = 6000) {
  return new Promise(resolve => {
    const holder = document.getElementById('probes');
    let done = false;
    const el = make();
    const finish = what => {
      if (done) return;
      done = true;
      const extra = {};
      if (el.tagName === 'IMG') extra.natural = [el.naturalWidth, el.naturalHeight];
      if (el.tagName === 'IFRAME') {
        try { extra.frames = el.contentWindow.length; } catch (e) { extra.frames = 'throws ' + e.name; }
        try { extra.href = el.contentWindow.location.href; } catch (e) { extra.href = 'throws ' + e.name; }
        extra.contentDocument = el.contentDocument === null ? null : 'readable';
      }
      if (el.tagName === 'LINK' && el.sheet) {
        try { extra.rules = el.sheet.cssRules.length; } catch (e) { extra.rules = 'throws ' + e.name; }
      }
      resolve({event: what, ...extra});
    };
    el.addEventListener('load', () => finish('load'));
    el.addEventListener('error', () => finish('error'));
    setTimeout(() => finish('timeout'), ms);
    holder.appendChild(el);
  });
}

function element(tag, props) {
  return () => Object.assign(document.createElement(tag), props);
}

async function probes() {
  const holder = document.createElement('div');
  holder.id = 'probes';
  holder.style.cssText = 'position:absolute;left:-10000px;top:0;width:900px';
  document.body.appendChild(holder);
  const kinds = {
    img: url => element('img', {src: url}),
    script: url => element('script', {src: url}),
    prefetch: url => element('link', {rel: 'prefetch', href: url}),
    stylesheet: url => element('link', {rel: 'stylesheet', href: url}),
    iframe: url => element('iframe', {src: url}),
  };
  const jobs = [];
  const result = {};
  for (const [name, url] of Object.entries(own)) {
    result[name] = {};
    for (const [kind, make] of Object.entries(kinds)) {
      jobs.push(outcome(make(url)).then(o => { result[name][kind] = o; }));
    }
    jobs.push(grab(url, {mode: 'no-cors'}).then(o => { result[name]['fetch no-cors'] = o; }));
    jobs.push(grab(url).then(o => { result[name]['fetch cors'] = o; }));
  }
  await Promise.all(jobs);
  // what a page would write into the user's record, asked for alone (each answer the same from run to run)
  const planted = {fetch: await grab(C.planted), img: await outcome(element('img', {src: C.planted}))};
  return {own: result, planted};
}

// a page of the site in a frame: the guest page (same origin) reads the framed document whole, as it is
// allowed to; the attacker's page on another origin gets only the load event and the frame count
async function framed(url) {
  const frame = document.createElement('iframe');
  frame.style.cssText = 'width:800px;height:600px;border:0';
  const event = await new Promise(resolve => {
    frame.addEventListener('load', () => resolve('load'));
    frame.addEventListener('error', () => resolve('error'));
    setTimeout(() => resolve('timeout'), 8000);
    frame.src = url;
    document.getElementById('probes').appendChild(frame);
  });
  await sleep(300);
  const out = {event};
  try { out.frames = frame.contentWindow.length; } catch (e) { out.frames = 'throws ' + e.name; }
  const d = frame.contentDocument;
  out.document = d === null ? null : {
    outerHTML: d.documentElement.outerHTML,
    innerText: d.body ? d.body.innerText : null,
    elements: [...d.querySelectorAll('*')].map(el => {
      const r = el.getBoundingClientRect();
      return {tag: el.tagName, attributes: [...el.attributes].map(a => [a.name, a.value]),
              rect: [r.x, r.y, r.width, r.height], shadowRoot: el.shadowRoot ? el.shadowRoot.innerHTML : null};
    }),
  };
  return out;
}

async function observe() {
  await new Promise(r => (document.readyState === 'complete' ? r() : addEventListener('load', r)));
  await sleep(500);
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const out = {snapshot: snapshot()};
  out.fetchSelf = {};
  for (const mode of ['default', 'force-cache', 'no-cache', 'no-store']) {
    out.fetchSelf[mode] = await grab(location.href, {cache: mode});
  }
  out.fetchPrivate = {cors: await grab(C.private), 'no-cors': await grab(C.private, {mode: 'no-cors'})};
  out.fetchNowhere = await grab(C.nowhere, {mode: 'no-cors'});
  out.probes = await probes();
  out.framed = {private: await framed(C.private), nowhere: await framed(C.nowhere)};
  await sleep(300);
  // what the browser says it fetched, this document (its own sizes, encoded and decoded) first, less the
  // timings and how each came (transferSize 0 and deliveryType "cache" where the browser's cache answered,
  // which one of the page's concurrent requests for one URL finds first, from run to run of the same store)
  const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
  out.resources = entries.map(e => ({
    name: e.name, entryType: e.entryType, initiatorType: e.initiatorType, responseStatus: e.responseStatus,
    encodedBodySize: e.encodedBodySize, decodedBodySize: e.decodedBodySize,
    contentType: e.contentType, renderBlockingStatus: e.renderBlockingStatus,
    nextHopProtocol: e.nextHopProtocol,
  })).sort((a, b) => JSON.stringify(a) < JSON.stringify(b) ? -1 : 1);
  out.after = {frames: window.length, elements: document.querySelectorAll('*').length};
  out.head = {parsed: window.__parsed, attached: window.__attached, hijacked: window.__hijacked};
  window.__observed = JSON.stringify(out);
}
observe().catch(e => { window.__observed = JSON.stringify({failed: String(e && e.stack || e)}); });
})();
"""


# First thing in the attacker's <head>, before the parser reaches anything the proxy inserts: watch every
# element the parser adds (its tag and attributes, as created: its children may not all be parsed yet, and how
# far the parser got differs from run to run), and define custom elements of the names the proxy's markup has
# used, each attaching a shadow root of its own first (a declarative shadow root in an element that already
# has one stays a plain <template>, which any script reads); and count the shadow roots scripts attach.
_HEAD_SCRIPT = r"""
window.__parsed = [];
new MutationObserver(records => {
  for (const record of records) for (const node of record.addedNodes) {
    if (node.nodeType === 1) window.__parsed.push([node.tagName, [...node.attributes].map(a => [a.name, a.value])]);
  }
}).observe(document, {childList: true, subtree: true});
window.__attached = 0;
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) { window.__attached++; return attach.call(this, init); };
window.__hijacked = {};
for (const name of ['pagerank-bar', 'pagerank-fill', 'pagerank-panel']) {
  try {
    customElements.define(name, class extends HTMLElement {
      constructor() { super(); try { attach.call(this, {mode: 'open'}); } catch (e) {} }
    });
    window.__hijacked[name] = 'defined';
  } catch (e) { window.__hijacked[name] = 'throws ' + e.name; }
}
"""


def attacker_page(site: str, evil: str, self_url: str) -> str:
    config = {
        "own": OWN,
        "private": site + "private/payroll.html",
        "nowhere": site + "unlisted.html",
        "planted": evil + "planted.html",
        "self": self_url,
    }
    script = _SCRIPT.replace("__CONFIG__", json.dumps(config))
    links = (
        f'<li><a id="to-private" href="{site}private/payroll.html">a page</a></li>'
        f'<li><a id="to-about" href="{site}about.html">about</a></li>'
        f'<li><a id="to-team" href="{site}team.html">team</a></li>'
        f'<li><a id="to-nowhere" href="{site}unlisted.html">elsewhere</a></li>'
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><script>{_HEAD_SCRIPT}</script>'
        "<title>A harmless page</title>"
        "<style>body{font:16px/1.5 sans-serif;margin:20px}li{margin:8px 0}</style></head>"
        f"<body><h1>Links</h1><ul>{links}</ul><p>Nothing to see here.</p><script>{script}</script></body></html>\n"
    )


LINKS_ON_ATTACKER_PAGE = 4


def differences(a, b, path: str = "", found: list | None = None, most: int = 12) -> list[tuple[str, str, str]]:
    """Where two observations differ: (path, a's value, b's value), the first ``most``, values cut short."""
    found = [] if found is None else found
    if len(found) >= most:
        return found
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                found.append((f"{path}/{key}", _short(a.get(key, "<absent>")), _short(b.get(key, "<absent>"))))
            else:
                differences(a[key], b[key], f"{path}/{key}", found, most)
            if len(found) >= most:
                break
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            differences(x, y, f"{path}[{i}]", found, most)
            if len(found) >= most:
                break
    elif isinstance(a, str) and isinstance(b, str) and a != b:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        start = max(0, at - 60)
        found.append((f"{path}@{at}", repr(a[start : at + 140]), repr(b[start : at + 140])))
    elif a != b:
        found.append((path, _short(a), _short(b)))
    return found


def compared(a: dict, b: dict, each: int = 2) -> list[tuple[str, str, str]]:
    """:func:`differences` of two observations, at most ``each`` a part (the snapshot's and the probes' parts
    one by one), so that a failure shows every part that tells the stores apart."""
    found: list[tuple[str, str, str]] = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key, "<absent>"), b.get(key, "<absent>")
        if key in ("snapshot", "probes") and isinstance(x, dict) and isinstance(y, dict):
            for part in sorted(set(x) | set(y)):
                parts = (x.get(part, "<absent>"), y.get(part, "<absent>"))
                if isinstance(parts[0], dict) and isinstance(parts[1], dict):  # probes/own: by own page
                    for name in sorted(set(parts[0]) | set(parts[1])):
                        found += differences(parts[0].get(name), parts[1].get(name), f"/{key}/{part}/{name}", most=each)
                else:
                    found += differences(parts[0], parts[1], f"/{key}/{part}", most=each)
        else:
            found += differences(x, y, f"/{key}", most=each)
    return found


def _short(value) -> str:
    text = json.dumps(value)
    return text if len(text) < 300 else text[:300] + "..."


def said(found: list[tuple[str, str, str]], left: str = "A", right: str = "B") -> str:
    return "\n".join(f"{path}:\n    {left}: {a}\n    {right}: {b}" for path, a, b in found)
