"""Implicit step of a :class:`~.world.SoftWorld` (seed 003's soft-constraint formulation, lagged friction).

One backward Euler step minimises the incremental potential over the end-of-step velocities ``v``
of all nodes (``x = x^n + h v``):

    Phi(v) = 1/2 ||v - v^n - h g||^2_M + Psi(x) + D(x) + kappa sum_e b(d_e(x)) + F(x) + sum_b W_b(V_b(x))

- ``M``: lumped soft masses plus the consistent 12x12 mass of each dynamic box (affine body);
- ``Psi``: elastic energy (per-tet material; the dynamic boxes' stiff virtual tets included);
- ``D``: Rayleigh stiffness damping, ``(beta / 2h) dx^T K^n dx`` per tet (``K^n`` projected, at ``x^n``);
- ``b``: cubic penalty (:mod:`.kernels_penalty`, seed 003 eq. 3) on the contact elements of :mod:`.contact_elements`;
- ``F``: lagged smoothed friction (IPC style, normal force and tangent frozen at ``x^n``);
- ``W_b``: the volume penalty of body ``b`` (seed 003 eqs. 18–21).

Newton: ``A dv = -r`` with ``A = M + h^2 (K_proj + K_damp + contact GN + friction + W'' gV gV^T)``
(SPD), solved by PCG with a group block-Jacobi preconditioner (3x3 per soft node, 12x12 per dynamic
box); Armijo backtracking on ``Phi``. The stopping rules and the line search are :mod:`.newton`'s, shared
with the single-body reference solver. Pinned nodes move to their prescribed end-of-step positions.

Robustness: contact candidates are collected with a velocity margin at the start of the step and
re-collected at the end; a step whose result enters a new pair or penetrates a collider (``d < 0``)
is re-solved, the latter with the penalty stiffness doubled (seed 003's adaptive stiffness).
"""

from __future__ import annotations

import math

import numpy as np

from ..config import FLOAT
from ..contact_solvers.dense import solve_pgs_dense, solve_prox_dense
from ..enums import RFactorStrategy
from ..fem.kernels_elastic import world_elastic_energy, world_elastic_gradient, world_elastic_hessian_blocks
from ..fem.volume import (
    enclosed_volume,
    enclosed_volume_gradient,
    volume_penalty_local_hessian_blocks,
    volume_work,
    volume_work_first_derivative,
    volume_work_second_derivative,
)
from ..fem.world import AFFINE_STIFFNESS_FACTOR, ColliderKind, SoftWorld, SoftWorldState
from ..linalg.csr import CsrPattern, assemble_blocks, assemble_scaled_blocks
from ..linalg.pcg import serial_dot
from ..math.quat import rotation_matrix
from ..stop import StopRequest, check_stop
from .contact_collection import collect_contacts
from .contact_elements import ELEMENT_NODES, KIND_POINT_COLLIDER, KIND_POINT_TRIANGLE
from .kernels_contact import (
    axpy_velocity,
    finish_newton_matrix,
    inertia_energy,
    momentum_residual,
    positions_from_velocity,
)
from .kernels_friction import (
    contact_jacobian_apply,
    contact_jacobian_transpose_apply,
    friction_energy,
    friction_gradient,
    friction_setup,
)
from .kernels_operator import build_group_preconditioner, build_group_preconditioner_from, group_matrix_blocks
from .kernels_penalty import contact_energy, contact_gradient, contact_normal_forces
from .kernels_sgs import coupling_pattern, gather_coupling, group_layout, world_pcg
from .kernels_world import affine_inertia, damping_csr_energy_gradient, project_blocks_psd
from .newton import armijo_line_search, linear_forcing, negligible_step, residual_scale, target_forcing
from .solver_settings import SoftSettings, SoftWorldStats, check_settings, resolved_contact_thickness

MAX_STIFFNESS_DOUBLINGS = 6
"""Re-solves of one step with a doubled penalty stiffness when the result penetrates a collider."""

PREDICT_GROWTH = 2.0
"""Anchored friction: the implicit fixed point starts from the normal forces at the predicted end of the step, at
most this many times the start-of-step ones (an impact predicts a deep penetration; a new contact starts with none)."""

REFRESH_RATIO = 0.15
"""Newton keeps its matrix while every iteration divides ``||r||`` by at least 1 / this; a slower iteration
re-evaluates the elastic tangent at the iterate (see :meth:`SoftWorldSolver._newton`). Measured on the default
cube (bench_default_cube.py): at 0.5 the old tangent's linear tails (``||r||`` x 0.3-0.45 per iteration) ran on
for 5-6 iterations; at 0.15 a fresh tangent ends them in 1-2. CPU time per frame against 0.5 (one thread, same
process): default cube -16 % (6,000 tets) and -25 % (16,464), seed 003's squeeze -13 % (58k tets) and +10 %
(1.7k tets, where a tangent is cheap and Newton was already short); 0.25 keeps part of the tails."""

MATRIX_NONE, MATRIX_START, MATRIX_ITERATE = 0, 1, 2
"""What the CSR Newton matrix holds: nothing yet this step, the start matrix (tangent at x^n), or the tangent
at an iterate."""


