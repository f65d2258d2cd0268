"""Solvers of a dense local contact problem FC(W, q, μ) by name: the FCLIB command's and the solver study's entry.

Each name runs one of the dense kernels of :mod:`.dense` on ``u = W r + q`` and the result is judged by one common
merit, FCLIB's natural-map residual (:func:`.fclib.local_merit`), so methods with different stopping tests compare
on the same scale. Set-up code (the kernels are in :mod:`.dense`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..enums import RFactorStrategy
from .dense import solve_pgs_dense, solve_prox_dense, solve_prox_jacobi_dense
from .dense_splitting import BACKWARD, FORWARD, JACOBI, SYMMETRIC, solve_splitting_dense
from .fclib import LocalProblem, local_merit
from .friction_pivoting import friction_pivoting
from .global_newton import (
    solve_fischer_burmeister_cone_newton,
    solve_fischer_burmeister_newton,
    solve_min_map_newton,
    solve_prox_newton,
)
from .lemke import POLYHEDRAL_DIRECTIONS, solve_frictionless_lemke, solve_polyhedral_lemke
from .pivoting import block_principal_pivoting, incremental_pivoting
from .staggered import solve_staggered
from .subspace import solve_pgs_subspace

PROX_BACKOFF = {RFactorStrategy.GLOBAL: 0.9, RFactorStrategy.LOCAL: 0.5, RFactorStrategy.BLOCKED: 0.5}
"""PROX's r back-off factor ν per strategy (the values the FCLIB test problem converges with; BLOCKED the seed's)."""


@dataclass(frozen=True)
class LocalResult:
    """A solve: ``r`` (3m,) impulses, ``u`` (3m,) = W r + q, sweeps done, FCLIB's merit of ``r``, whether that merit
    reached the tolerance, wall time [s] (the first call of a method also compiles it)."""

    r: np.ndarray
    u: np.ndarray
    iterations: int
    merit: float
    converged: bool
    seconds: float


def _prox(strategy: RFactorStrategy, jacobi: bool = False) -> Callable:
    kernel = solve_prox_jacobi_dense if jacobi else solve_prox_dense

    def run(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray) -> None:
        start = r.copy()
        kernel(problem.W, problem.q, problem.mu, int(strategy), iterations, tolerance, PROX_BACKOFF[strategy], start,
               r, result)  # fmt: skip

    return run


def _pgs(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray) -> None:
    solve_pgs_dense(problem.W, problem.q, problem.mu, iterations, tolerance, r, result)


PSOR_OMEGA = 1.2
"""The over-relaxation of ``psor-box`` (course §3.2: 0 < ω < 2; ω = 1 is PGS). With the friction bounds following
the normals it can cycle: on 100 random box problems (tests/core/contact_solvers/test_random_problems.py's) ω = 1.2
solved every one, 1.3 missed one and 1.5 five."""


def jacobi_step(W: np.ndarray) -> float:
    """``ω = 1 / λ_max(D^-½ W D^-½)`` (``D`` the diagonal of ``W``, rows without a diagonal left out): the damping
    that keeps projected Jacobi a projected gradient step with half the largest stable length, so it converges on a
    frictionless problem. Undamped (ω = 1) it diverges where contacts couple strongly (a box's four corners)."""
    diag = np.diag(W).copy()
    keep = diag > 0.0
    scale = 1.0 / np.sqrt(diag[keep])
    scaled = W[np.ix_(keep, keep)] * scale[:, None] * scale[None, :]
    largest = float(np.linalg.eigvalsh(scaled)[-1]) if scaled.size else 1.0
    return 1.0 / max(largest, 1.0)


def _splitting(method: int, omega: float | None) -> Callable:
    def run(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray) -> None:
        step = jacobi_step(problem.W) if omega is None else omega
        solve_splitting_dense(problem.W, problem.q, problem.mu, method, step, iterations, tolerance, r, result)

    return run


def _incremental(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray) -> None:
    normals = slice(0, None, 3)
    x, pivots, _ = incremental_pivoting(problem.W[normals, normals], problem.q[normals], iterations)
    r[normals] = x
    result[0] = pivots


def _friction_pivoting(cone: bool) -> Callable:
    def run(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray) -> None:
        solved = friction_pivoting(problem.W, problem.q, problem.mu, 3, max_pivots=iterations, cone=cone)
        r[:] = solved.f
        result[0] = solved.pivots

    return run


def _block_pivoting(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray):
    x, steps, _ = block_principal_pivoting(problem.W, problem.q, problem.mu, iterations)
    r[:] = x
    result[0] = steps


def _lemke(polyhedral: bool) -> Callable:
    def run(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray) -> None:
        if polyhedral:
            x, pivots, _ = solve_polyhedral_lemke(problem.W, problem.q, problem.mu, iterations)
        else:
            x, pivots, _ = solve_frictionless_lemke(problem.W, problem.q, iterations)
        r[:] = x
        result[0] = pivots

    return run


def _pgs_subspace(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray):
    sweeps, _ = solve_pgs_subspace(problem.W, problem.q, problem.mu, iterations, tolerance, r)
    result[0] = sweeps


def _min_map_newton(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray):
    x, steps, _ = solve_min_map_newton(problem.W, problem.q, problem.mu, iterations, min(tolerance, 1e-12))
    r[:] = x
    result[0] = steps


def _fischer_newton(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray):
    normals = slice(0, None, 3)
    x, steps, _ = solve_fischer_burmeister_newton(problem.W[normals, normals], problem.q[normals], iterations,
                                                  min(tolerance, 1e-12))  # fmt: skip
    r[normals] = x
    result[0] = steps


def _staggered(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray):
    x, alternations, _ = solve_staggered(problem.W, problem.q, problem.mu, iterations, tolerance)
    r[:] = x
    result[0] = alternations


def _cone_newton(kernel: Callable) -> Callable:
    def run(problem: LocalProblem, tolerance: float, iterations: int, r: np.ndarray, result: np.ndarray) -> None:
        x, steps, _ = kernel(problem.W, problem.q, problem.mu, iterations, min(tolerance, 1e-12))
        r[:] = x
        result[0] = steps

    return run


SOLVERS: dict[str, tuple[Callable, str]] = {
    "prox-global": (_prox(RFactorStrategy.GLOBAL), "PROX Gauss–Seidel, one r-factor for every row (robust on stacks)"),
    "prox-local": (_prox(RFactorStrategy.LOCAL), "PROX Gauss–Seidel, an r-factor per row (fewer sweeps)"),
    "prox-jacobi-global": (_prox(RFactorStrategy.GLOBAL, True), "PROX Jacobi, one r-factor (every contact at once)"),
    "prox-jacobi-local": (_prox(RFactorStrategy.LOCAL, True), "PROX Jacobi, an r-factor per row"),
    "prox-blocked": (
        _prox(RFactorStrategy.BLOCKED),
        "PROX Gauss–Seidel, per contact the inverse of its friction block as r-factor (the seed found it worst)",
    ),
    "prox-jacobi-blocked": (_prox(RFactorStrategy.BLOCKED, True), "PROX Jacobi with the blocked r-factor"),
    "prox-newton": (_cone_newton(solve_prox_newton), "PROX's fixed-point equation by semismooth Newton (to 1e-8 fast)"),
    "pgs-box": (_pgs, "projected Gauss–Seidel with box friction |r_t| <= μ r_n per tangent (BLCP; not the cone)"),
    "pgs-box-backward": (_splitting(BACKWARD, 1.0), "the same, sweeping the contacts in reverse order"),
    "pgs-box-symmetric": (_splitting(SYMMETRIC, 1.0), "the same, a forward then a backward sweep (less order bias)"),
    "pgs-sm-box": (
        _pgs_subspace,
        "PGS with subspace minimization, box friction: sweeps guess which rows are at a bound, a solve ends it",
    ),
    "psor-box": (_splitting(FORWARD, PSOR_OMEGA), f"projected SOR, box friction, ω = {PSOR_OMEGA} (may diverge)"),
    "jacobi-box": (_splitting(JACOBI, None), "projected Jacobi, box friction, damped to ω = 1/λ_max(D^-½ W D^-½)"),
    "pivoting-frictionless": (_incremental, "incremental pivoting (Dantzig, Baraff) on the normals alone, exact"),
    "pivoting-box": (
        _friction_pivoting(False),
        "Baraff's friction pivoting, static friction per tangent (the box), exact",
    ),
    "pivoting-cone": (
        _friction_pivoting(True),
        "Baraff's friction pivoting in the Coulomb cone (his 3D rule: saturates along the direction it met the cone)",
    ),
    "lemke-frictionless": (_lemke(False), "Lemke's complementary pivoting on the normals alone, exact"),
    "lemke-polyhedral": (
        _lemke(True),
        f"Lemke on the polyhedral-cone LCP ({POLYHEDRAL_DIRECTIONS} directions, inside the cone: 8 % less friction)",
    ),
    "bpp-box": (_block_pivoting, "block principal pivoting, box friction: exact when its labels settle (can cycle)"),
    "newton-minmap-box": (_min_map_newton, "global Newton on the min-map, box friction, Armijo line search"),
    "newton-fb-cone": (
        _cone_newton(solve_fischer_burmeister_cone_newton),
        "global Newton on the cone Fischer–Burmeister function (Coulomb cone, De Saxcé velocity), Armijo",
    ),
    "staggered-cone": (
        _staggered,
        "staggered projections: the normals' LCP and the friction's maximal-dissipation QP in turn (Coulomb disk)",
    ),
    "newton-fb-frictionless": (_fischer_newton, "global Newton on Fischer–Burmeister, the normals alone, Armijo"),
}
"""Every solver by name: ``(run, what it is in one line)``."""
NORMALS_ONLY = frozenset(("pivoting-frictionless", "lemke-frictionless", "newton-fb-frictionless"))
"""The methods that solve the normal rows alone and leave every friction impulse zero."""


def solve_local(problem: LocalProblem, name: str, tolerance: float = 1e-8, max_iterations: int = 1000) -> LocalResult:
    """Solve ``problem`` with solver ``name`` (a key of :data:`SOLVERS`) from zero impulses."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}: one of {', '.join(SOLVERS)}")
    run = SOLVERS[name][0]
    r, result = np.zeros(problem.W.shape[0]), np.zeros(3)
    t0 = time.perf_counter()
    run(problem, float(tolerance), int(max_iterations), r, result)
    seconds = time.perf_counter() - t0
    merit = local_merit(problem, r)
    return LocalResult(r, problem.W @ r + problem.q, int(result[0]), merit, bool(merit <= tolerance), seconds)
