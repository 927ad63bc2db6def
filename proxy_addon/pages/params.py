"""A request's parameters, each checked and bounded before anything reaches the store (else a 400 page)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rankstore.store import Ranking, RankingLevelError, RankingNotFound, Store
from rankstore.urls import canonical, host_of

from .layout import BadRequest, PagesUnranked

__all__ = ["first", "values", "number", "choice", "flag", "url_param", "target", "ranking", "page_ranking", "known"]

MAX_PARAM = 2048  # characters in any one parameter: the longest URL browsers and servers agree on
MAX_PARAMS = 16  # parameters in one request: well past what any page reads
MAX_PAGE = 10_000  # pages of a view: the deepest a person pages to by hand
PAGE_SIZE = 50  # rows on a page of any view
CSV_ROWS = 20_000  # rows in one download: within the deadline; the CLI's -n 0 gives them all
MAX_QUERY = 200  # characters in a search
MAX_WORDS = 8  # words in a search: each is one more FTS5 doclist to intersect
MAX_SINCE = 40  # characters of since=BUILD|DATE
MAX_TARGETS = 6  # targets of /compare (each is one more set of backlinks to read)
MAX_NOT = 4  # excluded targets of /compare: with the targets and the flags, within MAX_PARAMS

Query = Mapping[str, Sequence[str]]


def first(query: Query, key: str, default: str = "") -> str:
    found = query.get(key) or [default]
    return found[0]


def values(query: Query, key: str, most: int) -> list[str]:
    """Every non-blank value of a repeated parameter (a form's empty fields are left out), at most ``most``."""
    found = [value.strip() for value in query.get(key, ()) if value.strip()]
    if len(found) > most:
        raise BadRequest(f"At most {most} values of {key} can be given.")
    return found


def number(query: Query, key: str, default: int, low: int = 1, high: int = MAX_PAGE) -> int:
    text = first(query, key, str(default)).strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 9) or not low <= int(text) <= high:
        raise BadRequest(f"{key} must be a whole number from {low:,} to {high:,}.")
    return int(text)


def choice(query: Query, key: str, allowed: Sequence[str]) -> str:
    """One of ``allowed`` (the first is the default, also for an empty value)."""
    text = first(query, key).strip() or allowed[0]
    if text not in allowed:
        raise BadRequest(f"{key} must be one of: {', '.join(a for a in allowed if a)}.")
    return text


def flag(query: Query, key: str) -> bool:
    """``key=1`` (or ``on``, as a checkbox sends it) for yes; absent, empty or ``0`` for no."""
    return choice(query, key, ("0", "1", "on")) != "0"


def url_param(query: Query, key: str = "url") -> str | None:
    return canonical(first(query, key).strip() or None)


def target(value: str, whole_host: bool) -> tuple[str | None, str | None]:
    """(URL in normal form, None), or (None, host) for a whole site: as ``rankstore backlinks --host`` reads it."""
    value = value.strip()
    if whole_host:
        normal = canonical(value if "://" in value else f"http://{value}/") if value else None
        if normal is None:
            raise BadRequest("Give a host (as in URLs, with its port if any) or a URL of the site.")
        return None, host_of(normal)
    normal = canonical(value) if value else None
    if normal is None:
        raise BadRequest("Give an http(s) URL, or add host=1 for a whole site.")
    return normal, None


def known(query: Query, path: str, allowed: Sequence[str]) -> None:
    """A 400 for a parameter the page does not read: one it would ignore would leave the reader believing
    it had been applied (``ranking=`` most of all)."""
    unknown = sorted(key for key in query if key not in allowed)
    if unknown:
        raise BadRequest(
            f"{path} does not take {', '.join(key[:40] for key in unknown[:4])}; it takes: {', '.join(allowed)}."
        )


def ranking(query: Query, store: Store, default: str) -> Ranking:
    """The ranking ``ranking=`` names (the proxy's own by default), of any level; :class:`PagesUnranked` for
    the proxy's own where the store ranks no pages (the proxy checked at its start that it may be missing)."""
    name = first(query, "ranking").strip() or default
    try:
        return store.rankings.ranking(name)
    except RankingNotFound:
        if name == default:
            raise PagesUnranked() from None
        names = [found.name for found in store.rankings.all()]
        raise BadRequest(f"No ranking {name!r}; the store has: {', '.join(names) or 'none'}.") from None


def page_ranking(query: Query, store: Store, default: str) -> Ranking:
    """The ranking ``ranking=`` names, which must rank pages: a host ranking is refused in words."""
    chosen = ranking(query, store, default)
    try:
        return store.rankings.page_ranking(chosen.name)
    except RankingLevelError as problem:
        raise BadRequest(level_message(problem)) from None


def level_message(problem: RankingLevelError) -> str:
    """The refusal of a host ranking with the pages' cure: their parameter, and the page of its hosts."""
    instead = f"ranking={problem.page_rankings[0]}" if problem.page_rankings else "a page ranking"
    return problem.refusal(
        f"choose {instead}, or see /top?ranking={problem.ranking.name} for its {problem.ranking.level}s."
    )
