"""The soft engine: tetrahedral FEM soft bodies with frictional contact (course ch. 4, seed 003).

The same shape as its siblings :mod:`..rigid` and :mod:`..ipc`: a builder, :class:`SoftWorldBuilder`, that
validates input and finalizes an immutable :class:`SoftWorld`; ``frame_loop``, whose generator
:func:`iter_simulate` yields after every frame (:func:`simulate` runs it out); the result, :class:`SoftTrajectory`
(node positions and per-frame statistics). The world, the meshes, the lattice, the materials and the trajectory are
the FEM layer the IPC engine shares, :mod:`..fem`; this package exports the soft engine's names for them.

Inside:

- the step: ``world_solver`` (one implicit step of the whole world: the Newton loop, contact, friction, the
  Dual formulation through :mod:`..contact_solvers`), ``newton`` (line search and stopping tests),
  ``integrators`` (backward Euler, BDF2), ``kernels_world`` (damping, the dynamic boxes' inertia),
  ``kernels_operator`` (the matrix-free Newton operator, block-Jacobi PCG);
- contact: ``contact_collection`` (candidate pairs), ``contact_elements`` (signed distances),
  ``kernels_contact`` (the cubic penalty and smoothed friction as functions), ``kernels_penalty``,
  ``kernels_friction``; ``contact_samples`` (a body's contact points on its mesh, embedded in the lattice);
- ``solver_settings`` (the step's settings and statistics).

Seed 003's single-body solver, a reference for the tests and not used by the engine, lives under tests/
(``tests/core/soft_reference.py``).

Conventions: float64, SI units; vertices ``x`` (vertex_count, 3) [m]; ``tet_indices``
(tet_count, 4) int32; a 3x3 matrix ``F`` is flattened row-major, ``vec(F)[3*i + j] = F[i, j]``;
the 12 nodal coordinates of a tet are ordered ``[x0, y0, z0, x1, ..., z3]``.
"""

from ..fem.trajectory import SoftTrajectory
from ..fem.world import ColliderKind, SoftWorld, SoftWorldBuilder, SoftWorldState
from .frame_loop import SoftSettings, SoftWorldStats, iter_simulate, iter_simulate_soft, simulate

__all__ = [
    "ColliderKind",
    "iter_simulate",
    "iter_simulate_soft",
    "simulate",
    "SoftSettings",
    "SoftTrajectory",
    "SoftWorld",
    "SoftWorldBuilder",
    "SoftWorldState",
    "SoftWorldStats",
]