class SoftWorldSolver:
    """Backward Euler Newton solver of a :class:`SoftWorld` (all scratch allocated once, contact
    arrays grown on demand)."""

    def __init__(self, world: SoftWorld, settings: SoftSettings | None = None):
        self.world = world
        self.settings = s = settings or SoftSettings()
        check_settings(s)
        self.stop: StopRequest | None = None
        """Checked before every Newton iteration (:mod:`..stop`): a set request ends the step mid-way."""
        self.delta = resolved_contact_thickness(world, s)
        self.kappa = s.contact_stiffness if s.contact_stiffness > 0.0 else self.automatic_stiffness()
        self.tet_mu = self._tet_mu_with_dynamic_boxes()
        self.node_free = ~world.node_pinned
        self.dof_fixed = np.repeat(world.node_pinned, 3)
        self.has_damping = bool(np.any(world.tet_damping > 0.0))
        self._init_matrix()
        self._init_preconditioner_groups()
        self._init_vectors()
        self._init_colliders()
        self._grow(64)
        self._anchors: dict = {}
        """Friction anchors (``friction_anchor``): contact key -> tangential offset (3,) [m] of the contact point
        at the end of the last step from the point where it stuck (see :meth:`_contact_key`)."""
        self.stats = SoftWorldStats()

    def _tet_mu_with_dynamic_boxes(self) -> np.ndarray:
        """Per-tet mu [Pa] (T,): the soft tets' own, and for each dynamic box's stiff virtual tet mu from the
        contact stiffness (see AFFINE_STIFFNESS_FACTOR)."""
        w = self.world
        tet_mu = w.tet_mu.copy()
        for a in range(w.affine_count):
            size = float(np.max(w.affine_half_extents[a]))
            E = AFFINE_STIFFNESS_FACTOR * max(w.max_youngs_modulus, self.kappa / size)
            tet_mu[w.affine_tet[a]] = 0.5 * E  # nu = 0: mu = E / 2, lambda = 0
        return tet_mu

    def _init_matrix(self) -> None:
        """CSR pattern of the Newton matrix: tets (soft + virtual), every node's own block and the surface
        triangles of the volume-penalty bodies; the per-element Hessian scratch and the boxes' mass blocks."""
        w = self.world
        # Volume penalty: bodies with a compressibility, and their surface triangles in the CSR pattern.
        self.volume_bodies = [b for b in range(w.body_count) if w.body_volume_kappa[b] > 0.0]
        triangles = [w.body_surface[b] for b in self.volume_bodies]
        self.pattern = CsrPattern.from_element_groups(
            [w.tet_indices, np.arange(w.node_count, dtype=np.int64)[:, None], *triangles], w.node_count
        )
        self.tet_scatter = self.pattern.scatter_index[0]
        self.triangle_scatter = self.pattern.scatter_index[2:]
        self._triangle_hess = [np.empty((len(t), 9, 9)) for t in triangles]
        self._data = self.pattern.zeros()
        self._tet_hess = np.empty((w.tet_count, 12, 12))
        # PSD-projected elastic tangent at x^n: Rayleigh damping's K^n and Newton's matrix until refreshed
        self._start_hess = np.empty((w.tet_count, 12, 12))
        # the Rayleigh damping matrix D = sum_t (beta_t / h) K_t^n of the step [N/m], assembled once per step
        self._damp_data = self.pattern.zeros() if self.has_damping else np.zeros(0)
        self._matrix_state = MATRIX_NONE
        self._project = False
        self._step_hessians = 0
        self._affine_blocks = np.zeros((w.affine_count, 12, 12))
        for a in range(w.affine_count):
            self._affine_blocks[a] = np.kron(w.affine_mass[a], np.eye(3))

    def _init_preconditioner_groups(self) -> None:
        """Preconditioner groups: one per soft node (3x3 block), one per dynamic box (its 4 nodes, 12x12)."""
        w = self.world
        G = w.soft_node_count + w.affine_count
        self.group_nodes = np.full((G, 4), -1, dtype=np.int64)
        self.group_nodes[: w.soft_node_count, 0] = np.arange(w.soft_node_count)
        self.group_size = np.ones(G, dtype=np.int64)
        self.node_group = np.arange(w.node_count, dtype=np.int64)
        for a in range(w.affine_count):
            g = w.soft_node_count + a
            self.group_nodes[g] = w.affine_nodes[a]
            self.group_size[g] = 4
            self.node_group[w.affine_nodes[a]] = g
        self._matrix_blocks = np.zeros((G, 12, 12))
        """The CSR matrix's part of every group's block (refreshed with the matrix)."""
        self._block_work = np.zeros((G, 12, 12))
        pat = self.pattern
        self._coupling = coupling_pattern(pat.indptr, pat.indices, self.node_group, self.group_nodes, self.group_size)
        """The preconditioner's couplings between groups (lower, higher), their values refreshed with the matrix."""
        self._sgs_work = np.zeros((5, 3 * w.node_count))
        self._group_layout = group_layout(self.group_nodes, self.group_size)
        self._packed = np.zeros((4, int(self._group_layout[2][-1])))
        """Each group's diagonal block factored, packed: ``R``, ``R^-1``, ``D^-1`` (``D = R R^T``), ``D_csr - 2 D``."""

    def _init_vectors(self) -> None:
        """Per-node vectors (N, 3) / flat (3N,) of the step, the BDF2 history and the volume-penalty scratch."""
        w = self.world
        N = w.node_count
        n = 3 * N
        self._x = np.empty((N, 3))
        self._x_n = np.empty((N, 3))
        self._v_n = np.empty((N, 3))
        self._x_base = np.empty((N, 3))
        self._v_pred = np.empty((N, 3))
        self._x_prev = np.empty((N, 3))
        self._v_prev = np.empty((N, 3))
        self._history_step = 0.0
        self._beta = 0.0
        self._v = np.empty((N, 3))
        self._v_trial = np.empty((N, 3))
        self._grad = np.empty((N, 3))
        self._grad_scratch = np.empty((N, 3))
        self._r_scratch = np.empty(3 * N)
        self._r = np.empty(n)
        self._rhs = np.empty(n)
        self._dv = np.empty(n)
        self._pcg_work = np.empty((4, n))
        self._margin = np.zeros(N)
        self._vol_grad = np.zeros((N, 3))
        self._vol_tmp = np.zeros((N, 3))
        self._vol_curv = np.zeros(w.body_count if self.volume_bodies else 0)

    def _init_colliders(self) -> None:
        """Collider poses at the start/end of the current step, the dynamic boxes' rest poses and the surface
        triangles of soft-soft contact (when there are several bodies)."""
        w = self.world
        C = w.collider_count
        self.col_pos0 = w.collider_position.copy()
        self.col_rot0 = np.array([rotation_matrix(q) for q in w.collider_orientation]).reshape(C, 3, 3)
        self.col_pos1 = self.col_pos0.copy()
        self.col_rot1 = self.col_rot0.copy()
        self.aff_rest_center = w.collider_position[w.affine_collider].reshape(-1, 3).copy()
        self.aff_rest_rot = self.col_rot0[w.affine_collider].reshape(-1, 3, 3).copy()
        soft_soft = self.settings.soft_soft and w.body_count > 1
        self._triangles = w.triangle_points if soft_soft else np.zeros((0, 3), np.int64)

    # -------------------------------------------------------------------------------------------

    def automatic_stiffness(self) -> float:
        """Default penalty stiffness [N/m]: stiff enough that the total weight resting on a single
        vertex sinks at most ``delta / 2`` into the layer (``kappa >= 4 W / (3 delta)``, seed 003's
        equilibrium ``d = delta - sqrt(W delta / (3 kappa))``), and at least ten times the stiffness
        ``E l`` of a tet of mean edge length ``l`` so contact stays stiffer than the material."""
        w = self.world
        weight = (w.node_mass.sum() + sum(float(m.sum()) for m in w.affine_mass)) * float(np.linalg.norm(w.gravity))
        mean_volume = float(w.tet_rest_volume[: w.soft_tet_count].mean())
        edge = (6.0 * np.sqrt(2.0) * mean_volume) ** (1.0 / 3.0)
        return max(4.0 * weight / (3.0 * self.delta), 10.0 * w.max_youngs_modulus * edge, 1.0)

    def _grow(self, capacity: int) -> None:
        E = int(capacity)
        self.el_capacity = E
        self.el_count = 0
        self.el_kind = np.zeros(E, dtype=np.int64)
        self.el_nodes = np.full((E, ELEMENT_NODES), -1, dtype=np.int64)
        self.el_weights = np.zeros((E, ELEMENT_NODES))
        self.el_target = np.zeros(E, dtype=np.int64)
        self.el_mu = np.zeros(E)
        self.el_coef = np.zeros((E, ELEMENT_NODES))
        self.el_g = np.zeros((E, 3))
        self.el_stiff = np.zeros(E)
        self.el_lambda = np.zeros(E)
        self.el_tangent = np.zeros((E, 3, 2))
        self.el_fcoef = np.zeros((E, ELEMENT_NODES))
        self.el_slip = np.zeros((E, 3))
        self.el_normal = np.zeros((E, 3))
        self.el_gap = np.zeros(E)
        self.el_h2 = np.zeros((E, 2, 2))

    def _geometry(self, end: bool):
        w = self.world
        pos, rot = (self.col_pos1, self.col_rot1) if end else (self.col_pos0, self.col_rot0)
        return (
            w.collider_shape, w.collider_params, pos, rot, w.affine_nodes, w.affine_rest_nodes,
            self.aff_rest_center, self.aff_rest_rot, w.affine_half_extents,
        )  # fmt: skip

    def _collect(self, x_a, x_b) -> int:
        w = self.world
        while True:
            count = collect_contacts(
                x_a, x_b, self._margin, self.delta, w.point_nodes, w.point_weights, w.point_friction,
                w.collider_kind, w.collider_friction, w.collider_anisotropy, self._geometry(False),
                self._geometry(True), w.affine_collider, w.affine_corner_weights, w.point_body, self._triangles,
                self.el_kind, self.el_nodes, self.el_weights, self.el_target, self.el_mu,
            )  # fmt: skip
            if count <= self.el_capacity:
                return count
            self._grow(2 * count)

    def _terms(self):
        w = self.world
        return (
            np.array([self.el_count], dtype=np.int64), self.el_nodes, self.el_coef, self.el_g, self.el_stiff,
            self.el_fcoef, self.el_tangent, self.el_h2, self.node_free, w.node_body, self._vol_grad, self._vol_curv,
        )  # fmt: skip

    # -------------------------------------------------------------------------------------------

    def set_collider_poses(self, start_pos, start_rot, end_pos, end_rot) -> None:
        """Poses of every collider at the start and the end of the next step: positions (C, 3) [m],
        rotation matrices (C, 3, 3). Entries of dynamic boxes are ignored."""
        self.col_pos0[:] = start_pos
        self.col_rot0[:] = start_rot
        self.col_pos1[:] = end_pos
        self.col_rot1[:] = end_rot

    def _potential(self, v, h) -> float:
        w = self.world
        x = self._x
        positions_from_velocity(self._x_base, v, self._beta, x)
        phi = inertia_energy(w.node_mass, self.node_free, v, self._v_pred, w.gravity, self._beta)
        if w.affine_count:
            phi += affine_inertia(
                w.affine_nodes, w.affine_mass, v, self._v_pred, w.gravity, self._beta, self._r_scratch
            )
        phi += world_elastic_energy(
            x, w.tet_indices, w.tet_Dm_inv, w.tet_rest_volume, self.tet_mu, w.tet_lam, w.tet_material
        )
        if self.has_damping:
            pat = self.pattern
            phi += damping_csr_energy_gradient(pat.indptr, pat.indices, self._damp_data, x, self._x_base,
                                               self._grad_scratch)  # fmt: skip
        if self.el_count:
            phi += contact_energy(
                x, self.el_count, self.el_kind, self.el_nodes, self.el_weights, self.el_target,
                self._geometry(True), self.kappa, self.delta,
            )  # fmt: skip
            phi += friction_energy(
                x, self._x_base, self.el_count, self.el_nodes, self.el_lambda, self.el_mu, self.el_tangent,
                self.el_fcoef, self.el_slip, self._eps_h,
            )  # fmt: skip
        for b in self.volume_bodies:
            V = enclosed_volume(x, w.body_surface[b])
            phi += volume_work(V, w.body_rest_volume[b], w.body_volume_kappa[b], int(w.body_volume_model[b]))
        return phi

    def _residual(self, v, h, with_matrix: bool, project: bool = True) -> tuple[float, float]:
        """Fill ``_r`` (and the Newton matrix) at ``v``; return ``(||r||, max penetration)``."""
        w = self.world
        x = self._x
        positions_from_velocity(self._x_base, v, self._beta, x)
        g = self._grad
        world_elastic_gradient(x, w.tet_indices, w.tet_Dm_inv, w.tet_rest_volume, self.tet_mu, w.tet_lam,
                               w.tet_material, g)  # fmt: skip
        if self.has_damping:
            pat = self.pattern
            damping_csr_energy_gradient(pat.indptr, pat.indices, self._damp_data, x, self._x_base, g)
        worst = 0.0
        if self.el_count:
            worst = contact_gradient(
                x, self.el_count, self.el_kind, self.el_nodes, self.el_weights, self.el_target,
                self._geometry(True), self.kappa, self.delta, self.node_free, g, self.el_coef, self.el_g,
                self.el_stiff,
            )  # fmt: skip
            friction_gradient(
                x, self._x_base, self.el_count, self.el_nodes, self.el_lambda, self.el_mu, self.el_tangent,
                self.el_fcoef, self.el_slip, self._eps_h, g, self.el_h2,
            )  # fmt: skip
        for b in self.volume_bodies:
            s, e = int(w.body_node_start[b]), int(w.body_node_start[b + 1])
            tri = w.body_surface[b]
            V = enclosed_volume(x, tri)
            args = (V, w.body_rest_volume[b], w.body_volume_kappa[b], int(w.body_volume_model[b]))
            enclosed_volume_gradient(x, tri, self._vol_tmp)
            self._vol_grad[s:e] = self._vol_tmp[s:e]
            g[s:e] += volume_work_first_derivative(*args) * self._vol_tmp[s:e]
            self._vol_curv[b] = max(volume_work_second_derivative(*args), 0.0)
        r_norm = momentum_residual(w.node_mass, self.node_free, v, self._v_pred, w.gravity, g, self._beta, self._r)
        if w.affine_count:
            affine_inertia(w.affine_nodes, w.affine_mass, v, self._v_pred, w.gravity, self._beta, self._r)
            r_norm = float(np.sqrt(serial_dot(self._r, self._r)))
        if with_matrix:
            self._assemble_matrix(x, project)
        return r_norm, worst

    def _assemble_matrix(self, x, project: bool) -> None:
        """The Newton matrix ``M + beta^2 (K(x) + (beta_d / beta) K^n + volume terms)`` at positions ``x`` (N, 3)
        [m] into the CSR data: the exact elastic tangent, or its PSD projection with ``project``."""
        w = self.world
        world_elastic_hessian_blocks(x, w.tet_indices, w.tet_Dm_inv, w.tet_rest_volume, self.tet_mu, w.tet_lam,
                                     w.tet_material, project, self._tet_hess)  # fmt: skip
        self._step_hessians += 1
        self._assemble_stiffness(self._tet_hess)
        self._finish_matrix(x, project)
        self._matrix_state = MATRIX_ITERATE

    def _assemble_start_matrix(self) -> None:
        """The step's first Newton matrix: the elastic tangent projected at ``x^n`` (already evaluated for the
        Rayleigh damping), ``M + beta^2 (1 + beta_d / beta) K^n + volume terms at x^n``. No tangent is evaluated."""
        self._assemble_stiffness(self._start_hess)
        self._finish_matrix(self._x_n, True)
        self._matrix_state = MATRIX_START

    def _assemble_stiffness(self, tet_blocks) -> None:
        """CSR data = the elastic tet blocks (T, 12, 12) [N/m] + the step's Rayleigh damping matrix."""
        data = self._data
        if self.has_damping:
            data[:] = self._damp_data
        else:
            data[:] = 0.0
        assemble_blocks(tet_blocks, self.tet_scatter, data)

    def _finish_matrix(self, x, project: bool) -> None:
        """Add the volume penalty's local terms at ``x``, the mass, the pinned rows and the boxes' mass blocks to
        the assembled ``beta^-2``-scaled stiffness in the CSR data."""
        w = self.world
        data = self._data
        # Volume penalty: the local term W'(V) d2V/dx2 (projected per triangle with the tets; the
        # rank-one term W'' gV gV^T is applied matrix-free by the operator).
        for k, b in enumerate(self.volume_bodies):
            blocks = self._triangle_hess[k]
            volume_penalty_local_hessian_blocks(
                x, w.body_surface[b], w.body_rest_volume[b], w.body_volume_kappa[b],
                int(w.body_volume_model[b]), blocks,
            )  # fmt: skip
            if project:
                project_blocks_psd(blocks)
            assemble_blocks(blocks, self.triangle_scatter[k], data)
        pat = self.pattern
        finish_newton_matrix(data, pat.diag_index, w.node_mass, self._beta**2, self.dof_fixed, pat.indptr, pat.indices)
        if w.affine_count:
            assemble_blocks(self._affine_blocks, self.tet_scatter[w.affine_tet], data)
        group_matrix_blocks((pat.indptr, pat.indices, data), self.node_group, self.group_nodes, self.group_size,
                            self._matrix_blocks)  # fmt: skip
        for coupling in self._coupling:
            gather_coupling(data, coupling[3], coupling[4])

    # -------------------------------------------------------------------------------------------

    def begin_step(self, state_in: SoftWorldState, h: float, pin_targets=None) -> None:
        """Freeze the start-of-step data (x^n, v^n, pin velocities, damping tangent, contact candidates,
        lagged friction) for a step of ``h`` [s]; :meth:`potential` and :meth:`gradient` then evaluate
        the incremental potential of that step."""
        w = self.world
        self._x_n[:] = state_in.x
        self._v_n[:] = state_in.v
        # BE: x = x^n + h v. BDF2 (after one BE step of the same size): x = (4 x^n - x^{n-1})/3 + (2h/3) v,
        # with the inertia predictor v_pred = (4 v^n - v^{n-1})/3; the potential keeps its BE form with
        # (x^n, v^n, h) replaced by (x_base, v_pred, beta).
        bdf2 = self.settings.integrator == "BDF2" and self._history_step == h
        if bdf2:
            self._x_base[:] = (4.0 * self._x_n - self._x_prev) / 3.0
            self._v_pred[:] = (4.0 * self._v_n - self._v_prev) / 3.0
            self._beta = 2.0 * h / 3.0
        else:
            self._x_base[:] = self._x_n
            self._v_pred[:] = self._v_n
            self._beta = h
        self._x_prev[:] = self._x_n
        self._v_prev[:] = self._v_n
        self._history_step = h
        pinned = w.node_pinned
        if pin_targets is None:
            self._v_pred[pinned] = (self._x_n[pinned] - self._x_base[pinned]) / self._beta
        else:
            self._v_pred[pinned] = (np.asarray(pin_targets)[pinned] - self._x_base[pinned]) / self._beta
        self._h = h
        self._eps_h = self.settings.friction_velocity * self._beta
        # The elastic tangent projected at x^n: Rayleigh damping's K^n, and Newton's first matrix.
        world_elastic_hessian_blocks(self._x_n, w.tet_indices, w.tet_Dm_inv, w.tet_rest_volume, self.tet_mu,
                                     w.tet_lam, w.tet_material, True, self._start_hess)  # fmt: skip
        self._step_hessians = 1
        self._matrix_state = MATRIX_NONE
        self._project = False
        self._damp_scale = w.tet_damping / self._beta
        if self.has_damping:
            self._damp_data[:] = 0.0
            assemble_scaled_blocks(self._start_hess, self._damp_scale, self.tet_scatter, self._damp_data)
        # Candidate margin: twice the distance a node travels at its current speed, plus the layer.
        speed = np.sqrt(np.einsum("ij,ij->i", self._v_n, self._v_n))
        col_speed = float(np.max(np.linalg.norm(self.col_pos1 - self.col_pos0, axis=1), initial=0.0)) / h
        self._margin[:] = self.delta + 2.0 * h * (speed + col_speed) + 0.5 * h * h * float(np.linalg.norm(w.gravity))
        self.el_count = self._collect(self._x_n, self._x_n)
        self._setup_friction()
        self._start_penetration = self._penetration(self._x_n)

    def _penetration(self, x, end: bool = False) -> float:
        """Largest ``-d`` [m] over the current contact elements at ``x``, against the colliders' start-of-step
        poses (or end-of-step poses with ``end``)."""
        if not self.el_count:
            return 0.0
        return contact_gradient(
            x, self.el_count, self.el_kind, self.el_nodes, self.el_weights, self.el_target,
            self._geometry(end), self.kappa, self.delta, self.node_free, self._grad_scratch, self.el_coef,
            self.el_g, self.el_stiff,
        )  # fmt: skip

    def potential(self, v) -> float:
        """Incremental potential ``Phi(v)`` [J] of the step prepared by :meth:`begin_step`."""
        return self._potential(np.ascontiguousarray(v, dtype=FLOAT), self._h)

    def gradient(self, v) -> np.ndarray:
        """``dPhi/dv`` (N, 3) [N s] (pinned rows 0) of the step prepared by :meth:`begin_step`."""
        self._residual(np.ascontiguousarray(v, dtype=FLOAT), self._h, False)
        return self._r.reshape(-1, 3).copy()

    def step(self, state_in: SoftWorldState, state_out: SoftWorldState, dt: float, pin_targets=None) -> SoftWorldStats:
        """Advance by ``dt`` [s] into ``state_out`` (may alias ``state_in``).

        Args:
            pin_targets: (N, 3) end-of-step positions of the pinned nodes [m] (rows of free nodes are
                ignored); None keeps the pinned nodes where they are.
        """
        w = self.world
        h = float(dt)
        if self.settings.formulation == "DUAL":
            return self._step_dual(state_in, state_out, h, pin_targets)
        self.begin_step(state_in, h, pin_targets)
        stats = SoftWorldStats()
        v = self._v
        v[:] = self._v_pred
        loose = False
        for attempt in range(MAX_STIFFNESS_DOUBLINGS + 4):
            self._setup_friction()
            # With implicit friction the solution is solved again once the normal forces are updated: the first
            # solve needs only the accuracy of that fixed point.
            loose = self._friction_follows()
            if loose and self._anchored():
                self._predict_friction(v)
            tolerance = max(self.settings.residual_tolerance, self.settings.friction_tolerance) if loose else None
            self._newton(v, h, stats, tolerance)
            positions_from_velocity(self._x_base, v, self._beta, self._x)
            count = self._collect(self._x_n, self._x)
            worst = self._penetration(self._x, end=True)
            stats.max_penetration = worst
            if count > self.el_count:
                self.el_count = count  # a new pair came within reach: solve again with it
                stats.resolves += 1
                continue
            if worst > self._start_penetration and attempt < MAX_STIFFNESS_DOUBLINGS:
                self.kappa *= 2.0  # adaptive stiffness (seed 003): pushed through a collider
                stats.resolves += 1
                v[:] = self._v_pred
                continue
            if self.settings.friction_mode == "implicit":
                self._implicit_friction(v, h, stats, loose)
            break
        if self._anchored():
            positions_from_velocity(self._x_base, v, self._beta, self._x)
            self._update_anchors(self._x)
        stats.contact_count = self.el_count
        stats.contact_force = np.zeros((w.body_count, w.collider_count, 3))
        stats.body_contact_force = np.zeros((w.body_count, w.body_count, 3))
        positions_from_velocity(self._x_base, v, self._beta, self._x)
        contact_normal_forces(
            self._x, self.el_count, self.el_kind, self.el_nodes, self.el_weights, self.el_target,
            self._geometry(True), self.kappa, self.delta, w.node_body, w.affine_collider, stats.contact_force,
            stats.body_contact_force,
        )  # fmt: skip
        stats.contact_stiffness = self.kappa
        stats.hessian_evaluations = self._step_hessians
        positions_from_velocity(self._x_base, v, self._beta, state_out.x)
        state_out.v[:] = v
        self.stats = stats
        return stats

    def _friction_follows(self) -> bool:
        """True when the implicit friction's fixed point will update the normal forces and solve again."""
        s = self.settings
        return (
            s.friction_mode == "implicit"
            and s.friction_iterations > 0
            and bool(np.any(self.el_mu[: self.el_count] > 0.0))
        )

    def _step_dual(self, state_in, state_out, h: float, pin_targets) -> SoftWorldStats:
        """Dual (Delassus) step, course §4.3.3: the contact-free backward Euler velocity ``u_free``
        (Newton), then ``u = u_free + A^-1 J^T r`` with contact impulses ``r`` [N s] solving the Coulomb
        problem on ``u_c = W r + q``, ``W = J A^-1 J^T`` (one PCG solve per contact row), ``A`` the
        PSD-projected Newton matrix at ``u_free`` and ``q = J u_free - (collider velocity) + gap / h``."""
        stats = SoftWorldStats()
        self.begin_step(state_in, h, pin_targets)
        m = self.el_count
        self.el_count = 0  # the Newton operator must not contain penalty terms
        v = self._v
        v[:] = self._v_pred
        self._newton(v, h, stats)
        self._residual(v, h, True, True)
        u_free = v.reshape(-1).copy()
        csr, precond = self._operator()
        terms = self._terms()
        build_group_preconditioner(
            csr, terms, self._beta**2, self.node_group, self.group_nodes, self.group_size, self._group_layout[2],
            self._packed,
        )  # fmt: skip
        impulse = np.zeros(3 * m)
        if m:
            v.reshape(-1)[:] = u_free + self._dual_correction(u_free, m, h, csr, terms, precond, impulse, stats)
        stats.contact_count = m
        self._dual_contact_forces(impulse, m, h, stats)
        self.el_count = m
        stats.contact_stiffness = 0.0
        stats.hessian_evaluations = self._step_hessians
        positions_from_velocity(self._x_base, v, self._beta, self._x)
        stats.max_penetration = self._penetration(self._x, end=True)
        positions_from_velocity(self._x_base, v, self._beta, state_out.x)
        state_out.v[:] = v
        self.stats = stats
        return stats

    def _dual_correction(self, u_free, m: int, h: float, csr, terms, precond, impulse, stats) -> np.ndarray:
        """Solve the Coulomb problem of the ``m`` contact elements for ``impulse`` (3m,) [N s] (normal, two
        tangents per element) and return the velocity correction ``A^-1 J^T r`` (3N,) [m/s]."""
        s = self.settings
        frame = (self.el_nodes, self.el_fcoef, self.el_normal, self.el_tangent)
        W = self._delassus(m, u_free.shape[0], frame, csr, terms, precond, stats)
        q = np.empty(3 * m)
        contact_jacobian_apply(u_free, m, *frame, q)
        slip = self.el_slip[:m] / h  # collider surface velocity at the contact
        q[0::3] -= np.einsum("ei,ei->e", self.el_normal[:m], slip)
        q[1::3] -= np.einsum("ei,ei->e", self.el_tangent[:m, :, 0], slip)
        q[2::3] -= np.einsum("ei,ei->e", self.el_tangent[:m, :, 1], slip)
        gap = self.el_gap[:m]
        q[0::3] += np.where(gap >= 0.0, gap, s.dual_stabilization * gap) / h
        result = np.zeros(3)
        if s.dual_solver == "PGS":
            solve_pgs_dense(W, q, self.el_mu[:m].copy(), s.dual_iterations, s.dual_tolerance, impulse, result)
        else:
            solve_prox_dense(W, q, self.el_mu[:m].copy(), int(RFactorStrategy.GLOBAL), s.dual_iterations,
                             s.dual_tolerance, 0.9, np.zeros(3 * m), impulse, result)  # fmt: skip
        stats.dual_sweeps = int(result[0])
        rhs = np.zeros(u_free.shape[0])
        contact_jacobian_transpose_apply(impulse, m, *frame, rhs)
        y = np.zeros(u_free.shape[0])
        iters, _, _ = world_pcg(terms, self._beta**2, precond, rhs, y, 1e-10, s.pcg_max_iterations,
                                self._pcg_work)  # fmt: skip
        stats.pcg_iterations += iters
        return y

    def _delassus(self, m: int, n: int, frame, csr, terms, precond, stats) -> np.ndarray:
        """The Delassus operator ``W = J A^-1 J^T`` (3m, 3m), one PCG solve per contact row, symmetrised."""
        W = np.empty((3 * m, 3 * m))
        unit = np.zeros(3 * m)
        rhs = np.empty(n)
        y = np.empty(n)
        column = np.empty(3 * m)  # contiguous: a strided W[:, row] would compile contact_jacobian_apply again
        for row in range(3 * m):
            unit[row] = 1.0
            rhs[:] = 0.0
            contact_jacobian_transpose_apply(unit, m, *frame, rhs)
            unit[row] = 0.0
            y[:] = 0.0
            iters, _, _ = world_pcg(terms, self._beta**2, precond, rhs, y, 1e-10, self.settings.pcg_max_iterations,
                                    self._pcg_work)  # fmt: skip
            stats.pcg_iterations += iters
            contact_jacobian_apply(y, m, *frame, column)
            W[:, row] = column
        return 0.5 * (W + W.T)

    def _dual_contact_forces(self, impulse, m: int, h: float, stats: SoftWorldStats) -> None:
        """``stats.contact_force`` (B, C, 3) and ``stats.body_contact_force`` (B, B, 3) [N] from the normal
        impulses of the ``m`` contact elements (box corners, which belong to no soft body, are skipped)."""
        w = self.world
        stats.contact_force = np.zeros((w.body_count, w.collider_count, 3))
        stats.body_contact_force = np.zeros((w.body_count, w.body_count, 3))
        for e in range(m):
            body = int(w.node_body[self.el_nodes[e, 0]])
            if body < 0:
                continue
            if self.el_kind[e] == KIND_POINT_TRIANGLE:
                other = int(w.node_body[self.el_nodes[e, 4]])
                stats.body_contact_force[body, other] -= impulse[3 * e] * self.el_normal[e] / h
                continue
            c = self.el_target[e] if self.el_kind[e] == KIND_POINT_COLLIDER else w.affine_collider[self.el_target[e]]
            stats.contact_force[body, c] -= impulse[3 * e] * self.el_normal[e] / h

    def _implicit_friction(self, v, h: float, stats: SoftWorldStats, loose: bool = False) -> None:
        """Friction evaluated at the end of the step (seed 003 eq. 23) by fixed-point iteration: take the
        normal forces and contact frames from the solution, solve again, until the normal forces change by
        less than ``friction_tolerance`` (relative); a converged fixed point solves the fully implicit
        friction equations. The collider displacement and the point coefficients stay those of ``x^n``.
        ``loose``: ``v`` was solved only to the fixed point's accuracy; it is solved again to Newton's own
        tolerance with the updated forces even when the fixed point has converged."""
        s = self.settings
        E = self.el_count
        if not np.any(self.el_mu[:E] > 0.0):
            if loose:
                self._newton(v, h, stats)
            return
        slip = self.el_slip[:E].copy()
        fcoef = self.el_fcoef[:E].copy()
        for _ in range(s.friction_iterations):
            positions_from_velocity(self._x_base, v, self._beta, self._x)
            previous = self.el_lambda[:E].copy()
            self._setup_friction(self._x)
            self.el_slip[:E] = slip
            self.el_fcoef[:E] = fcoef
            change = float(np.max(np.abs(self.el_lambda[:E] - previous), initial=0.0))
            scale = float(np.max(np.abs(self.el_lambda[:E]), initial=0.0))
            stats.friction_iterations += 1
            converged = change <= s.friction_tolerance * max(scale, 1.0e-300)
            if converged and not loose:
                stats.friction_converged = True
                return
            self._newton(v, h, stats)
            loose = False
            if converged:
                stats.friction_converged = True
                return
        if loose:
            self._newton(v, h, stats)

    def _setup_friction(self, x=None) -> None:
        w = self.world
        if self.el_count:
            end = x is not None  # end-of-step state: colliders at their end pose
            friction_setup(
                x if end else self._x_n, self.el_count, self.el_kind, self.el_nodes, self.el_weights,
                self.el_target, self._geometry(True), self.col_pos1 if end else self.col_pos0,
                self.col_rot1 if end else self.col_rot0, w.collider_anisotropy, self.kappa, self.delta, self.el_mu,
                self.node_free, self.el_lambda, self.el_tangent, self.el_fcoef, self.el_slip, self.el_normal,
                self.el_gap,
            )  # fmt: skip
            if self._beta != self._h:  # friction slides over beta: the colliders' own motion over the same time
                self.el_slip[: self.el_count] *= self._beta / self._h
            if not end and self._anchored():
                self._apply_anchors()
        _ = w

    def _predict_friction(self, v) -> None:
        """Start the implicit friction's fixed point from the normal forces and frames at the end-of-step positions
        of the initial guess ``v`` (N, 3) [m/s] (at most ``PREDICT_GROWTH`` times those at ``x^n``) instead of
        those at ``x^n``: a resting or smoothly moving body's forces are then within the fixed point's tolerance
        after the first solve, one solve fewer per step (measured on the default cube: 10.1 -> 7.8 Newton
        iterations per step)."""
        E = self.el_count
        slip = self.el_slip[:E].copy()
        fcoef = self.el_fcoef[:E].copy()
        start = self.el_lambda[:E].copy()
        positions_from_velocity(self._x_base, v, self._beta, self._x)
        self._setup_friction(self._x)
        self.el_slip[:E] = slip
        self.el_fcoef[:E] = fcoef
        np.minimum(self.el_lambda[:E], PREDICT_GROWTH * start, out=self.el_lambda[:E])

    def _anchored(self) -> bool:
        return self.settings.friction_anchor and self.settings.formulation == "IMPLICIT"

    def _contact_key(self, e: int) -> tuple:
        """Identity of contact element ``e`` across steps: its kind, target and contact point (the first 4 node
        slots and weights, which the collection copies from the world's point samples)."""
        return (int(self.el_kind[e]), int(self.el_target[e]), self.el_nodes[e, :4].tobytes(),
                self.el_weights[e, :4].tobytes())  # fmt: skip

    def _apply_anchors(self) -> None:
        """Shift every anchored element's frozen collider displacement by its offset ``o`` (3,) [m]: the
        tangential displacement ``T^T (sum_k f_k dx_k - s)`` then runs from the anchor (``s -> s - o``)."""
        anchors = self._anchors
        if not anchors:
            return
        for e in range(self.el_count):
            offset = anchors.get(self._contact_key(e))
            if offset is not None:
                self.el_slip[e] -= offset

    def _update_anchors(self, x) -> None:
        """After the step (end positions ``x`` (N, 3) [m]): each element in friction contact keeps the tangential
        part of its displacement from its anchor, capped at ``eps_v h`` in the friction metric (beyond it the
        contact slides and drags the anchor); elements out of contact release theirs."""
        E = self.el_count
        anchors = {}
        if E:
            nodes = np.maximum(self.el_nodes[:E], 0)
            fcoef = self.el_fcoef[:E]
            d = np.einsum("ek,eki->ei", fcoef, x[nodes] - self._x_base[nodes]) - self.el_slip[:E]
            n = self.el_normal[:E]
            d -= np.einsum("ei,ei->e", n, d)[:, None] * n
            y = np.linalg.norm(np.einsum("eij,ei->ej", self.el_tangent[:E], d), axis=1)
            scale = np.where(y > self._eps_h, self._eps_h / np.maximum(y, 1.0e-300), 1.0)
            d *= scale[:, None]
            for e in range(E):
                if self.el_lambda[e] > 0.0:
                    anchors[self._contact_key(e)] = d[e].copy()
        self._anchors = anchors

    def _newton(self, v, h, stats: SoftWorldStats, tolerance: float | None = None) -> None:
        """Minimise ``Phi`` over ``v`` (N, 3) [m/s] in place from its current value (module docstring); adds to
        ``stats``. Stopping rules and line search: :mod:`.newton`; ``tolerance`` overrides
        ``settings.residual_tolerance``.

        The matrix is a modified Newton's: the step starts with the elastic tangent projected at ``x^n`` (the
        Rayleigh damping evaluates it anyway) and keeps whatever matrix it has while each iteration divides
        ``||r||`` by at least ``1 / REFRESH_RATIO``; a slower iteration, an ascent direction or a failed line
        search re-evaluates the tangent at the iterate (exact while PCG finds it positive definite, then
        PSD-projected), which then serves the next iterations. The contact, friction and volume terms are always
        those of the iterate (applied matrix-free), so the solution is Newton's; only the path differs.
        """
        s = self.settings
        w = self.world
        tolerance = s.residual_tolerance if tolerance is None else tolerance
        weight = float(np.sqrt(np.sum(w.node_mass[self.node_free] ** 2)) * np.linalg.norm(w.gravity))
        phi = self._potential(v, h)
        stats.energy_history.append(phi)
        phi_scale = abs(phi) + 0.5 * float(np.sum(w.node_mass[:, None] * self._v_n**2)) + h * h * weight
        r_scale = 0.0
        stats.converged = False  # the step's last solve decides
        previous = math.inf
        refresh = False
        fresh = False  # the matrix was evaluated at the current iterate
        for it in range(s.max_newton_iterations):
            check_stop(self.stop)
            r_norm, _ = self._residual(v, h, False)
            if it == 0:
                r_scale = residual_scale(r_norm, self._beta, weight)
            stats.residual = r_norm / r_scale
            stats.residual_history.append(stats.residual)
            if r_norm <= tolerance * r_scale:
                stats.converged = True
                return
            if self._matrix_state == MATRIX_NONE:
                self._assemble_start_matrix()
            elif not fresh and (refresh or r_norm > REFRESH_RATIO * previous):
                self._assemble_matrix(self._x, self._project)
                fresh = True
            refresh = False
            previous = r_norm
            np.negative(self._r, out=self._rhs)
            # inexact Newton, and no more accurate than the last step before the stopping test needs
            forcing = max(linear_forcing(r_norm, r_scale, s.pcg_tolerance), target_forcing(r_norm, tolerance * r_scale))
            self._solve_newton_system(v, h, forcing, stats)
            stats.newton_iterations += 1
            slope = serial_dot(self._r, self._dv)
            if not slope < 0.0:
                if fresh:
                    return
                refresh = True  # not a descent direction for this iterate's potential: its own tangent
                continue
            if negligible_step(v, self._dv, self._v_trial, s.velocity_tolerance, slope, phi_scale):
                v[:] = self._v_trial
                if fresh:
                    stats.converged = True
                    return
                # a small step of an older matrix is no proof of convergence (a stiff body that turned
                # resists turning further in the old tangent): measure again with the iterate's own
                refresh = True
                continue
            # An older matrix's direction is taken whole or not at all: when its full step does not decrease
            # Phi enough, the matrix is too far from the iterate's (e.g. a stiff body turned since it was
            # evaluated) and the iteration is done again with a fresh one.
            trials = s.max_line_search if fresh else 1
            accepted, phi_trial = armijo_line_search(
                v, self._dv, self._v_trial, trials, lambda trial: self._potential(trial, h), phi, slope
            )
            if not accepted:
                if fresh:
                    # Near the solution Phi's decrease can fall below its rounding (a stiff friction spring): the
                    # full step is then taken when it halves ||r||, the merit Newton converges in.
                    axpy_velocity(v, self._dv, 1.0, self._v_trial)
                    r_trial, _ = self._residual(self._v_trial, h, False)
                    if not r_trial <= 0.5 * r_norm:
                        return
                    v[:] = self._v_trial
                    fresh = False
                    phi = self._potential(v, h)
                    stats.energy_history.append(phi)
                    continue
                refresh = True
                continue
            v[:] = self._v_trial
            fresh = False
            phi = phi_trial
            stats.energy_history.append(phi)

    def _operator(self):
        """``(csr, preconditioner)`` of the current matrix: the CSR, and what :func:`~.kernels_sgs.world_pcg` takes."""
        pat = self.pattern
        precond = (*self._group_layout, self._packed, *self._coupling, self._sgs_work)
        return (pat.indptr, pat.indices, self._data), precond

    def _solve_newton_system(self, v, h, forcing: float, stats: SoftWorldStats) -> None:
        """``dv = A^-1 rhs`` by PCG to the relative tolerance ``forcing``; when PCG meets negative curvature of
        the exact tangent (assembled at ``v``), re-assemble with PSD projection at ``v`` and solve again (the
        rest of the step then projects)."""
        csr, precond = self._operator()
        while True:
            terms = self._terms()
            build_group_preconditioner_from(
                self._matrix_blocks, terms, self._beta**2, self.node_group, self.group_nodes, self.group_size,
                self._group_layout[2], self._block_work, self._packed,
            )  # fmt: skip
            self._dv[:] = 0.0
            iters, _, indefinite = world_pcg(terms, self._beta**2, precond, self._rhs, self._dv, forcing,
                                             self.settings.pcg_max_iterations, self._pcg_work)  # fmt: skip
            stats.pcg_iterations += iters
            if not indefinite or self._project or self._matrix_state != MATRIX_ITERATE:
                return
            self._project = True
            stats.projected = True
            self._residual(v, h, True, True)


def rotations(quats) -> np.ndarray:
    """Rotation matrices (K, 3, 3) of unit quaternions (K, 4) wxyz."""
    q = np.asarray(quats, dtype=FLOAT).reshape(-1, 4)
    return np.array([rotation_matrix(qi) for qi in q]).reshape(-1, 3, 3)


__all__ = [
    "ColliderKind",
    "SoftSettings",
    "SoftWorldSolver",
    "SoftWorldStats",
    "resolved_contact_thickness",
    "rotations",
]
