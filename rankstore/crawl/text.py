"""What ``rankstore crawl`` says as it goes and when it ends, as text, apart from the terminal."""

from __future__ import annotations

from .run import CrawlOptions, CrawlProgress, CrawlReport

__all__ = ["crawl_progress_line", "crawl_lines", "crawl_failure"]


def crawl_progress_line(state: CrawlProgress) -> str:
    rate = state.fetched / state.seconds if state.seconds > 0 else 0.0
    return (
        f"crawling: {state.resumed + state.fetched:,} pages ({rate:.1f}/s), {state.queued:,} queued, "
        f"{state.refused:,} refused by robots.txt, {state.failed:,} failed, {state.rankings:,} rankings, "
        f"{state.loaded:,} segments loaded"
    )


def crawl_lines(report: CrawlReport, options: CrawlOptions) -> list[str]:
    state = report.progress
    earlier = f" ({state.resumed:,} fetched before, resumed)" if state.resumed else ""
    lines = [
        f"crawled {state.fetched:,} pages in {state.seconds:.1f} s{earlier}; stopped: {report.stopped.value}",
        f"refused by robots.txt: {state.refused:,}; failed: {state.failed:,}"
        + (f" (the first: {state.first_failure})" if state.first_failure else "")
        + f"; still queued: {state.queued:,}",
        f"WARC: {len(report.segments)} new segment(s) in {options.folder}",
    ]
    if options.store_path is not None:
        lines.append(f"store: {options.store_path} ({state.loaded} segment(s) loaded by this run)")
    return lines


def crawl_failure(report: CrawlReport) -> str | None:
    """Why a run that fetched nothing it tried to fetched nothing (every fetch failed, or robots.txt refused
    every URL); None for a run that fetched a page, or had nothing left to fetch."""
    state = report.progress
    if state.fetched or not (state.failed or state.refused):
        return None
    if state.failed:
        return f"no page fetched: every fetch failed ({state.failed:,}); the first: {state.first_failure}"
    return f"no page fetched: robots.txt refused every URL tried ({state.refused:,})"
