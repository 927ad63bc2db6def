"""The figure of ``rankstore stats --plot``: a ranking's convergence (the paper's Figure 4) and its distribution.

matplotlib is imported here only, when a figure is asked for, so that the
CLI answers ``--help`` and every other command without it.
"""

from __future__ import annotations

import numpy as np

from .store import Ranking
from .store.history import TargetHistory

__all__ = ["stats_figure", "history_figure"]


def stats_figure(ranking: Ranking, scores: np.ndarray, history: Ranking | None, path: str) -> list[str]:
    """Write a PNG to ``path``: the L1 residual per iteration on a log axis, beside the scores (best first) on
    log-log axes.  ``history`` is the newest version with a convergence history to draw
    (``Store.rankings.ranking_with_history``), None when there is none.  Returns the lines to say beside the figure:
    whose convergence it draws when not the ranking's own, and the file written."""
    import matplotlib

    matplotlib.use("Agg")  # no display: a file is written
    import matplotlib.pyplot as plt

    said = []
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    title = "Convergence (cf. paper, Figure 4)"
    if history is None:
        said.append(f"convergence: no version of {ranking.name} has a history of two residuals or more to plot")
        left.text(0.5, 0.5, "no convergence history", ha="center", va="center", transform=left.transAxes)
    else:
        steps = [(i, r) for i, r in enumerate(history.residuals, 1) if r > 0]  # a log axis has no 0
        left.semilogy([i for i, _ in steps], [r for _, r in steps], marker=".")
        if history.version != ranking.version:
            title = f"Convergence of {history.label} (cf. paper, Figure 4)"
            warm = f" from a warm start on v{ranking.params['warm_from']}" if ranking.params.get("warm_from") else ""
            said.append(
                f"convergence: plotted {history.label} ({history.iterations} iterations); "
                f"{ranking.label} has no history to plot ({ranking.iterations} iterations{warm})"
            )
    left.set(xlabel="iteration", ylabel="L1 residual", title=title)
    left.grid(True, which="both", alpha=0.3)
    right.loglog(np.arange(1, len(scores) + 1), scores, marker=".", linestyle="none", markersize=2)
    right.set(xlabel="rank", ylabel="PageRank", title="Rank distribution")
    right.grid(True, which="both", alpha=0.3)
    figure.suptitle(f"{ranking.name} v{ranking.version}: {ranking.pages:,} pages")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)  # pyplot keeps every figure until closed
    said.append(f"wrote {path}")
    return said


def history_figure(found: TargetHistory, path: str) -> list[str]:
    """Write ``rankstore history --plot``'s figure to ``path`` (PNG, or SVG by its extension): the referring
    hosts (of a page or host) or sites (of a site) over builds, with the new ones as bars above the axis and
    the lost ones below; and the target's place over its ranking's versions (best at the top).  Returns the
    lines to say."""
    import matplotlib

    matplotlib.use("Agg")  # no display: a file is written
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    kind = "sites" if found.level == "site" else "hosts"
    builds = [point.build for point in found.builds]
    held = [getattr(point, f"referring_{kind}") for point in found.builds]
    new = [getattr(point, f"new_{kind}") for point in found.builds]
    lost = [-getattr(point, f"lost_{kind}") for point in found.builds]
    left.bar(builds, new, color="tab:green", label=f"new {kind}")
    left.bar(builds, lost, color="tab:red", label=f"lost {kind}")
    left.plot(builds, held, marker="o", color="tab:blue", label=f"referring {kind}")
    left.axhline(0, color="grey", linewidth=0.8)
    left.set(xlabel="build", ylabel=kind, title=f"Referring {kind} by build")
    if builds:
        left.set_xticks(builds)
    left.legend(loc="best", fontsize="small")
    left.grid(True, axis="y", alpha=0.3)
    ranked = [(point.version, point.place) for point in found.ranks if point.place is not None]
    if ranked:
        right.plot([v for v, _ in ranked], [p for _, p in ranked], marker="o", color="tab:purple")
        right.set_xticks([v for v, _ in ranked])
        places = [p for _, p in ranked]
        right.set_ylim(max(places) + 0.5, max(min(places) - 0.5, 0.5))  # the best place at the top
        right.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # places are whole: no 1.95
    else:
        right.text(0.5, 0.5, f"no version of {found.ranking} ranks it", ha="center", va="center",
                   transform=right.transAxes)  # fmt: skip
    right.set(xlabel=f"{found.ranking} version", ylabel="place (1 = best)", title="Rank by ranking version")
    right.grid(True, alpha=0.3)
    figure.suptitle(f"{found.level} {found.target}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)  # pyplot keeps every figure until closed
    return [f"wrote {path}"]
