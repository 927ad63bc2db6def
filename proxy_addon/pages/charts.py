"""Pictures for the own pages, drawn here as SVG: no script, no style attribute, nothing fetched.

The own pages' policy allows no script, no image source and only their hashed style, so a chart is inline
SVG markup drawn by presentation attributes alone.  Its text and axes are drawn in ``currentColor`` (the
page's text colour, light or dark), its marks in mid-tone colours that read on either background.  Every
chart says what it shows in its ``<title>`` and ``<desc>`` (read by screen readers, shown as a tooltip), and
the page that holds it links to its numbers as CSV.  Every text from the store goes through :func:`escape`.

Each function takes plain sequences and returns the ``<svg>`` element as a string.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..markup import escape

__all__ = ["Bar", "changes_over_builds", "place_over_versions", "bars", "columns"]

WIDTH = 640  # the viewBox's width; the page's style scales a chart down to the column's width
NEW, LOST, LINE = "#2e9e52", "#d1493f", "#3a7fc4"  # mid tones: they read on a light page and a dark one
_LEFT, _RIGHT, _TOP = 56, 16, 58  # margins: the value axis's labels, the last label's overhang, title and legend
_FONT = 'font-family="system-ui,sans-serif" font-size="12"'
_ids = itertools.count(1)


@dataclass(frozen=True)
class Bar:
    """One bar of :func:`bars` or :func:`columns`: its label and its value."""

    label: str
    value: float


def _frame(title: str, description: str, height: int, inner: list[str]) -> str:
    number = next(_ids)
    return (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="chart{number}t chart{number}d">'
        f'<title id="chart{number}t">{escape(title)}</title><desc id="chart{number}d">{escape(description)}</desc>'
        f'<text x="0" y="16" fill="currentColor" {_FONT} font-weight="bold">{escape(title)}</text>'
        + "".join(inner)
        + "</svg>"
    )


def _ticks(most: float) -> list[float]:
    """Round values from 0 to at least ``most`` for an axis of counts: 0, then steps of 1, 2 or 5 times a power
    of ten (a whole number at least), 3 to 6 of them."""
    if most <= 0:
        return [0.0, 1.0]
    raw = most / 4
    power = 10 ** math.floor(math.log10(raw))
    step = max(next(power * factor for factor in (1, 2, 5, 10) if power * factor >= raw), 1)
    return [step * index for index in range(int(math.ceil(most / step)) + 1)]


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"


def _counted(value: float, unit: str) -> str:
    """``value`` and its unit, singular for one ("1 page", "2 pages")."""
    return f"{_number(value)} {unit[:-1] if value == 1 and unit.endswith('s') else unit}"


def _text(x: float, y: float, text: str, anchor: str = "middle", extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="currentColor" {_FONT}{extra}>{escape(text)}</text>'
    )


def _rule(x1: float, y1: float, x2: float, y2: float, opacity: float = 0.25) -> str:
    return (
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="currentColor" '
        f'stroke-opacity="{opacity}"/>'
    )


def _slots(count: int) -> tuple[float, float]:
    """(left edge, width) of ``count`` equal slots across the plot."""
    width = (WIDTH - _LEFT - _RIGHT) / max(count, 1)
    return _LEFT, width


def changes_over_builds(
    title: str, builds: Sequence[str], totals: Sequence[int], new: Sequence[int], lost: Sequence[int], unit: str
) -> str:
    """``unit`` (referring hosts, sites) over builds: the count at each build as a line, and below it what each
    build found new (bars up) and lost (bars down)."""
    count = len(builds)
    top_height, bottom_height, gap = 120, 90, 34
    height = _TOP + top_height + gap + bottom_height + 22
    left, slot = _slots(count)
    centres = [left + slot * (index + 0.5) for index in range(count)]
    inner: list[str] = []
    # the totals, with their axis
    ticks = _ticks(max(totals, default=0))
    scale = top_height / ticks[-1]

    def at(value: float) -> float:
        return _TOP + top_height - value * scale

    for tick in ticks:
        inner += [
            _rule(left, at(tick), WIDTH - _RIGHT, at(tick), 0.15),
            _text(left - 6, at(tick) + 4, _number(tick), "end"),
        ]
    points = " ".join(f"{x:.1f},{at(value):.1f}" for x, value in zip(centres, totals))
    if count > 1:
        inner.append(f'<polyline points="{points}" fill="none" stroke="{LINE}" stroke-width="2"/>')
    for x, value in zip(centres, totals):
        inner += [
            f'<circle cx="{x:.1f}" cy="{at(value):.1f}" r="3.5" fill="{LINE}"/>',
            _text(x, at(value) - 7, _number(value)),
        ]
    # new (up) and lost (down) about a baseline
    base_top = _TOP + top_height + gap
    most = max(max(new, default=0), max(lost, default=0), 1)
    half = bottom_height / 2
    baseline = base_top + half
    inner.append(_text(left - 6, base_top + 4, f"+{_number(most)}", "end"))
    inner.append(_text(left - 6, base_top + bottom_height + 4, f"-{_number(most)}", "end"))
    inner.append(_rule(left, baseline, WIDTH - _RIGHT, baseline, 0.5))
    width = min(slot * 0.35, 28)
    for x, up, down, build in zip(centres, new, lost, builds):
        if up:
            h = max(half * up / most, 1.0)
            inner.append(
                f'<rect x="{x - width:.1f}" y="{baseline - h:.1f}" width="{width:.1f}" height="{h:.1f}" '
                f'fill="{NEW}"><title>{escape(f"build {build}: {up:,} new")}</title></rect>'
            )
        if down:
            h = max(half * down / most, 1.0)
            inner.append(
                f'<rect x="{x:.1f}" y="{baseline:.1f}" width="{width:.1f}" height="{h:.1f}" '
                f'fill="{LOST}"><title>{escape(f"build {build}: {down:,} lost")}</title></rect>'
            )
        inner.append(_text(x, base_top + bottom_height + 18, f"build {build}"))
    inner.append(  # the legend, under the title
        f'<rect x="0" y="24" width="10" height="10" fill="{LINE}"/>'
        + _text(14, 33, unit, "start")
        + f'<rect x="140" y="24" width="10" height="10" fill="{NEW}"/>'
        + _text(154, 33, "new", "start")
        + f'<rect x="200" y="24" width="10" height="10" fill="{LOST}"/>'
        + _text(214, 33, "lost", "start")
    )
    description = "; ".join(
        f"build {build}: {total:,} {unit}, {up:,} new, {down:,} lost"
        for build, total, up, down in zip(builds, totals, new, lost)
    )
    return _frame(title, description, height, inner)


def place_over_versions(title: str, versions: Sequence[str], places: Sequence[int | None], nodes: Sequence[int]) -> str:
    """A target's place (1 is the best) over ranking versions, the best at the top, on a log scale so that
    a move from 2nd to 1st shows as well as one from 2,000th to 1,000th; a version without it is a gap."""
    count = len(versions)
    plot_height = 150
    height = _TOP + plot_height + 30
    left, slot = _slots(count)
    known = [place for place in places if place]
    worst = max(max(known, default=1), 2)
    span = math.log10(worst) * 1.1 or 1.0

    def at(place: float) -> float:
        return _TOP + 8 + (plot_height - 16) * math.log10(place) / span

    inner: list[str] = []
    tick = 1
    while tick <= worst * 1.26:
        inner += [
            _rule(left, at(tick), WIDTH - _RIGHT, at(tick), 0.15),
            _text(left - 6, at(tick) + 4, f"#{tick:,}", "end"),
        ]
        tick *= 10
    centres = [left + slot * (index + 0.5) for index in range(count)]
    run: list[str] = []
    for x, place in zip(centres, places):
        if place:
            run.append(f"{x:.1f},{at(place):.1f}")
        elif run:
            inner.append(f'<polyline points="{" ".join(run)}" fill="none" stroke="{LINE}" stroke-width="2"/>')
            run = []
    if len(run) > 1:
        inner.append(f'<polyline points="{" ".join(run)}" fill="none" stroke="{LINE}" stroke-width="2"/>')
    for x, place, version, of in zip(centres, places, versions, nodes):
        if place:
            inner += [
                f'<circle cx="{x:.1f}" cy="{at(place):.1f}" r="3.5" fill="{LINE}">'
                f"<title>{escape(f'version {version}: #{place:,} of {of:,}')}</title></circle>",
                _text(x, at(place) - 7, f"#{place:,}"),
            ]
        inner.append(_text(x, _TOP + plot_height + 20, f"v{version}"))
    description = "; ".join(
        f"version {version}: " + (f"#{place:,} of {of:,}" if place else "not ranked")
        for version, place, of in zip(versions, places, nodes)
    )
    return _frame(title, description, height, inner)


def bars(title: str, rows: Sequence[Bar], unit: str, label_width: int = 220) -> str:
    """Horizontal bars, one a row, longest first as given (the anchor texts of a target's links): a label
    cut to fit at the left, the value at the bar's end."""
    row_height = 20
    height = _TOP + row_height * max(len(rows), 1) + 6
    most = max((row.value for row in rows), default=0) or 1
    room = WIDTH - label_width - 70
    inner: list[str] = []
    for index, row in enumerate(rows):
        y = _TOP + index * row_height
        label = row.label if len(row.label) <= 34 else row.label[:33] + "\u2026"
        width = max(room * row.value / most, 1.0)
        inner += [
            _text(label_width - 8, y + 14, label or "(no text)", "end"),
            f'<rect x="{label_width}" y="{y + 3}" width="{width:.1f}" height="{row_height - 6}" fill="{LINE}">'
            f"<title>{escape(f'{row.label}: {_counted(row.value, unit)}')}</title></rect>",
            _text(label_width + width + 6, y + 14, _number(row.value), "start"),
        ]
    description = "; ".join(f"{row.label or '(no text)'}: {_counted(row.value, unit)}" for row in rows)
    return _frame(title, description or "nothing to show", height, inner)


def columns(title: str, rows: Sequence[Bar], unit: str) -> str:
    """Vertical bars over ordered labels (the referring pages by their toolbar score, 0 to 10): the shape of
    a link profile, each bar with its count above it."""
    plot_height = 130
    height = _TOP + plot_height + 40
    left, slot = _slots(len(rows))
    most = max((row.value for row in rows), default=0) or 1
    inner = [_rule(left, _TOP + plot_height, WIDTH - _RIGHT, _TOP + plot_height, 0.5)]
    for index, row in enumerate(rows):
        x = left + slot * index + slot * 0.15
        h = plot_height * row.value / most if row.value else 0.0
        if row.value:
            inner.append(
                f'<rect x="{x:.1f}" y="{_TOP + plot_height - max(h, 1.0):.1f}" width="{slot * 0.7:.1f}" '
                f'height="{max(h, 1.0):.1f}" fill="{LINE}"><title>{escape(f"{row.label}: {_counted(row.value, unit)}")}'
                "</title></rect>"
            )
        inner += [
            _text(x + slot * 0.35, _TOP + plot_height - h - 5, _number(row.value)),
            _text(x + slot * 0.35, _TOP + plot_height + 16, row.label),
        ]
    description = "; ".join(f"{row.label}: {_counted(row.value, unit)}" for row in rows)
    return _frame(title, description or "nothing to show", height, inner)
