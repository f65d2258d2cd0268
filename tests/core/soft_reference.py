"""Reference single-body soft solver (seed 003): kept for the tests, **not used by the engine**.

The engine's soft step is ``core/soft/world_solver.py``'s ``SoftWorldSolver`` (the frame loop and the Blender
bake use it). This module (under tests/, not shipped) keeps seed 003's single-body solver because the tests use it as a
reference: its fully implicit friction (Newton on the non-symmetric system, seed 003 eq. 23) checks the world
solver's fixed-point implicit friction to 1e-9 m, and its trapezoidal rule and the plane-contact block slide
reproduce seed 003's analytic results. Both solvers share the Newton stopping rules and line searches of
``core/soft/newton.py``; what is specific here is the single-body system (kinematic planes, CSR assembly,
block-Jacobi PCG / BiCGSTAB).

Implicit (backward Euler) soft-body step: tet FEM + cubic penalty contact with kinematic planes
+ optional lagged smoothed friction, solved by Newton with PSD-projected Hessians, CSR assembly,
block-Jacobi PCG and a backtracking line search on the incremental potential.

Formulation (seed 003 eq. 23, velocity form). Unknown ``v = v^{n+1}``, ``x = x^n + h v``:

    r(v) = M (v - v^n) - h f(x^n + h v),   f = -dPsi/dx + M g - dE_c/dx - dD/dx

``r`` is the gradient in ``v`` of the incremental potential

    Phi(v) = 1/2 (v - v^n - h g)^T M (v - v^n - h g) + Psi(x) + E_c(x) + D(x)

(equivalently ``Phi = ||x - x^n - h v^n - h^2 g||_M^2 / (2 h^2) + Psi + E_c + D`` minimised over
``x``). Newton: ``A dv = -r`` with ``A = M + h^2 (K_proj + H_c + H_f)``, where ``K_proj`` uses the
per-tet PSD-projected tangent (``elastic_hessian_blocks(project=True)``), ``H_c`` the penalty
blocks ``kappa b'' n n^T`` and ``H_f`` the (already PSD) friction blocks: ``A`` is SPD, so PCG
applies. A backtracking (Armijo) line search on ``Phi`` accepts ``v + alpha dv``. Newton stops
when ``||r||_2 <= residual_tolerance * r_scale`` (``r_scale = max(||r(v^n)||, h ||M g||)``) or
the full Newton correction ``max |dv| <= velocity_tolerance`` [m/s] (then taken) or the Newton
decrement ``-r . dv`` reaches the round-off level of Phi (``DECREMENT_TOLERANCE``). The linear
solves are inexact far from the solution: PCG tolerance ``max(pcg_tolerance,
min(0.1, 0.1 sqrt(||r|| / r_scale)))``; PCG from ``dv = 0`` always returns a descent direction.

Pinned vertices keep their position (``v = 0``): their rows and columns of ``A`` are replaced by
identity and their residual rows are 0.

Contact and friction: see ``kernels_contact.py`` (cubic penalty ``b(d) = (delta - d)^3/delta``;
IPC-style lagged friction with ``lambda^n`` and the tangent projector frozen at ``x^n``).

**Fully implicit friction** (``friction_mode="implicit"``, seed 003 eqs. 8/16/23) and/or the
**trapezoidal rule** (``integrator="TR"``, seed 003 eq. 24 with friction included) are solved
as root finding: there is no potential. With ``x = x_base + beta v``

    BE:  x_base = x^n,               beta = h,    r(v) = M (v - v^n) - h f(x, v)
    TR:  x_base = x^n + (h/2) v^n,   beta = h/2,  r(v) = M (v - v^n) - (h/2) [f(x^n, v^n) + f(x, v)]

where ``f = -dPsi/dx + M g + f_c(x) + f_f(x, v)`` and ``f_f,i = -mu lambda_i(x) eta(P v_i)``
(normal force and projector at the end-of-step state). The Jacobian ``J = M + c beta (K + H_c
+ H_f)`` (``c = h`` BE, ``h/2`` TR) uses the *unprojected* elastic tangent and the exact,
non-symmetric friction blocks (``dlambda/dx`` and ``deta/dv``). ``J dv = -r`` is solved by
block-Jacobi BiCGSTAB (``core/linalg/bicgstab.py``) with the same inexact forcing as above;
globalisation is backtracking on the merit ``||r||``: accept ``alpha`` when
``||r(v + alpha dv)|| <= (1 - 1e-4 alpha (1 - eta_lin)) ||r(v)||`` (``eta_lin`` the achieved
linear residual). Stopping: ``||r|| <= residual_tolerance r_scale`` or ``max |dv| <=
velocity_tolerance`` (then taken).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from contact_lab.core.config import FLOAT, INDEX
from contact_lab.core.fem.materials import MaterialModel, elastic_energy, elastic_gradient, elastic_hessian_blocks
from contact_lab.core.fem.tet_mesh import compute_rest_shape, lame_parameters, lumped_vertex_mass
from contact_lab.core.linalg.bicgstab import bicgstab_solve_preconditioned
from contact_lab.core.linalg.csr import CsrPattern, assemble_blocks
from contact_lab.core.linalg.pcg import block3_jacobi_inverse, pcg_solve_preconditioned, serial_dot
from contact_lab.core.soft.kernels_contact import (
    axpy_velocity,
    finish_newton_matrix,
    implicit_friction_gradient_jacobian,
    inertia_energy,
    lagged_friction_energy,
    lagged_friction_gradient_hessian,
    momentum_residual,
    plane_normal_forces,
    plane_penalty_energy,
    plane_penalty_gradient_hessian,
    positions_from_velocity,
)
from contact_lab.core.soft.newton import (
    ARMIJO_FRACTION,
    armijo_line_search,
    backtracking_line_search,
    linear_forcing,
    negligible_step,
    residual_scale,
)


class SoftBody:
    """Immutable description of one tet-mesh soft body (model data, structure of arrays)."""

    def __init__(
        self,
        rest_vertices,
        tet_indices,
        *,
        density: float = 1000.0,
        youngs_modulus: float = 1.0e5,
        poisson_ratio: float = 0.3,
        material: MaterialModel = MaterialModel.STABLE_NEOHOOKEAN,
        pinned=None,
    ):
        """
        Args:
            rest_vertices: (V, 3) rest positions [m].
            tet_indices: (T, 4) positively oriented tets.
            density: rho [kg/m³]. youngs_modulus: E [Pa]. poisson_ratio: nu in (-1, 0.5).
            material: hyperelastic model. pinned: optional (V,) bool mask of fixed vertices.
        """
        self.rest_vertices = np.ascontiguousarray(rest_vertices, dtype=FLOAT)
        self.tet_indices = np.ascontiguousarray(tet_indices, dtype=INDEX)
        self.vertex_count = int(self.rest_vertices.shape[0])
        self.tet_count = int(self.tet_indices.shape[0])
        self.density = float(density)
        self.youngs_modulus = float(youngs_modulus)
        self.poisson_ratio = float(poisson_ratio)
        self.material = MaterialModel(material)
        pinned = np.zeros(self.vertex_count, dtype=bool) if pinned is None else np.asarray(pinned, dtype=bool)
        if pinned.shape != (self.vertex_count,):
            raise ValueError(f"pinned must have shape ({self.vertex_count},), got {pinned.shape}")
        self.vertex_pinned = pinned.copy()
        self.vertex_free = ~pinned
        self.tet_Dm_inv, self.tet_rest_volume = compute_rest_shape(self.rest_vertices, self.tet_indices)
        self.vertex_mass = lumped_vertex_mass(self.rest_vertices, self.tet_indices, self.density)
        self.mu, self.lam = lame_parameters(self.youngs_modulus, self.poisson_ratio)
        # One CSR pattern for tet stencils (group 0) and per-vertex 3x3 blocks (group 1: contact).
        self.pattern = CsrPattern.from_element_groups(
            [self.tet_indices, np.arange(self.vertex_count, dtype=np.int64)[:, None]], self.vertex_count
        )
        self.tet_scatter = self.pattern.scatter_index[0]
        self.vertex_scatter = self.pattern.scatter_index[1]
        self.dof_fixed = np.repeat(self.vertex_pinned, 3)

    @property
    def total_mass(self) -> float:
        """Sum of the lumped masses [kg]."""
        return float(self.vertex_mass.sum())

    def state(self) -> SoftBodyState:
        """A state at rest in the rest shape."""
        return SoftBodyState(self.rest_vertices.copy(), np.zeros_like(self.rest_vertices))

    def elastic_energy(self, x) -> float:
        """``Psi(x)`` [J]."""
        return elastic_energy(*self._elastic_arguments(x))

    def elastic_gradient(self, x) -> np.ndarray:
        """``dPsi/dx`` (V, 3) [N] (minus the elastic forces)."""
        out = np.empty((self.vertex_count, 3))
        elastic_gradient(*self._elastic_arguments(x), out)
        return out

    def _elastic_arguments(self, x) -> tuple:
        """``(x, tets, Dm_inv, rest volumes, mu, lam, material)`` of the batch elastic kernels at positions ``x``."""
        x = np.ascontiguousarray(x, dtype=FLOAT)
        return x, self.tet_indices, self.tet_Dm_inv, self.tet_rest_volume, self.mu, self.lam, int(self.material)


@dataclass
class SoftBodyState:
    """Time-varying data: positions x (V, 3) [m] and velocities v (V, 3) [m/s]."""

    x: np.ndarray
    v: np.ndarray

    def copy(self) -> SoftBodyState:
        return SoftBodyState(self.x.copy(), self.v.copy())

    def copy_from(self, other: SoftBodyState) -> None:
        self.x[:] = other.x
        self.v[:] = other.v


@dataclass
class SoftStepStats:
    """Diagnostics of the last ``step``."""

    newton_iterations: int = 0
    pcg_iterations: int = 0
    converged: bool = False
    residual: float = 0.0
    """Final ``||r||_2 / r_scale``."""
    line_search_failures: int = 0
    energy_history: list = field(default_factory=list)
    """Incremental potential ``Phi`` at the start and after every accepted Newton step [J]
    (lagged BE only; empty for the root-finding modes)."""
    merit_history: list = field(default_factory=list)
    """Root-finding modes: ``||r||`` [N s] at the start and after every accepted Newton step."""
    linear_failures: int = 0
    """Root-finding modes: BiCGSTAB solves that missed their tolerance."""


def _check_modes(friction_mode: str, integrator: str, friction_coefficient: float) -> None:
    """Raise ValueError on an unknown friction mode or integrator, or TR with lagged friction."""
    if friction_mode not in ("lagged", "implicit"):
        raise ValueError(f"friction_mode must be 'lagged' or 'implicit', got {friction_mode!r}")
    if integrator not in ("BE", "TR"):
        raise ValueError(f"integrator must be 'BE' or 'TR', got {integrator!r}")
    if integrator == "TR" and friction_mode == "lagged" and friction_coefficient > 0.0:
        raise ValueError("integrator='TR' with friction requires friction_mode='implicit'")


def _planes(plane_points, plane_normals) -> tuple[np.ndarray, np.ndarray]:
    """Validated kinematic half-spaces: points (P, 3) [m] and unit normals (P, 3) (none when both are None)."""
    if plane_points is None:
        plane_points = np.zeros((0, 3))
        plane_normals = np.zeros((0, 3))
    points = np.ascontiguousarray(plane_points, dtype=FLOAT).reshape(-1, 3)
    normals = np.ascontiguousarray(plane_normals, dtype=FLOAT).reshape(-1, 3)
    if normals.shape != points.shape:
        raise ValueError("plane_points and plane_normals must both be (P, 3)")
    lengths = np.sqrt(np.einsum("pi,pi->p", normals, normals))
    if np.any(lengths <= 0.0):
        raise ValueError("plane normals must be non-zero")
    return points, normals / lengths[:, None]


class SolverSoftImplicit:
    """Backward Euler Newton solver for a :class:`SoftBody` (scratch allocated once).

    Args:
        body: the soft body.
        gravity: (3,) [m/s²].
        plane_points, plane_normals: (P, 3) kinematic half-spaces (normals need not be unit).
        contact_stiffness: kappa [N/m]. contact_thickness: delta [m].
        friction_coefficient: mu (0 disables friction). friction_velocity: eps_v [m/s] of s_a.
        max_newton_iterations, residual_tolerance, velocity_tolerance [m/s]: Newton stopping.
        pcg_tolerance, pcg_max_iterations: inner linear solve.
        max_line_search: backtracking halvings.
        friction_mode: ``"lagged"`` (default; lambda^n and P frozen at x^n, SPD Newton + PCG) or
            ``"implicit"`` (lambda, P and v at the end of the step; non-symmetric Newton +
            BiCGSTAB, merit line search).
        integrator: ``"BE"`` (default) or ``"TR"`` (trapezoidal, friction included; requires
            ``friction_mode="implicit"`` when friction is on).
    """

    def __init__(
        self,
        body: SoftBody,
        *,
        gravity=(0.0, 0.0, -9.81),
        plane_points=None,
        plane_normals=None,
        contact_stiffness: float = 1.0e4,
        contact_thickness: float = 1.0e-3,
        friction_coefficient: float = 0.0,
        friction_velocity: float = 1.0e-3,
        max_newton_iterations: int = 50,
        residual_tolerance: float = 1.0e-8,
        velocity_tolerance: float = 1.0e-7,
        pcg_tolerance: float = 1.0e-10,
        pcg_max_iterations: int = 2000,
        max_line_search: int = 40,
        friction_mode: str = "lagged",
        integrator: str = "BE",
    ):
        self.body = body
        self.gravity = np.asarray(gravity, dtype=FLOAT).reshape(3).copy()
        self.plane_points, self.plane_normals = _planes(plane_points, plane_normals)
        self.contact_stiffness = float(contact_stiffness)
        self.contact_thickness = float(contact_thickness)
        self.friction_coefficient = float(friction_coefficient)
        self.friction_velocity = float(friction_velocity)
        self.max_newton_iterations = int(max_newton_iterations)
        self.residual_tolerance = float(residual_tolerance)
        self.velocity_tolerance = float(velocity_tolerance)
        self.pcg_tolerance = float(pcg_tolerance)
        self.pcg_max_iterations = int(pcg_max_iterations)
        self.max_line_search = int(max_line_search)
        _check_modes(friction_mode, integrator, self.friction_coefficient)
        self.friction_mode = friction_mode
        self.integrator = integrator
        self._root_finding = friction_mode == "implicit" or integrator == "TR"
        self.stats = SoftStepStats()
        self._allocate()

    def _allocate(self) -> None:
        """Scratch of the Newton loops (V vertices, T tets, P planes), allocated once."""
        body = self.body
        V, T, n = body.vertex_count, body.tet_count, 3 * body.vertex_count
        P = self.plane_points.shape[0]
        self._x = np.empty((V, 3))
        self._v = np.empty((V, 3))
        self._v_trial = np.empty((V, 3))
        self._grad = np.empty((V, 3))
        self._grad_extra = np.empty((V, 3))
        self._vertex_hess = np.empty((V, 3, 3))
        self._tet_hess = np.empty((T, 12, 12))
        self._data = body.pattern.zeros()
        self._r = np.empty(n)
        self._rhs = np.empty(n)
        self._dv = np.empty(n)
        self._inv_diag = np.empty(0)
        self._inv_blocks = np.empty((V, 3, 3))
        self._pcg_r = np.empty(n)
        self._pcg_z = np.empty(n)
        self._pcg_p = np.empty(n)
        self._pcg_q = np.empty(n)
        self._lambda_lag = np.zeros((P, V))
        self._material = int(body.material)
        # Root-finding (implicit friction / TR) scratch.
        self._x_base = np.empty((V, 3))
        self._grad_start = np.zeros((V, 3))
        self._vertex_scratch = np.empty((V, 3, 3))
        self._no_diag = np.empty(0)
        self._bicg = [np.empty(n) for _ in range(7)]
        self._x_n = np.empty((V, 3))
        self._v_n = np.empty((V, 3))
        self._weight = float(
            np.sqrt(np.sum(body.vertex_mass[body.vertex_free] ** 2)) * np.sqrt(np.sum(self.gravity**2))
        )

    # ---------------------------------------------------------------------------------------

    def contact_forces(self, x) -> np.ndarray:
        """Penalty normal force magnitudes ``lambda`` (P, V) [N] at positions ``x``."""
        out = np.zeros((self.plane_points.shape[0], self.body.vertex_count))
        plane_normal_forces(*self._plane_contact_arguments(np.ascontiguousarray(x, dtype=FLOAT)), out)
        return out

    def _plane_contact_arguments(self, x) -> tuple:
        """``(x, vertex_free, plane_points, plane_normals, kappa, delta)``: the leading arguments of the plane
        penalty kernels at positions ``x`` (V, 3) [m]."""
        b = self.body
        return x, b.vertex_free, self.plane_points, self.plane_normals, self.contact_stiffness, self.contact_thickness

    def _lagged_friction_arguments(self, x_start, h: float) -> tuple:
        """``(x, x^n, plane_normals, lambda^n, mu, eps_v h)``: the leading arguments of the lagged friction kernels
        at the current positions ``self._x`` for a step of ``h`` [s]."""
        return (
            self._x, x_start, self.plane_normals, self._lambda_lag, self.friction_coefficient,
            self.friction_velocity * h,
        )  # fmt: skip

    def _potential(self, v, x_start, v_start, h) -> float:
        b = self.body
        positions_from_velocity(x_start, v, h, self._x)
        phi = inertia_energy(b.vertex_mass, b.vertex_free, v, v_start, self.gravity, h)
        phi += elastic_energy(self._x, b.tet_indices, b.tet_Dm_inv, b.tet_rest_volume, b.mu, b.lam, self._material)
        if self.plane_points.shape[0]:
            phi += plane_penalty_energy(
                *self._plane_contact_arguments(self._x),
            )
            if self.friction_coefficient > 0.0:
                phi += lagged_friction_energy(*self._lagged_friction_arguments(x_start, h))
        return phi

    def _residual_and_hessian(self, v, x_start, v_start, h, with_hessian: bool) -> float:
        """Fill ``_r`` (and the Newton matrix ``_data`` if asked); return ``||r||``."""
        b = self.body
        positions_from_velocity(x_start, v, h, self._x)
        elastic_gradient(
            self._x, b.tet_indices, b.tet_Dm_inv, b.tet_rest_volume, b.mu, b.lam, self._material, self._grad
        )
        self._vertex_hess[:] = 0.0
        if self.plane_points.shape[0]:
            plane_penalty_gradient_hessian(
                *self._plane_contact_arguments(self._x),
                self._grad,
                self._vertex_hess,
            )
            if self.friction_coefficient > 0.0:
                lagged_friction_gradient_hessian(
                    *self._lagged_friction_arguments(x_start, h), self._grad, self._vertex_hess
                )
        r_norm = momentum_residual(b.vertex_mass, b.vertex_free, v, v_start, self.gravity, self._grad, h, self._r)
        if with_hessian:
            self._assemble_newton_matrix(project=True, scale=h * h)
        return r_norm

    def _assemble_newton_matrix(self, *, project: bool, scale: float) -> None:
        """``A = M + scale (K + vertex blocks)`` into the CSR data (pinned rows/columns become identity).

        ``K`` is the elastic tangent at ``self._x`` (PSD-projected per tet when ``project``); the per-vertex
        contact/friction blocks must already be in ``self._vertex_hess``.
        """
        b = self.body
        elastic_hessian_blocks(
            self._x, b.tet_indices, b.tet_Dm_inv, b.tet_rest_volume, b.mu, b.lam, self._material, project,
            self._tet_hess,
        )  # fmt: skip
        self._data[:] = 0.0
        assemble_blocks(self._tet_hess, b.tet_scatter, self._data)
        assemble_blocks(self._vertex_hess, b.vertex_scatter, self._data)
        pat = b.pattern
        finish_newton_matrix(self._data, pat.diag_index, b.vertex_mass, scale, b.dof_fixed, pat.indptr, pat.indices)

    def step(self, state_in: SoftBodyState, state_out: SoftBodyState, dt: float) -> SoftStepStats:
        """Advance ``state_in`` by ``dt`` [s] with backward Euler into ``state_out`` (may alias)."""
        if self._root_finding:
            return self._step_root_finding(state_in, state_out, float(dt))
        b = self.body
        h = float(dt)
        x_start = np.ascontiguousarray(state_in.x, dtype=FLOAT).copy()
        v_start = np.ascontiguousarray(state_in.v, dtype=FLOAT).copy()
        v_start[b.vertex_pinned] = 0.0
        if self.friction_coefficient > 0.0 and self.plane_points.shape[0]:
            plane_normal_forces(
                *self._plane_contact_arguments(x_start),
                self._lambda_lag,
            )
        v = self._v
        v[:] = v_start
        stats = SoftStepStats()
        self._minimise_potential(v, x_start, v_start, h, stats)
        positions_from_velocity(x_start, v, h, state_out.x)
        state_out.v[:] = v
        self.stats = stats
        return stats

    def _minimise_potential(self, v, x_start, v_start, h: float, stats: SoftStepStats) -> None:
        """Newton on ``Phi(v)`` (lagged BE, module docstring) from ``v`` (V, 3) [m/s] in place; fills ``stats``."""
        b = self.body
        weight = np.sqrt(np.sum(b.vertex_mass[b.vertex_free] ** 2)) * np.sqrt(np.sum(self.gravity**2))
        phi = self._potential(v, x_start, v_start, h)
        stats.energy_history.append(phi)
        # Round-off scale of Phi: its own size plus the kinetic scales of the step.
        phi_scale = abs(phi) + 0.5 * float(np.sum(b.vertex_mass * (h * h * np.sum(self.gravity**2))))
        phi_scale += 0.5 * float(np.sum(b.vertex_mass[:, None] * v_start**2))
        r_scale = 0.0
        for it in range(self.max_newton_iterations):
            r_norm = self._residual_and_hessian(v, x_start, v_start, h, True)
            if it == 0:
                r_scale = residual_scale(r_norm, h, weight)
            stats.residual = r_norm / r_scale
            if r_norm <= self.residual_tolerance * r_scale:
                stats.converged = True
                return
            stats.pcg_iterations += self._solve_pcg(linear_forcing(r_norm, r_scale, self.pcg_tolerance))
            stats.newton_iterations = it + 1
            slope = serial_dot(self._r, self._dv)  # dPhi/dalpha at 0 (< 0 for SPD A)
            if not slope < 0.0:
                stats.line_search_failures += 1
                return
            if negligible_step(v, self._dv, self._v_trial, self.velocity_tolerance, slope, phi_scale):
                # The Newton correction is below the velocity tolerance: take it and stop.
                v[:] = self._v_trial
                stats.energy_history.append(self._potential(v, x_start, v_start, h))
                stats.converged = True
                return
            accepted, phi_trial = armijo_line_search(
                v, self._dv, self._v_trial, self.max_line_search,
                lambda trial: self._potential(trial, x_start, v_start, h), phi, slope,
            )  # fmt: skip
            if not accepted:
                # Near convergence Phi changes at round-off level and Armijo cannot see progress:
                # accept the full step if it reduces the residual norm instead.
                axpy_velocity(v, self._dv, 1.0, self._v_trial)
                r_trial = self._residual_and_hessian(self._v_trial, x_start, v_start, h, False)
                if not r_trial < r_norm:
                    stats.line_search_failures += 1
                    return
                axpy_velocity(v, self._dv, 1.0, self._v_trial)
                phi_trial = self._potential(self._v_trial, x_start, v_start, h)
            v[:] = self._v_trial
            phi = phi_trial
            stats.energy_history.append(phi)

    def _solve_pcg(self, tolerance: float) -> int:
        """``A dv = -r`` by block-Jacobi PCG from ``dv = 0`` to the relative ``tolerance``; returns the iterations."""
        pat = self.body.pattern
        np.negative(self._r, out=self._rhs)
        block3_jacobi_inverse(pat.indptr, pat.indices, self._data, self._inv_blocks)
        self._dv[:] = 0.0
        iterations, _ = pcg_solve_preconditioned(
            pat.indptr, pat.indices, self._data, self._rhs, self._dv, self._inv_diag, self._inv_blocks, tolerance,
            self.pcg_max_iterations, self._pcg_r, self._pcg_z, self._pcg_p, self._pcg_q, self._dv,
        )  # fmt: skip
        return iterations

    # ---------------------------------------------------------------------------------------
    # Root finding: fully implicit friction and/or trapezoidal rule

    def _force_gradient(self, x, v, beta, out_grad, out_hess) -> None:
        """``out_grad = dPsi/dx + dE_c/dx - f_f(x, v)`` [N] and the contact/friction blocks."""
        b = self.body
        elastic_gradient(x, b.tet_indices, b.tet_Dm_inv, b.tet_rest_volume, b.mu, b.lam, self._material, out_grad)
        out_hess[:] = 0.0
        if self.plane_points.shape[0]:
            plane_penalty_gradient_hessian(
                *self._plane_contact_arguments(x),
                out_grad,
                out_hess,
            )
            if self.friction_coefficient > 0.0:
                _, free, points, normals, kappa, delta = self._plane_contact_arguments(x)
                implicit_friction_gradient_jacobian(
                    x,
                    v,
                    free,
                    points,
                    normals,
                    kappa,
                    delta,
                    self.friction_coefficient,
                    self.friction_velocity,
                    beta,
                    out_grad,
                    out_hess,
                )

    def _root_residual(self, v, v_start, h, beta, with_jacobian: bool) -> float:
        """Fill ``_r`` (and the Jacobian in ``_data`` if asked) of the BE/TR residual; ``||r||``."""
        b = self.body
        positions_from_velocity(self._x_base, v, beta, self._x)
        self._force_gradient(self._x, v, beta, self._grad, self._vertex_hess)
        if self.integrator == "TR":
            self._grad += self._grad_start
            self._grad *= 0.5
        r_norm = momentum_residual(b.vertex_mass, b.vertex_free, v, v_start, self.gravity, self._grad, h, self._r)
        if with_jacobian:
            c = h if self.integrator == "BE" else 0.5 * h
            self._assemble_newton_matrix(project=False, scale=c * beta)
        return r_norm

    def _step_root_finding(self, state_in: SoftBodyState, state_out: SoftBodyState, h: float) -> SoftStepStats:
        """BE or TR step with fully implicit friction (module docstring) by Newton on the residual."""
        b = self.body
        x_start, v_start = self._x_n, self._v_n
        x_start[:] = state_in.x
        v_start[:] = state_in.v
        v_start[b.vertex_pinned] = 0.0
        if self.integrator == "TR":
            beta = 0.5 * h
            positions_from_velocity(x_start, v_start, beta, self._x_base)
            self._force_gradient(x_start, v_start, beta, self._grad_start, self._vertex_scratch)
        else:
            beta = h
            self._x_base[:] = x_start
        v = self._v
        v[:] = v_start
        stats = SoftStepStats()
        self._find_root(v, v_start, h, beta, stats)
        positions_from_velocity(self._x_base, v, beta, state_out.x)
        state_out.v[:] = v
        self.stats = stats
        return stats

    def _find_root(self, v, v_start, h: float, beta: float, stats: SoftStepStats) -> None:
        """Newton on ``r(v) = 0`` from ``v`` (V, 3) [m/s] in place: BiCGSTAB solves, backtracking on ``||r||``."""
        r_scale = 0.0
        r_norm = self._root_residual(v, v_start, h, beta, True)
        stats.merit_history.append(r_norm)
        for it in range(self.max_newton_iterations):
            if it == 0:
                r_scale = residual_scale(r_norm, h, self._weight)
            stats.residual = r_norm / r_scale
            if r_norm <= self.residual_tolerance * r_scale:
                stats.converged = True
                return
            forcing = linear_forcing(r_norm, r_scale, self.pcg_tolerance)
            lin_iters, lin_res = self._solve_bicgstab(forcing)
            stats.pcg_iterations += lin_iters
            stats.newton_iterations = it + 1
            if not lin_res <= forcing:
                stats.linear_failures += 1
                if not lin_res < 1.0:
                    stats.line_search_failures += 1
                    return
            if negligible_step(v, self._dv, self._v_trial, self.velocity_tolerance):
                v[:] = self._v_trial
                r_norm = self._root_residual(v, v_start, h, beta, False)
                stats.merit_history.append(r_norm)
                stats.residual = r_norm / r_scale
                stats.converged = True
                return
            if not self._merit_line_search(v, v_start, h, beta, r_norm, lin_res):
                stats.line_search_failures += 1
                return
            v[:] = self._v_trial
            r_norm = self._root_residual(v, v_start, h, beta, True)
            stats.merit_history.append(r_norm)
        stats.residual = r_norm / r_scale
        stats.converged = r_norm <= self.residual_tolerance * r_scale

    def _solve_bicgstab(self, tolerance: float) -> tuple[int, float]:
        """``J dv = -r`` by block-Jacobi BiCGSTAB from ``dv = 0``; returns (iterations, relative residual)."""
        pat = self.body.pattern
        np.negative(self._r, out=self._rhs)
        block3_jacobi_inverse(pat.indptr, pat.indices, self._data, self._inv_blocks)
        self._dv[:] = 0.0
        w = self._bicg
        return bicgstab_solve_preconditioned(
            pat.indptr, pat.indices, self._data, self._rhs, self._dv, self._no_diag, self._inv_blocks, tolerance,
            self.pcg_max_iterations, w[0], w[1], w[2], w[3], w[4], w[5], w[6], self._dv,
        )  # fmt: skip

    def _merit_line_search(self, v, v_start, h: float, beta: float, r_norm: float, lin_res: float) -> bool:
        """Backtracking on the merit ``||r||``: accept ``alpha`` when ``||r(v + alpha dv)|| <= (1 - 1e-4 alpha
        (1 - eta_lin)) ||r(v)||`` (``eta_lin`` = ``lin_res``); ``_v_trial`` holds the accepted velocities."""
        accepted, _ = backtracking_line_search(
            v, self._dv, self._v_trial, self.max_line_search,
            lambda trial: self._root_residual(trial, v_start, h, beta, False),
            lambda alpha, r_trial: r_trial <= (1.0 - ARMIJO_FRACTION * alpha * (1.0 - lin_res)) * r_norm,
        )  # fmt: skip
        return accepted
