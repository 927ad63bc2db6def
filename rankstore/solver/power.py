"""The paper's power iteration, its change iterated in float32 between float64 steps."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import product as _product
from .system import Result, _System

_REFRESH = 1e-3  # a float32 run ends once its change has shrunk this much below the last float64 step's
_NOISE = 1.001  # ... or once it stops shrinking by the damping factor: rounding noise


def _power(
    system: _System, tol: float, max_iter: int, start: np.ndarray, callback: Callable[[int, float], None] | None
) -> Result:
    """The paper's iteration x <- dMx + d(rank at sinks)D + (1-d)E, in mixed precision.

    Successive changes obey delta' = A delta for the linear part A of the
    iteration, so most steps iterate the change in float32 (the product then
    gathers from a vector half the size, which stays in cache more) and sum
    the changes of a float32 run in float32; a float64 step adds that sum to
    the scores, held in float64, and computes x' = A x + (1-d)E from the
    scores themselves.  Such a step starts each float32 run and ends the
    iteration: float32 rounding never accumulates across runs, and the
    stopping rule is the float64 iteration's, since the last step is a float64
    one whose L1 change is below ``tol``.  As ||A v||_1 <= d ||v||_1 for every
    v, a float32 change that stops shrinking by d is rounding noise: a float64
    step follows at once.  Without damping (d = 1) nothing pulls rounding
    errors back and every step is a float64 one.
    """
    damping, dangling_to = system.damping, system.dangling_to
    mixed = damping < 1
    product = _product._Product(system.graph, system.weighted, system.threads, scale=damping, single=mixed)
    try:
        n = product.n
        teleport = system.teleport if _uniform(system.teleport) else product.inner(system.teleport)
        x = product.inner(start)
        y = np.empty_like(x)
        scaled = np.empty_like(x)  # z = inverse·x, what a float64 step multiplies
        change = np.empty(n, dtype=np.float32)  # the last change, times inverse: what a float32 step multiplies
        following = np.empty_like(change)
        run = np.zeros(n, dtype=np.float32)  # the changes of the float32 steps since the last float64 step
        uniform_teleport = _uniform(teleport) or bool(np.all(teleport == teleport[0]))
        base = (1.0 - damping) * (teleport[0] if uniform_teleport else teleport)
        del teleport
        has_sinks = dangling_to is not None and product.has_sinks
        uniform_dangling = dangling_to is not None and bool(np.all(dangling_to == dangling_to[0]))
        if dangling_to is not None and not uniform_dangling:
            dangling_to = product.inner(dangling_to)

        mass = 0.0  # rank at sinks in the last change (set by each step)

        def spread(mass: float) -> float | np.ndarray:
            """The rank ``mass`` that sinks pass on, spread over the pages it goes to."""
            if not has_sinks or dangling_to is None:
                return 0.0
            return damping * mass * (dangling_to[0] if uniform_dangling else dangling_to)

        def sinks_mass(vector: np.ndarray) -> float:
            return product.sinks_sum(vector, 0, n) if has_sinks else 0.0

        def settle() -> None:
            """Add the float32 steps' changes to the scores."""
            if mixed:
                np.add(x, run, out=x)
                run[:] = 0

        def double_step() -> float:
            nonlocal mass
            settle()
            product.scaled(x, scaled)
            product(scaled, y, base + spread(sinks_mass(x)))
            np.subtract(y, x, out=y)  # the change
            np.add(x, y, out=x)
            mass = sinks_mass(y)
            if mixed:
                change[:] = y
                product.scale_in_place(change)
            return _product._l1(y)

        def single_step() -> float:
            nonlocal mass
            spreads = spread(mass)
            fill = np.float32(spreads) if isinstance(spreads, float) else spreads.astype(np.float32)
            new = following

            def add(start: int, stop: int) -> tuple[float, float]:
                """Add the block's change to the run's; its L1 norm and its sinks' share; scale it for the next step.

                One pass, a cache-sized piece at a time: each piece of the
                change is read from memory once for all four.
                """
                l1 = at_sinks = 0.0
                scratch = np.empty(min(stop - start, _product._PIECE), dtype=np.float32)
                for lo in range(start, stop, _product._PIECE):
                    hi = min(lo + _product._PIECE, stop)
                    piece, part = new[lo:hi], scratch[: hi - lo]
                    np.add(run[lo:hi], piece, out=run[lo:hi])
                    np.abs(piece, out=part)
                    l1 += float(np.add.reduce(part))
                    if has_sinks:
                        at_sinks += product.sinks_sum(new, lo, hi)
                    product.scale_in_place(new, lo, hi)
                return l1, at_sinks

            parts = product(change, new, fill, after=add)
            mass = sum(part[1] for part in parts)
            return float(sum(part[0] for part in parts))

        mass = 0.0  # the rank at the sinks in the last change
        residuals: list[float] = []
        residual = previous = float("inf")
        level, exact = float("inf"), False
        for iteration in range(1, max_iter + 1):
            if (
                not mixed
                or not residuals
                or (
                    not exact
                    and (residual < tol or residual < level * _REFRESH or residual > damping * previous * _NOISE)
                )
            ):
                residual = level = double_step()
                exact = True
            else:
                previous = residual
                residual = single_step()
                change, following = following, change
                exact = False
            residuals.append(residual)
            if callback is not None:
                callback(iteration, residual)
            if exact and residual < tol:
                return Result(product.outer(x), iteration, residuals, True)
        settle()
        return Result(product.outer(x), max_iter, residuals, False)
    finally:
        product.close()


def _uniform(vector: np.ndarray) -> bool:
    """Whether a vector is one value broadcast (a uniform rank source, see :func:`.system._normalised`)."""
    return len(vector) > 0 and vector.strides == (0,)
