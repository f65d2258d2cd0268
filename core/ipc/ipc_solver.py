"""Projected Newton on the IPC incremental potential with a CCD-filtered line search (course §5.3).

One step (course D.3.7, Algorithms 18 and 20):

1. Targets: ``x~ = x^t + h v^t + h^2 g``; pinned and kinematic nodes get their end-of-step targets.
2. Barrier stiffness: automatic (IPC's rule, :func:`.barrier.initial_barrier_stiffness`) unless set;
   doubled during the solve while the closest distance keeps shrinking (``update_barrier_stiffness``).
3. Friction lag: closest points, tangent bases and normal forces of the pairs closer than dhat at the
   lag point (the step start; each further lagging iteration re-lags at the last solution).
4. Newton: gradient and Hessian (elasticity per tet, barrier and friction per pair, the latter two
   PSD-projected per pair), an inexact PCG solve, then a line search that starts at the largest
   collision-free step (additive CCD over the swept-box candidates) and halves until the objective
   decreases. A step that would invert a tet has infinite energy (classical neo-Hookean) and is halved
   away too, so every accepted iterate is intersection- and inversion-free. Stops when
   ``||dx||_inf / h < tolerance * bbox diagonal``.

The elastic Hessian is the exact one (:mod:`.elasticity`) unless the solve meets negative curvature; only
then is that iteration's elastic Hessian projected to PSD per tet and the system solved again. Projecting
every tet's Hessian always (the textbook projected Newton, course §5.3.2) clamps the negative curvature of
every compressed tet and overestimates the stiffness of the whole body: on the default cube pressed onto a
plane every Newton step was accepted whole yet shrank only ~5 % per iteration (19.5 iterations per step,
65 at most); with the exact Hessian the same steps take 2-14 (README, ``bench_ipc_default_cube.py``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numba
import numpy as np

from ..fem.kernels_elastic import world_elastic_energy, world_elastic_gradient
from ..fem.world import AFFINE_STIFFNESS_FACTOR, SoftWorldState
from ..linalg.block_sparse import BlockPattern, add_block_diagonal
from ..math.quat import rotation_matrix
from ..stop import StopRequest, check_stop
from .barrier import initial_barrier_stiffness, update_barrier_stiffness
from .broad_phase import collision_candidates
from .ccd import max_collision_free_step
from .elasticity import elastic_gradient_and_hessian
from .ipc_world import IpcWorld
from .kernels import (
    barrier_assemble,
    barrier_energy,
    friction_assemble,
    friction_energy,
    friction_lag,
    inertia_energy,
    inertia_energy_gradient,
    near_pairs,
    pair_quads,
    scatter_surface,
    surface_positions,
)
from .newton_system import NEGATIVE_CURVATURE, add_affine_mass, build_preconditioner, ipc_pcg

SPRING_FACTOR = 1.0e8
"""Stiffness of the springs holding pinned and kinematic nodes on their targets, in units of the mean
soft-node mass (objective units, i.e. ``h^2`` times a physical stiffness): the offset under a force F is
``F h^2 / (1e8 m_mean)``, below a micrometre for any force the scene produces."""

CCD_RESCALING = 0.9
"""Additive CCD's conservative rescaling: each advancement covers 90 % of the certified gap."""

LINE_CHECK_RESCALING = 0.99
"""Additive CCD's rescaling for the check of a whole step's straight-line motion (:meth:`IpcSolver.motion_is_free`):
the motion counts as free when no pair can come closer than 1 % of its starting gap (conservative: a crossing is
never missed, a near miss may be reported)."""

MAX_HALVINGS = 40
"""Line-search halvings before the step is given up (alpha ~ 1e-12)."""

