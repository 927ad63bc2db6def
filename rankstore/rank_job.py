"""``rankstore rank`` as the library runs it: the rankings one run asks for, ranked and said in words.

:func:`plan_jobs` turns what was asked (:class:`RankRequest`: seeds given as
URLs or files, a topic per file) into the :class:`~rankstore.ranking.RankOptions`
of each ranking to write; :func:`run_jobs` ranks them over one graph, several
topics written all or none, and returns the line that says what each wrote.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace

from .ranking import LoadedGraph, RankingError, RankOptions, Seeds, Solver, Unchanged, VisitSource, read_seed_file
from .ranking import rank as run_rank
from .solver import ConvergenceError
from .store import Store

__all__ = ["RankRequest", "VISIT_NAMES", "JobError", "plan_jobs", "run_jobs", "graph_line", "written_line"]


class JobError(ValueError):
    """What was asked cannot be ranked: said against ``option`` (None: a clash of options)."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


@dataclass(frozen=True)
class RankRequest:
    """The rankings one ``rankstore rank`` asks for: ``options`` holds what they share (the solver's
    settings); the seeds say which kind (personalised, topics, TrustRank, BadRank, or none: PageRank)."""

    options: RankOptions
    name: str | None = None  # None: the kind's default name
    sources: tuple[str, ...] = ()
    source_roots: bool = False
    topics: tuple[str, ...] = ()  # NAME=FILE each
    trusted: str | None = None  # a seed file
    flagged: str | None = None  # a seed file
    good_fraction: float | None = None  # --trusted's Spam Mass scale; None: not given (the default)
    visits: VisitSource | None = None  # --source-visits (with its --since): E on your visits


VISIT_NAMES = {"page": "visits", "host": "hostvisits", "site": "sitevisits"}  # --source-visits' default names


def _seed_file(path: str, option: str) -> Seeds:
    """A seed file's URLs, each with its line; checked later, with the store."""
    try:
        return read_seed_file(path, option)
    except OSError as error:
        raise JobError(f"{path}: {error.strerror}", option) from error
    except UnicodeDecodeError as error:
        raise JobError(f"{path}: not UTF-8 text ({error.reason})", option) from error


def plan_jobs(request: RankRequest) -> list[RankOptions]:
    """The options of each ranking ``request`` writes: one, or one per topic."""
    common = request.options
    level = common.level
    seeded = (request.sources or request.source_roots, request.topics, request.trusted, request.flagged)
    if sum(bool(kind) for kind in seeded) + (request.visits is not None) > 1:
        raise JobError("choose one of --source/--source-roots, --source-visits, --topic, --trusted, --flagged")
    if not request.trusted and request.good_fraction is not None:
        raise JobError("--good-fraction is for --trusted (Spam Mass)")
    if request.visits is not None:  # E on the visits counted at the level: pages, hosts or sites alike
        return [replace(common, name=request.name or VISIT_NAMES[level], visits=request.visits)]
    if level != "page" and any(seeded):
        raise JobError(f"--level {level} ranks {level}s with a uniform rank source: no --source, --topic, --trusted")
    if request.topics:
        jobs: list[RankOptions] = []
        for topic in request.topics:
            topic_name, sep, path = topic.partition("=")
            if not sep or not topic_name or not path:
                raise JobError(f"{topic!r}: expected NAME=FILE", "--topic")
            if any(job.name == f"topic:{topic_name}" for job in jobs):
                raise JobError(f"topic {topic_name!r} is given twice", "--topic")
            jobs.append(replace(common, name=f"topic:{topic_name}", sources=_seed_file(path, "--topic")))
        return jobs
    if request.trusted:
        seeds = _seed_file(request.trusted, "--trusted")
        fraction = common.good_fraction if request.good_fraction is None else request.good_fraction
        return [replace(common, name=request.name or "trust", trusted=seeds, good_fraction=fraction)]
    if request.flagged:
        return [replace(common, name=request.name or "badrank", flagged=_seed_file(request.flagged, "--flagged"))]
    default = f"{level}rank" if level != "page" else "personalized" if seeded[0] else "pagerank"
    sources = Seeds.from_urls("--source", request.sources) if request.sources else None
    return [replace(common, name=request.name or default, sources=sources, source_roots=request.source_roots)]


def graph_line(loaded: LoadedGraph, level: str) -> str:
    return f"graph: {loaded.nodes_said(level)}, {loaded.graph.links:,} links (read in {loaded.seconds:.2f} s)"


def run_jobs(
    store: Store,
    jobs: list[RankOptions],
    loaded: LoadedGraph,
    solver: Solver | None,
    show: Callable[[str, int, float], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> list[str]:
    """Rank each job over ``loaded``; several are written all or none (one that fails leaves those ranked
    before it unwritten).  ``show`` hears each iteration (name, iteration, L1 residual), ``say`` the steps
    after them.  Returns a line a job saying what it wrote; RankingError when one does not converge."""
    together = len(jobs) > 1
    said = []
    with store.transaction() if together else contextlib.nullcontext():
        for number, options in enumerate(jobs, 1):

            def heard(iteration: int, residual: float, name: str = options.name) -> None:
                if show is not None:
                    show(name, iteration, residual)

            try:
                # the last job lets the graph go once it no longer needs it: its writing then has that memory
                outcome = run_rank(store, options, heard, loaded, solver, say, release=number == len(jobs))
            except ConvergenceError as error:
                written = ": no ranking of this run was written" if together else ""
                raise RankingError(f"{error} (raise --max-iter or --tol){written}") from error
            said.append(written_line(options, outcome, loaded))
    return said


def written_line(options: RankOptions, outcome, loaded: LoadedGraph) -> str:
    """What a ranked job says: the version written, its iterations and times, and what a warm start saved."""
    if isinstance(outcome, Unchanged):
        return outcome.message
    result = outcome.result
    warm = ""
    if outcome.warm_from is not None:
        saved = outcome.iterations_saved
        warm = f"; warm start from v{outcome.warm_from}"
        if saved is not None and saved > 0:
            warm += f": {saved} iterations saved against a cold start"
        elif saved is not None:  # a warm start far from the answer can take longer than a cold one
            warm += f": no iterations saved (a cold start took {outcome.cold_iterations})"
    return (
        f"ranked {options.name} v{outcome.ranking.version}: {loaded.nodes_said(options.level)} in "
        f"{result.iterations} iterations, L1 residual {result.residuals[-1]:.2e}, "
        f"{outcome.seconds:.2f} s, written in {outcome.write_seconds:.2f} s{warm}"
    )
