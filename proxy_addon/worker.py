"""Page rewriting in worker processes, so it runs beside mitmproxy rather than under its GIL.

Each worker keeps one read-only store connection per (store, ranking) and is
handed the body, its Content-Type and URL; it returns the new body or None.
"""

from __future__ import annotations

from .ranks import Ranks
from .rewrite import annotate_bytes

__all__ = ["rewrite_page", "warm_up"]

_ranks: dict[tuple[str, str, int], Ranks] = {}


def _ranks_for(store: str, ranking: str, panel: int) -> Ranks:
    key = (store, ranking, panel)
    if key not in _ranks:
        _ranks[key] = Ranks(store, ranking, panel)
    return _ranks[key]


def warm_up(store: str, ranking: str, panel: int) -> bool:
    _ranks_for(store, ranking, panel)
    return True


def rewrite_page(store: str, ranking: str, panel: int, body: bytes, content_type: str | None,
                 url: str) -> tuple[bytes, int, int] | None:
    ranks = _ranks_for(store, ranking, panel)
    done = annotate_bytes(body, content_type, url, ranks.lookup, ranks.panel if panel else None)
    if done is None:
        return None
    new_body, rewrite = done
    return new_body, rewrite.links, rewrite.ranked