PARALLEL_MIN_PRIMITIVES = 20_000
"""Surfaces with fewer faces plus edges run the broad phase and the CCD on one thread. Each of their parallel
regions (about ten per Newton iteration) costs a thread wake-up and a barrier; on a small surface that is more
than the work (an 11-vertex surface: 0.07 ms on one thread, 58-141 ms on two while other processes held both
cores, measured on the 2-core test machine), and the spinning workers take CPU from the solve itself."""

AUTOMATIC_DHAT_FRACTION = 1.0e-3
"""Automatic barrier distance: this fraction of the soft bodies' bounding-box diagonal."""


@dataclass
class IpcSettings:
    """Settings of the IPC engine (scene ``ipc_*`` properties in Blender).

    dhat: barrier activation distance [m]; 0 = automatic, 1e-3 of the soft bodies' bounding-box diagonal.
    kappa: physical barrier stiffness [Pa/m] (energy ``kappa sum b(d^2, dhat^2)``); 0 = automatic.
    eps_v: friction's static-dynamic transition speed [m/s] (course eq. 296).
    tolerance: Newton stops at ``||dx||_inf / h < tolerance * bbox diagonal`` [1/s].
    max_iterations: Newton iterations per lagging pass (a warning flag is raised when hit).
    friction_iterations: lagging passes (1 = lag at the step start; more re-lag at the solution).
    substeps: steps per frame.
    pcg_tolerance: relative residual of the inner linear solve (an inexact Newton step: its direction matters,
        not its last digits; the stopping rule is on the step). pcg_max_iterations: its iteration cap.
    check_intersections: run the independent exact checker on every frame (``iter_simulate_ipc``).
    """

    dhat: float = 0.0
    kappa: float = 0.0
    eps_v: float = 1.0e-3
    tolerance: float = 1.0e-3
    max_iterations: int = 100
    friction_iterations: int = 1
    substeps: int = 1
    pcg_tolerance: float = 1.0e-2
    pcg_max_iterations: int = 2000
    check_intersections: bool = False


@dataclass
class IpcStats:
    """Diagnostics of one step."""

    newton_iterations: int = 0
    pcg_iterations: int = 0
    projected_iterations: int = 0
    """Newton iterations whose linear solve met negative curvature and was redone with the projected elastic
    Hessian (their PCG iterations count in ``pcg_iterations`` too)."""
    contact_count: int = 0
    friction_count: int = 0
    min_distance: float = np.inf
    """Smallest surface distance within dhat at the end of the step [m] (inf: no pair within dhat)."""
    kappa: float = 0.0
    """Physical barrier stiffness used at the end of the step [Pa/m]."""
    converged: bool = True
    smallest_step: float = 1.0
    """Smallest accepted line-search step (CCD and halving) of the step."""
    energy_history: list = field(default_factory=list)
    """Objective after each accepted Newton iteration (non-increasing by construction)."""
    kinematic_offset: float = 0.0
    """Largest distance of a pinned or kinematic node from its target at the end of the step [m]."""
    intersections: int = 0
    inverted: int = 0
    """Counts from the independent checker (``check_intersections``), per frame."""
    splits: int = 0
    """Times the frame's substeps were halved because a step's straight-line motion was not collision-free."""
    steps: int = 1
    """Solver steps the frame took (substeps times the halvings)."""
    solves: int = 1
    """Solves in the frame: its ``steps`` plus one thrown away per halving (``splits``)."""
    newton_total: int = 0
    """Newton iterations of every solve of the frame (kept steps and the solves thrown away by a halving)."""
    newton_max: int = 0
    """Most Newton iterations of one solve of the frame."""
    pcg_total: int = 0
    """PCG iterations of every solve of the frame."""


def resolved_dhat(world: IpcWorld, settings: IpcSettings) -> float:
    """The barrier distance a solve uses [m]: ``settings.dhat``, or the automatic fraction of the bounding box."""
    return float(settings.dhat) if settings.dhat > 0.0 else AUTOMATIC_DHAT_FRACTION * world.bbox_diagonal


