"""A directory of saved HTML pages, as ``wget --mirror`` lays them out.

With ``base_url`` the directory's root is that URL (``docs/a/b.html`` with base
``http://example.com/docs/`` is ``http://example.com/docs/a/b.html``).  Without
it, the top-level folders must be host names, as wget writes them
(``127.0.0.1:8000/index.html``).  Only ``.html``, ``.htm`` and ``.xhtml`` files
are read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from urllib.parse import quote

from . import Progress, Record, Skipped, SourceError

__all__ = ["read_html_dir", "check_html_dir", "html_files"]

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
MAX_FILE = 32 * 1024 * 1024
_HOST_DIR = re.compile(r"[A-Za-z0-9.\-]+(:\d+)?\Z")


def html_files(root: str) -> Iterator[os.DirEntry]:
    """HTML files below ``root`` in a stable (sorted) order."""
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
        subfolders = []
        for entry in entries:
            if entry.is_dir():
                subfolders.append(entry.path)
            elif entry.name.lower().endswith(HTML_SUFFIXES) and entry.is_file():
                yield entry
        stack.extend(reversed(subfolders))


def _url_for(root: str, path: str, base_url: str | None) -> str:
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    if base_url is not None:
        return base_url.rstrip("/") + "/" + quote(relative)
    host, _, rest = relative.partition("/")
    return f"http://{host}/{quote(rest)}"


def check_html_dir(root: str, base_url: str | None) -> None:
    """SourceError unless ``root`` is a directory whose URLs can be known."""
    if not os.path.isdir(root):
        raise SourceError(f"{root}: not a directory")
    if base_url is None:
        tops = [entry.name for entry in os.scandir(root) if entry.is_dir()]
        if not tops or not all(_HOST_DIR.match(name) and "." in name for name in tops):
            raise SourceError(
                f"{root}: top-level folders are not host names as wget --mirror writes them; "
                "give --base-url (the URL the directory was saved from)"
            )


def read_html_dir(
    root: str, base_url: str | None = None, progress: Progress | None = None
) -> Iterator[Record | Skipped]:
    check_html_dir(root, base_url)
    for entry in html_files(root):
        size = entry.stat().st_size
        where = entry.path
        try:
            if size > MAX_FILE:
                yield Skipped(where, f"file over {MAX_FILE // (1024 * 1024)} MiB")
            else:
                with open(entry.path, "rb") as handle:
                    body = handle.read()
                yield Record(_url_for(root, entry.path, base_url), where, 200, body, "text/html")
        except OSError as error:
            yield Skipped(where, f"cannot read: {error.strerror}")
        if progress is not None:
            progress(size)
