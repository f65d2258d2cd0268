"""The parts of the soft engine's Newton loops that do not depend on the system: the residual scale and
convergence test, the inexact-Newton forcing of the linear solve, the negligible-step test and the
backtracking line search.

Both :class:`~.world_solver.SoftWorldSolver` (the engine) and the single-body reference
``SolverSoftImplicit`` (``tests/core/soft_reference.py``) call these, so the stopping rules and the globalisation
are written once. Velocities ``v`` are (N, 3) [m/s], Newton directions ``dv`` flat (3N,) [m/s]; the merit
of the line search is the incremental potential ``Phi`` [J] (Armijo) or the residual norm ``||r||`` [N s].
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .kernels_contact import axpy_velocity

DECREMENT_TOLERANCE = 1.0e-12
"""Newton also stops when the decrement ``dv^T A dv = -r . dv`` [J] falls below this fraction of the
potential's scale: Phi can then no longer decrease measurably in float64."""

ARMIJO_FRACTION = 1.0e-4
"""Sufficient decrease of the line searches: this fraction of the decrease the linear model predicts."""


def residual_scale(r_norm: float, step: float, weight: float) -> float:
    """The scale ``max(||r_0||, h ||M g||)`` [N s] that Newton's residual tolerance is relative to (``r_norm``
    the first residual norm, ``step`` the velocity-to-position factor h [s], ``weight`` ``||M g||`` [N])."""
    return max(r_norm, step * weight, 1.0e-300)


def linear_forcing(r_norm: float, r_scale: float, tolerance: float) -> float:
    """Relative tolerance of the inner linear solve (inexact Newton, Eisenstat–Walker flavour): loose far from
    the solution, ``max(tolerance, min(0.1, 0.1 sqrt(||r|| / r_scale)))``."""
    return max(tolerance, min(0.1, 0.1 * (r_norm / r_scale) ** 0.5))


def target_forcing(r_norm: float, target: float) -> float:
    """The loosest relative tolerance of the linear solve that still lets one Newton step reach the residual
    ``target`` [N s] from ``r_norm``: ``min(0.5, 0.5 target / r_norm)``. Solving tighter than this near the end
    of a solve (oversolving, Eisenstat & Walker 1996) buys accuracy the stopping test does not ask for."""
    return min(0.5, 0.5 * target / max(r_norm, 1.0e-300))


def negligible_step(v, dv, v_trial, velocity_tolerance: float, slope: float | None = None, phi_scale: float = 0.0):
    """Fill ``v_trial = v + dv``; True when the Newton correction is below ``velocity_tolerance`` [m/s] or, given
    the slope ``r . dv`` [J], the decrement ``-r . dv`` is below ``DECREMENT_TOLERANCE * phi_scale``: the caller
    then takes the full step and stops."""
    full = axpy_velocity(v, dv, 1.0, v_trial)
    if full <= velocity_tolerance:
        return True
    return slope is not None and -slope <= DECREMENT_TOLERANCE * phi_scale


def backtracking_line_search(
    v: np.ndarray,
    dv: np.ndarray,
    v_trial: np.ndarray,
    max_halvings: int,
    merit: Callable[[np.ndarray], float],
    sufficient: Callable[[float, float], bool],
) -> tuple[bool, float | None]:
    """Halve ``alpha`` from 1 until ``sufficient(alpha, merit(v + alpha dv))``, at most ``max_halvings`` trials.

    Returns ``(accepted, merit value)``; ``v_trial`` holds the last trial velocities.
    """
    alpha = 1.0
    for _ in range(max_halvings):
        axpy_velocity(v, dv, alpha, v_trial)
        value = merit(v_trial)
        if sufficient(alpha, value):
            return True, value
        alpha *= 0.5
    return False, None


def armijo_line_search(v, dv, v_trial, max_halvings: int, potential, phi: float, slope: float):
    """:func:`backtracking_line_search` on the potential with Armijo's rule
    ``Phi(v + alpha dv) <= Phi(v) + ARMIJO_FRACTION alpha (r . dv)``."""
    return backtracking_line_search(
        v, dv, v_trial, max_halvings, potential, lambda alpha, value: value <= phi + ARMIJO_FRACTION * alpha * slope
    )
