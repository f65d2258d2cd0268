"""Implicit time integrators for ``M x'' = f(x, v)``: reference versions on linear systems + Newton driver.

All schemes are written as in seed 003 §3.3, with the end-of-step velocity ``v = v^{n+1}``
[m/s] as the unknown and ``x^{n+1}`` [m] an affine function of it:

- **BE** (eq. 23): ``M(v - v^n) = h f(x^n + h v, v)``.
- **TR** (eq. 24, Newmark beta = 1/4, gamma = 1/2): ``x^{n+1} = x^n + (h/2)(v^n + v)``,
  ``M(v - v^n) = (h/2)[f(x^n, v^n) + f(x^{n+1}, v)]``.
- **BDF2**: ``x^{n+1} = (4/3)x^n - (1/3)x^{n-1} + (2/3)h v``,
  ``M(v - (4/3)v^n + (1/3)v^{n-1}) = (2/3)h f(x^{n+1}, v)``; bootstrapped with one BE step.
- **SDIRK2** (gamma = 1 - 1/sqrt 2): stage 1 is a BE step of size gamma h giving (x*, v*);
  ``x^{n+1} = x^n + h[(1-gamma) v* + gamma v]``,
  ``M(v - v^n) = h[(1-gamma) f(x*, v*) + gamma f(x^{n+1}, v)]``.

For the linear force ``f = -K x - D v`` every scheme is one linear solve with the matrix
``A = M + c_d D + c_k K`` (BE: ``c_d = h, c_k = h^2``; TR: ``h/2, h^2/4``; BDF2: ``2h/3, 4h^2/9``;
SDIRK2: ``gamma h, gamma^2 h^2``). These linear steps are the reference implementation and test
harness; the nonlinear FEM steps solve the same residuals with :func:`newton_solve`.

Matrices are dense (n, n) arrays or CSR triples ``(indptr, indices, data)`` that share one
pattern (:mod:`..linalg.csr`). Dense solves use a small Gaussian elimination kernel (no LAPACK:
Blender ships no SciPy); CSR solves use Jacobi PCG to a 1e-14 relative residual.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..jit import njit_kernel
from ..linalg.csr import csr_combine, csr_matvec
from ..linalg.pcg import pcg_solve

SDIRK2_GAMMA = 1.0 - 1.0 / math.sqrt(2.0)
"""Diagonal coefficient of the L-stable two-stage SDIRK [dimensionless]."""

METHODS = ("be", "tr", "bdf2", "sdirk2")
"""Scheme names accepted by :func:`integrate_linear`."""


@njit_kernel
def dense_matvec(A, x, out):
    """``out = A x`` for dense ``A`` (n, m), ``x`` (m,), ``out`` (n,); a plain loop, no BLAS."""
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        out[i] = s


@njit_kernel
def dense_solve(A, b, out_x):
    """Solve ``A x = b`` (A (n, n) nonsingular) by Gaussian elimination with partial pivoting.

    ``A`` and ``b`` are left untouched (one (n, n+1) working copy per call). For the small
    reference systems of the integrator tests; large systems go through CSR + PCG.
    """
    n = A.shape[0]
    W = np.empty((n, n + 1))
    for i in range(n):
        for j in range(n):
            W[i, j] = A[i, j]
        W[i, n] = b[i]
    for k in range(n):
        piv = k
        for i in range(k + 1, n):
            if abs(W[i, k]) > abs(W[piv, k]):
                piv = i
        if piv != k:
            for j in range(k, n + 1):
                t = W[k, j]
                W[k, j] = W[piv, j]
                W[piv, j] = t
        for i in range(k + 1, n):
            f = W[i, k] / W[k, k]
            if f != 0.0:
                for j in range(k, n + 1):
                    W[i, j] -= f * W[k, j]
    for i in range(n - 1, -1, -1):
        s = W[i, n]
        for j in range(i + 1, n):
            s -= W[i, j] * out_x[j]
        out_x[i] = s / W[i, i]


@dataclass(frozen=True)
class LinearSecondOrderSystem:
    """``M x'' + D x' + K x = 0``: mass, damping and stiffness, dense (n, n) or CSR triples.

    ``mass`` M [kg], ``damping`` D [N·s/m], ``stiffness`` K [N/m]: symmetric, M positive
    definite, D and K positive semidefinite. CSR triples must share one pattern (same
    ``indptr``/``indices``); store explicit zeros where a matrix has none.
    """

    mass: object
    damping: object
    stiffness: object
    pcg_tolerance: float = 1e-14
    """Relative residual of the PCG solves on CSR systems [dimensionless]."""

    @property
    def is_sparse(self) -> bool:
        """True when the matrices are CSR triples."""
        return isinstance(self.mass, tuple)

    @property
    def size(self) -> int:
        """Number of degrees of freedom n."""
        return (self.mass[0].shape[0] - 1) if self.is_sparse else self.mass.shape[0]

    def matvec(self, A, x) -> np.ndarray:
        """``A x`` for one of the system matrices; x (n,) -> (n,)."""
        out = np.empty(self.size)
        if self.is_sparse:
            csr_matvec(A[0], A[1], A[2], x, out)
        else:
            dense_matvec(A, x, out)
        return out

    def force(self, x, v) -> np.ndarray:
        """``f(x, v) = -K x - D v`` [N], (n,)."""
        return -self.matvec(self.stiffness, x) - self.matvec(self.damping, v)

    def energy(self, x, v) -> float:
        """Quadratic energy ``E = (1/2) v^T M v + (1/2) x^T K x`` [J]."""
        return 0.5 * float(np.sum(v * self.matvec(self.mass, v))) + 0.5 * float(
            np.sum(x * self.matvec(self.stiffness, x))
        )

    def solve(self, c_d: float, c_k: float, rhs) -> np.ndarray:
        """Solve ``(M + c_d D + c_k K) v = rhs``; rhs (n,) -> v (n,)."""
        n = self.size
        out = np.zeros(n)
        if self.is_sparse:
            indptr, indices, m_data = self.mass
            data = np.empty_like(m_data)
            csr_combine(1.0, m_data, c_d, self.damping[2], data)
            csr_combine(1.0, data, c_k, self.stiffness[2], data)
            _, residual = pcg_solve(indptr, indices, data, rhs, out, self.pcg_tolerance, 10 * n + 100, out)
            if not residual <= max(self.pcg_tolerance, 1e-12):
                raise RuntimeError(f"PCG did not converge (relative residual {residual:.3e})")
        else:
            dense_solve(self.mass + c_d * self.damping + c_k * self.stiffness, rhs, out)
        return out


def backward_euler_step(system: LinearSecondOrderSystem, x, v, h: float):
    """One BE step: ``(M + h D + h^2 K) v' = M v - h K x``, ``x' = x + h v'``. Returns (x', v')."""
    rhs = system.matvec(system.mass, v) - h * system.matvec(system.stiffness, x)
    v1 = system.solve(h, h * h, rhs)
    return x + h * v1, v1