class IpcSolver:
    """Advances an :class:`IpcWorld` by backward-Euler steps of the IPC incremental potential."""

    def __init__(self, world: IpcWorld, settings: IpcSettings | None = None):
        self.world = world
        self.settings = s = settings or IpcSettings()
        self.stop: StopRequest | None = None
        """Checked before every Newton iteration (:mod:`..stop`): a set request ends the step mid-way."""
        sw = world.soft
        self.dhat = resolved_dhat(world, s)
        self.dhat2 = self.dhat * self.dhat
        N = world.dof_count
        self.N = N
        # Tet parameters: soft tets as set, virtual box tets get a stiff corotated energy.
        self.tet_mu = sw.tet_mu.copy()
        self.tet_lam = sw.tet_lam.copy()
        if sw.affine_count:
            stiff = AFFINE_STIFFNESS_FACTOR * sw.max_youngs_modulus / 2.0
            self.tet_mu[sw.affine_tet] = stiff
            self.tet_lam[sw.affine_tet] = 0.0
        soft_mass = sw.node_mass[sw.node_mass > 0.0]
        self.mean_mass = float(soft_mass.mean())
        self.spring = np.zeros(N)
        self.spring[world.node_kinematic] = SPRING_FACTOR * self.mean_mass
        self.spring[: sw.node_count][sw.node_pinned] = SPRING_FACTOR * self.mean_mass
        self.node_mass = world.node_mass.copy()
        self.node_mass[: sw.node_count][sw.node_pinned] = 0.0  # pinned nodes follow their target only
        self.aff_nodes = sw.affine_nodes
        self.aff_mass = sw.affine_mass
        groups = [sw.tet_indices, np.arange(N, dtype=np.int64)[:, None]]
        if sw.affine_count:
            groups.append(sw.affine_nodes)
        self.pattern = BlockPattern.from_element_groups(groups, N)
        self.blocks = self.pattern.zeros()
        """Node blocks of the Newton matrix without the pairs: mass, springs, ``h^2`` elasticity (B, 3, 3)."""
        self.grad_scratch = np.zeros((N, 3))
        self.precond_work = np.zeros((N, 3, 3))
        S = world.surface_count
        self.xs = np.zeros((S, 3))
        self.xs_trial = np.zeros((S, 3))
        self.xs_lag = np.zeros((S, 3))
        self.grad_s = np.zeros((S, 3))
        self.surface_axis = np.zeros((S, 3))
        self.surface_free = world.surface_nodes[:, 0] >= 0
        """Surface vertices that depend on an unknown (S,) bool: the rows of the pair Hessians that are projected."""
        self.surface_mu_ab = np.zeros((S, 2))
        self.inv = np.zeros((N, 3, 3))
        self.pcg_work = np.zeros((4, 3 * N))
        self.dx = np.zeros(3 * N)
        self.kappa_obj = 0.0
        self.kappa_physical = 0.0
        """Barrier stiffness of the last step [Pa/m] (the automatic rule never goes below it)."""
        self.serial = len(world.faces) + len(world.edges) < PARALLEL_MIN_PRIMITIVES
        """Run the parallel kernels (broad phase, CCD) on one thread (:data:`PARALLEL_MIN_PRIMITIVES`)."""
        self._empty_q = np.zeros((0, 4), dtype=np.int64)
        self._empty_b = np.zeros((0, 12, 12))
        self._lag = None
        self._pairs = (0, self._empty_q, self._empty_b, 0, self._empty_q, self._empty_b)

    # -------------------------------------------------------------------------------------------
    # Pieces of the objective

    def _surface(self, x, out):
        w = self.world
        surface_positions(x, w.surface_nodes, w.surface_weights, w.surface_offset, out)
        return out

    def _candidates(self, xs0, xs1):
        """Every pair that comes within dhat anywhere on the straight motion ``xs0 -> xs1`` (S, 3) [m]: its
        primitives stay inside their swept boxes, so those boxes are less than dhat apart, and growing each box
        by dhat / 2 makes them overlap. Of those, the pairs whose distance cannot shrink below dhat on the motion
        (:func:`.kernels.near_pairs`) are dropped: they carry no barrier and cannot collide."""
        w = self.world
        vf, ee = collision_candidates(xs0, xs1, w.faces, w.edges, w.surface_group, 0.5 * self.dhat)
        vf, ee = near_pairs(xs0, xs1, vf, ee, w.faces, w.edges, self.dhat)
        quads = np.empty((len(vf) + len(ee), 4), dtype=np.int64)
        kinds = np.empty(len(vf) + len(ee), dtype=np.int64)
        pair_quads(vf, ee, w.faces, w.edges, quads, kinds)
        return vf, ee, quads, kinds

    def _elastic(self, x):
        sw = self.world.soft
        return world_elastic_energy(
            x, sw.tet_indices, sw.tet_Dm_inv, sw.tet_rest_volume, self.tet_mu, self.tet_lam, self.world.tet_material
        )

    def objective(self, x, quads, kinds) -> tuple[float, float]:
        """``(f(x), min d^2)``: the full incremental potential (inf if a tet inverts or surfaces touch)."""
        w = self.world
        h2 = self.h * self.h
        e = inertia_energy(x, self.x_tilde, self.node_mass, self.aff_nodes, self.aff_mass, self.spring, self.target)
        el = self._elastic(x)
        if not np.isfinite(el):
            return np.inf, 0.0
        xs = self._surface(x, self.xs_trial)
        b, dmin = barrier_energy(xs, quads, kinds, w.surface_rest, self.dhat2)
        if not np.isfinite(b):
            return np.inf, 0.0
        f = e + h2 * el + self.kappa_obj * b
        if self._lag is not None:
            lq, lw, lb, lc, le, lcount = self._lag
            f += friction_energy(xs, self.xs_lag, lcount, lq, lw, lb, lc, le, self.eps_h)
        return f, dmin

    def _elastodynamic_gradient(self, x) -> np.ndarray:
        """Gradient (N, 3) of the incremental potential without contact: ``grad(inertia + springs) + h^2 grad E``."""
        w, sw = self.world, self.world.soft
        g = np.zeros((self.N, 3))
        inertia_energy_gradient(x, self.x_tilde, self.node_mass, self.aff_nodes, self.aff_mass, self.spring,
                                self.target, g)  # fmt: skip
        ge = np.zeros((self.N, 3))
        world_elastic_gradient(x, sw.tet_indices, sw.tet_Dm_inv, sw.tet_rest_volume, self.tet_mu, self.tet_lam,
                               w.tet_material, ge)  # fmt: skip
        g += self.h * self.h * ge
        return g

    def gradient_and_hessian(self, x, quads, kinds, with_hessian=True):
        """Gradient (N, 3) of the objective; if asked, the node blocks (exact elasticity) and the pair blocks
        (PSD-projected barrier, friction) of its Hessian."""
        w = self.world
        if with_hessian:
            g = np.zeros((self.N, 3))
            inertia_energy_gradient(x, self.x_tilde, self.node_mass, self.aff_nodes, self.aff_mass, self.spring,
                                    self.target, g)  # fmt: skip
            self._node_blocks(x, False, g)
        else:
            g = self._elastodynamic_gradient(x)
        xs = self._surface(x, self.xs)
        self.grad_s[:] = 0.0
        bq = np.empty((len(quads), 4), dtype=np.int64)
        bb = np.empty((len(quads), 12, 12))
        bc, _ = barrier_assemble(xs, quads, kinds, w.surface_rest, self.surface_free, self.dhat2, self.kappa_obj,
                                 self.grad_s, bq, bb)  # fmt: skip
        fc, fq, fb = 0, self._empty_q, self._empty_b
        if self._lag is not None:
            lq, lw, lb, lc, le, lcount = self._lag
            fb = np.empty((lcount, 12, 12))
            friction_assemble(xs, self.xs_lag, lcount, lq, lw, lb, lc, le, self.eps_h, self.grad_s, fb)
            fc, fq = lcount, lq
        scatter_surface(self.grad_s, w.surface_nodes, w.surface_weights, g)
        self._pairs = (bc, bq, bb, fc, fq, fb)
        return g

    def _node_blocks(self, x, project, grad) -> None:
        """Fill the node blocks: mass and springs, ``h^2`` times the elastic Hessian (PSD-projected per tet if
        ``project``), the dynamic boxes' consistent mass; ``h^2`` times the elastic gradient is added to ``grad``."""
        w, sw = self.world, self.world.soft
        self.blocks[:] = 0.0
        elastic_gradient_and_hessian(x, sw.tet_indices, sw.tet_Dm_inv, sw.tet_rest_volume, self.tet_mu,
                                     self.tet_lam, w.tet_material, self.h * self.h, project,
                                     self.pattern.element_index[0], grad, self.blocks)  # fmt: skip
        add_block_diagonal(self.pattern.diagonal, self.node_mass + self.spring, self.blocks)
        if sw.affine_count:
            add_affine_mass(self.aff_mass, self.pattern.element_index[2], self.blocks)

    def _newton_direction(self, g) -> tuple[np.ndarray, int, int]:
        """``(dx (N, 3), PCG iterations, outcome)`` of the inexact solve ``H dx = -g`` with the current blocks."""
        s, w = self.settings, self.world
        build_preconditioner(self.pattern.diagonal, self.blocks, self._pairs, w.surface_nodes, w.surface_weights,
                             self.precond_work, self.inv)  # fmt: skip
        it, _, outcome = ipc_pcg(self.pattern.row_start, self.pattern.column, self.blocks, self._pairs,
                                 w.surface_nodes, w.surface_weights, self.inv, -g.ravel(), self.dx,
                                 s.pcg_tolerance, s.pcg_max_iterations, self.pcg_work)  # fmt: skip
        return self.dx.reshape(-1, 3).copy(), int(it), int(outcome)

    def barrier_gradient(self, x, quads, kinds) -> np.ndarray:
        """Gradient (N, 3) of ``sum_k m_k b_k`` (unit stiffness) w.r.t. the unknowns."""
        w = self.world
        xs = self._surface(x, self.xs)
        gs = np.zeros_like(self.grad_s)
        bq = np.empty((len(quads), 4), dtype=np.int64)
        bb = np.empty((len(quads), 12, 12))
        barrier_assemble(xs, quads, kinds, w.surface_rest, self.surface_free, self.dhat2, 1.0, gs, bq, bb)
        g = np.zeros((self.N, 3))
        scatter_surface(gs, w.surface_nodes, w.surface_weights, g)
        return g

    def contact_forces(self, x) -> np.ndarray:
        """Barrier forces on the unknowns (N, 3) [N] at ``x`` with the current stiffness: ``-kappa grad B / h^2``."""
        xs = self._surface(x, self.xs)
        _, _, quads, kinds = self._candidates(xs, xs)
        return -self.kappa_obj / (self.h * self.h) * self.barrier_gradient(x, quads, kinds)

    # -------------------------------------------------------------------------------------------

    def set_collider_axes(self, orientations) -> None:
        """Anisotropic colliders' structure axes in the world for the friction lag (orientations (K, 4))."""
        w = self.world
        self.surface_axis[:] = 0.0
        for k in range(w.collider_count):
            an = w.collider_anisotropy[k]
            if an[0] <= 0.0 and an[1] <= 0.0:
                continue
            s, e = w.collider_vertex_range[k]
            self.surface_axis[s:e] = rotation_matrix(orientations[k]) @ an[3:6]
            self.surface_mu_ab[s:e] = an[0:2]

    def begin_step(self, state: SoftWorldState, h: float, target: np.ndarray) -> None:
        """Set the step's targets (``target`` (N, 3): pinned and kinematic nodes' end positions)."""
        sw = self.world.soft
        self.h = float(h)
        self.x_start = state.x.copy()
        self.x_tilde = state.x + h * state.v
        self.x_tilde[: sw.node_count] += h * h * sw.gravity
        self.target = target
        self.eps_h = self.settings.eps_v * h

    def _initial_kappa(self, x, quads, kinds) -> float:
        s = self.settings
        h2 = self.h * self.h
        if s.kappa > 0.0:
            self.kappa_max = s.kappa * h2
            return s.kappa * h2
        w = self.world
        gE = self._elastodynamic_gradient(x)
        gB = self.barrier_gradient(x, quads, kinds)
        kappa, self.kappa_max = initial_barrier_stiffness(
            w.bbox_diagonal, self.dhat, self.mean_mass, gE.ravel(), gB.ravel()
        )
        # Never below the stiffness the previous steps needed (IPC keeps kappa across steps): a stiffness
        # that drops while bodies rest would let them sink deeper into the barrier every step.
        kappa = max(float(kappa), self.kappa_physical * h2)
        self.kappa_max = max(self.kappa_max, kappa)
        return kappa

    @contextlib.contextmanager
    def thread_policy(self):
        """Limit this thread's Numba kernels to one thread while inside, if the surface is small (:attr:`serial`)."""
        if not self.serial:
            yield
            return
        previous = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            yield
        finally:
            numba.set_num_threads(previous)

    def step(self, state: SoftWorldState, h: float, target: np.ndarray) -> IpcStats:
        """Advance ``state`` (in place) by one step of length ``h`` [s]; return the diagnostics."""
        with self.thread_policy():
            return self._step(state, h, target)

    def _step(self, state: SoftWorldState, h: float, target: np.ndarray) -> IpcStats:
        s, w = self.settings, self.world
        self.begin_step(state, h, target)
        stats = IpcStats()
        x = state.x.copy()
        xs = self._surface(x, self.xs).copy()
        _, _, quads, kinds = self._candidates(xs, xs)
        self.kappa_obj = self._initial_kappa(x, quads, kinds)
        tol = s.tolerance * w.bbox_diagonal * h
        uses_friction = self.settings.friction_iterations > 0 and (
            w.surface_friction.max() > 0.0 or w.collider_anisotropy[:, :2].max(initial=0.0) > 0.0
        )
        self._lag = None
        self._surface(self.x_start, self.xs_lag)
        prev_dmin = np.inf
        passes = max(1, s.friction_iterations) if uses_friction else 1
        for _ in range(passes):
            if uses_friction:
                self._set_lag(x, quads, kinds)
            converged = False
            f0 = None  # the objective at x, once known (the accepted line-search value while kappa is unchanged)
            for _ in range(s.max_iterations):
                check_stop(self.stop)
                g = self.gradient_and_hessian(x, quads, kinds)
                if f0 is None:
                    f0, dmin = self.objective(x, quads, kinds)
                if not stats.energy_history:
                    stats.energy_history.append(f0)
                dx, it, outcome = self._newton_direction(g)
                stats.pcg_iterations += it
                if outcome == NEGATIVE_CURVATURE:
                    # the exact elastic Hessian is indefinite here: this iteration uses the projected one
                    self._node_blocks(x, True, self.grad_scratch)
                    dx, it, outcome = self._newton_direction(g)
                    stats.pcg_iterations += it
                    stats.projected_iterations += 1
                stats.newton_iterations += 1
                if np.abs(dx).max() <= tol:
                    converged = True
                    break
                # Candidates over the whole segment x -> x + dx serve the CCD and every trial point.
                xs0 = self._surface(x, self.xs).copy()
                xs1 = self._surface(x + dx, self.xs_trial).copy()
                vf, ee, quads, kinds = self._candidates(xs0, xs1)
                alpha = max_collision_free_step(xs0, xs1, w.faces, w.edges, vf, ee, 0.0, CCD_RESCALING)
                alpha = min(1.0, float(alpha))
                f_new = np.inf
                for _ in range(MAX_HALVINGS):
                    f_new, dmin = self.objective(x + alpha * dx, quads, kinds)
                    if f_new <= f0:
                        break
                    alpha *= 0.5
                if not f_new <= f0:
                    break  # no descent (round-off at the minimum): keep x
                x = x + alpha * dx
                f0 = f_new
                stats.smallest_step = min(stats.smallest_step, alpha)
                stats.energy_history.append(f_new)
                if s.kappa <= 0.0 and np.isfinite(dmin):
                    kappa = float(update_barrier_stiffness(prev_dmin, dmin, self.kappa_max, self.kappa_obj,
                                                           w.bbox_diagonal))  # fmt: skip
                    if kappa != self.kappa_obj:
                        self.kappa_obj, f0 = kappa, None
                    prev_dmin = dmin
            stats.converged = converged
        # Final active set, statistics and velocities. The last candidate set covers x (its swept boxes contain
        # the segment x lies on), so it holds every pair within dhat of x.
        xs = self._surface(x, self.xs)
        _, dmin = barrier_energy(xs, quads, kinds, w.surface_rest, self.dhat2)
        stats.min_distance = float(np.sqrt(dmin)) if dmin < self.dhat2 else np.inf
        self.gradient_and_hessian(x, quads, kinds, with_hessian=False)
        stats.contact_count = int(self._pairs[0])
        stats.friction_count = int(self._pairs[3])
        stats.kappa = self.kappa_physical = self.kappa_obj / (h * h)
        held = self.spring > 0.0
        stats.kinematic_offset = float(np.abs(x[held] - target[held]).max()) if held.any() else 0.0
        state.v[:] = (x - self.x_start) / h
        state.x[:] = x
        return stats

    def motion_is_free(self, x0: np.ndarray, x1: np.ndarray) -> bool:
        """Whether the straight-line motion ``x0 -> x1`` of the unknowns (N, 3) [m] keeps every surface pair apart.

        A Newton solve whose every iterate was CCD-checked reaches ``x1`` along a path that never intersects, but
        the path may go around an obstacle: two balls thrown at each other faster than their size per step end
        on each other's side (the incremental potential's minimum is their ballistic target) without ever
        touching. The step's own motion, the straight line a renderer or a motion blur interpolates, must be free
        too; :func:`.frame_loop.iter_simulate_ipc` halves the step until it is.
        """
        w = self.world
        xs0 = self._surface(x0, self.xs).copy()
        xs1 = self._surface(x1, self.xs_trial).copy()
        with self.thread_policy():
            vf, ee = collision_candidates(xs0, xs1, w.faces, w.edges, w.surface_group, 0.0)
            return max_collision_free_step(xs0, xs1, w.faces, w.edges, vf, ee, 0.0, LINE_CHECK_RESCALING) >= 1.0

    def _set_lag(self, x, quads, kinds) -> None:
        """Freeze friction at ``x`` (normal forces, closest points, bases); slips stay measured from the step start.

        ``quads``/``kinds``: candidate pairs holding every pair within dhat of ``x``.
        """
        w = self.world
        xs = self._surface(x, self.xs).copy()
        P = len(quads)
        lq = np.empty((P, 4), dtype=np.int64)
        lw = np.empty((P, 4))
        lb = np.empty((P, 3, 2))
        lc = np.empty(P)
        le = np.empty(P)
        count = friction_lag(xs, quads, kinds, w.surface_rest, self.dhat2, self.kappa_obj, w.surface_friction,
                             self.surface_axis, self.surface_mu_ab, lq, lw, lb, lc, le)  # fmt: skip
        self._lag = (lq, lw, lb, lc, le, int(count))
