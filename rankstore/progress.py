"""What ``rankstore build`` says as it goes and when it ends, as data and text, apart from the terminal.

:class:`Meter` turns the build's :class:`~rankstore.build.BuildProgress`
into the steps of a progress bar (files when some sources are at URLs, whose
sizes are not known ahead; otherwise the bytes whose records are parsed, not
those read ahead of the parsers); :func:`progress_words` is the
bar's text; :func:`summary_lines` and :func:`skipped_lines` the report a
finished build prints.  The CLI only draws the bar and echoes the lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .build import BuildProgress, BuildReport, PlannedSource, total_size
from .output import human_bytes

__all__ = ["Meter", "Step", "progress_words", "summary_lines", "skipped_lines", "EXAMPLES_SHOWN"]

EXAMPLES_SHOWN = 10  # skipped records named with their location; the rest are counted by reason


@dataclass(frozen=True)
class Step:
    """A move of the bar: its length now (files can be found as listings are read) and how far it moves."""

    length: int
    advance: int


@dataclass
class Meter:
    """How a build's progress is measured: by files (``by_files``: some are at URLs) or by bytes read, out of
    ``total`` (0: nothing to measure against, no bar)."""

    by_files: bool
    total: int
    done: int = 0

    @classmethod
    def plan(cls, sources: Sequence[str], planned: Sequence[PlannedSource], quiet: bool) -> Meter:
        by_files = any(source.remote for source in planned)  # the size of a file at a URL is known as it comes
        if quiet:
            return cls(by_files, 0)
        try:
            files = sum(len(source.files) if source.files is not None else 1 for source in planned)
            return cls(by_files, files if by_files else total_size(sources))
        except OSError:
            return cls(by_files, 0)

    @property
    def shown(self) -> bool:
        return self.total > 0

    def step(self, state: BuildProgress) -> Step:
        """The bar's move for ``state``: an advance of 0 is a redraw (the counts moved without the input, as
        the last pages are parsed)."""
        moved = state.files if self.by_files else self._bytes_done(state)
        length = max(state.files_total if self.by_files else self.total, 1)
        advance, self.done = moved - self.done, moved
        return Step(length, advance)

    def _bytes_done(self, state: BuildProgress) -> int:
        """The bytes whose work is done: of a page source's, the share of the records read that are parsed
        (the readers run ahead of the parsers by a pool's work); a graph's links are stored as read.  Never
        back: reading ahead lowers the share, not the work done."""
        done = state.bytes_read if not state.read else state.bytes_read * min(state.pages, state.read) // state.read
        return max(done, self.done)


def progress_words(state: BuildProgress, seconds: float) -> str:
    """The progress bar's words: files and bytes read (when some are at URLs), pages and links so far, and the
    rate of what moves (links, for a graph)."""
    moving, unit = (state.links, "links") if state.graph else (state.pages, "pages")
    files = f"{state.files:,}/{state.files_total:,} files, {human_bytes(state.bytes_read)}, " if state.remote else ""
    return f"{files}{state.pages:,} pages, {state.links:,} links, {moving / max(seconds, 1e-9):,.0f} {unit}/s"


def summary_lines(report: BuildReport, store_path: str, sources: int) -> list[str]:
    """What a finished build says on stdout: what it loaded, how fast, and what it found."""
    rate = report.pages / report.seconds if report.seconds else 0
    lines = [f"build #{report.build_id} was cut short: continued"] if report.continued else []
    lines.append(
        f"built {store_path}: {report.pages:,} pages, {report.links:,} links from {sources} "
        f"source(s) in {report.seconds:.1f} s ({rate:,.0f} pages/s)"
    )
    for ranking in report.rankings:
        lines.append(
            f"loaded {ranking.label}: {ranking.params['nodes']:,} {ranking.level}s scored by "
            f"{ranking.params['source']} (not solved: Common Crawl's {ranking.params['measure']})"
        )
    if report.files_taken or report.files_before:
        before = (
            f"; {report.files_before:,} taken by an earlier build, not read again (--reread reads them)"
            if report.files_before
            else ""
        )
        lines.append(f"{report.files_taken:,} file(s) at URLs taken whole{before}")
    if report.gone:
        lines.append(f"{report.gone:,} page(s) found gone (404, 410): their links are lost as of this build")
    if report.older:
        lines.append(f"{report.older:,} capture(s) older than the store's copy of their page: kept as history")
    if report.visits:
        lines.append(f"{report.visits:,} view(s) from the proxy's record added")
    return lines


def skipped_lines(report: BuildReport) -> list[str]:
    """The records a build could not read (for stderr): counts by reason, then the first few with their
    location; none when every record was read."""
    if not report.skipped:
        return []
    lines = [f"skipped {report.skipped_total:,} record(s):"]
    lines += [f"  {count:>8,}  {reason}" for reason, count in report.skipped.most_common()]
    lines += [f"  at {example.where}: {example.reason}" for example in report.examples[:EXAMPLES_SHOWN]]
    return lines