def trapezoidal_step(system: LinearSecondOrderSystem, x, v, h: float):
    """One TR (Newmark beta = 1/4, gamma = 1/2) step. Returns (x', v').

    Substituting ``x' = x + (h/2)(v + v')`` into ``M(v' - v) = (h/2)[f(x, v) + f(x', v')]``:
    ``(M + (h/2) D + (h^2/4) K) v' = M v - h K x - (h^2/4) K v - (h/2) D v``.
    For D = 0 this is the implicit midpoint rule, which conserves ``E`` exactly.
    """
    Kx = system.matvec(system.stiffness, x)
    Kv = system.matvec(system.stiffness, v)
    rhs = system.matvec(system.mass, v) - h * Kx - 0.25 * h * h * Kv - 0.5 * h * system.matvec(system.damping, v)
    v1 = system.solve(0.5 * h, 0.25 * h * h, rhs)
    return x + 0.5 * h * (v + v1), v1


def bdf2_step(system: LinearSecondOrderSystem, x, v, x_prev, v_prev, h: float):
    """One BDF2 step from (x^n, v^n) and (x^{n-1}, v^{n-1}). Returns (x^{n+1}, v^{n+1}).

    With ``x_hat = (4/3)x^n - (1/3)x^{n-1}``, ``v_hat = (4/3)v^n - (1/3)v^{n-1}``:
    ``(M + (2h/3) D + (4h^2/9) K) v' = M v_hat - (2h/3) K x_hat``, ``x' = x_hat + (2h/3) v'``.
    """
    x_hat = (4.0 * x - x_prev) / 3.0
    v_hat = (4.0 * v - v_prev) / 3.0
    c = 2.0 * h / 3.0
    rhs = system.matvec(system.mass, v_hat) - c * system.matvec(system.stiffness, x_hat)
    v1 = system.solve(c, c * c, rhs)
    return x_hat + c * v1, v1


def sdirk2_step(system: LinearSecondOrderSystem, x, v, h: float):
    """One two-stage SDIRK2 step (L-stable, second order). Returns (x', v').

    Stage 1: BE of size ``gamma h`` gives (x*, v*). Stage 2, with ``x' = x + h(1-gamma) v* + gamma h v'``:
    ``(M + gamma h D + gamma^2 h^2 K) v' = M v + h(1-gamma) f(x*, v*) - gamma h K (x + h(1-gamma) v*)``.
    """
    g = SDIRK2_GAMMA
    x_s, v_s = backward_euler_step(system, x, v, g * h)
    x_base = x + h * (1.0 - g) * v_s
    rhs = (
        system.matvec(system.mass, v)
        + h * (1.0 - g) * system.force(x_s, v_s)
        - g * h * system.matvec(system.stiffness, x_base)
    )
    v1 = system.solve(g * h, g * g * h * h, rhs)
    return x_base + g * h * v1, v1


def integrate_linear(system: LinearSecondOrderSystem, x0, v0, h: float, steps: int, method: str):
    """Run ``steps`` steps of ``method`` (one of :data:`METHODS`); BDF2 starts with one BE step.

    Returns ``(xs, vs)``, each (steps + 1, n) with row 0 the initial state.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    n = system.size
    xs = np.empty((steps + 1, n))
    vs = np.empty((steps + 1, n))
    xs[0] = x0
    vs[0] = v0
    for k in range(steps):
        x, v = xs[k], vs[k]
        if method == "be" or (method == "bdf2" and k == 0):
            xs[k + 1], vs[k + 1] = backward_euler_step(system, x, v, h)
        elif method == "tr":
            xs[k + 1], vs[k + 1] = trapezoidal_step(system, x, v, h)
        elif method == "bdf2":
            xs[k + 1], vs[k + 1] = bdf2_step(system, x, v, xs[k - 1], vs[k - 1], h)
        else:
            xs[k + 1], vs[k + 1] = sdirk2_step(system, x, v, h)
    return xs, vs


@dataclass(frozen=True)
class NewtonResult:
    """Outcome of :func:`newton_solve`."""

    x: np.ndarray
    """Final iterate (n,)."""
    iterations: int
    """Newton steps taken (Jacobian solves)."""
    residual_norm: float
    """``||r(x)||_2`` at the final iterate."""
    converged: bool
    """True iff ``residual_norm <= tol``."""


def newton_solve(
    residual: Callable[[np.ndarray], np.ndarray],
    jacobian_solve: Callable[[np.ndarray, np.ndarray], np.ndarray],
    x0,
    tol: float = 1e-10,
    max_iter: int = 50,
    *,
    armijo: float = 1e-4,
    min_step: float = 1.0 / 1024.0,
) -> NewtonResult:
    """Damped Newton for ``r(x) = 0`` with backtracking on ``||r||_2``.

    Args:
        residual: ``x -> r(x)``, (n,) -> (n,).
        jacobian_solve: ``(x, r) -> dx`` solving ``J(x) dx = -r`` (dense, CSR + PCG, ...).
        x0: (n,) initial guess (e.g. the BE predictor ``v^n``).
        tol: absolute target on ``||r||_2`` (in the units of r).
        max_iter: cap on Newton steps.
        armijo: sufficient-decrease constant c: accept step length ``s`` when
            ``||r(x + s dx)|| <= (1 - c s) ||r(x)||``.
        min_step: smallest step length tried; below it the last (smallest) step is taken anyway
            so the iteration cannot stall silently (non-convergence shows in ``converged``).

    Returns:
        :class:`NewtonResult`.
    """
    x = np.array(x0, dtype=np.float64)
    r = np.asarray(residual(x), dtype=np.float64)
    r_norm = float(np.sqrt(np.sum(r * r)))
    iterations = 0
    while r_norm > tol and iterations < max_iter:
        dx = np.asarray(jacobian_solve(x, r), dtype=np.float64)
        iterations += 1
        s = 1.0
        while True:
            x_try = x + s * dx
            r_try = np.asarray(residual(x_try), dtype=np.float64)
            norm_try = float(np.sqrt(np.sum(r_try * r_try)))
            if norm_try <= (1.0 - armijo * s) * r_norm or s <= min_step:
                break
            s *= 0.5
        x, r, r_norm = x_try, r_try, norm_try
    return NewtonResult(x=x, iterations=iterations, residual_norm=r_norm, converged=bool(r_norm <= tol))
