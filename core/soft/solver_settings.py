"""The soft engine's solver settings and per-step diagnostics (:class:`SoftSettings`, :class:`SoftWorldStats`).

Plain records shared by the implicit step (:mod:`.world_solver`), the frame loop and the bridge; SI units.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..fem.world import SoftWorld


@dataclass
class SoftSettings:
    """Solver settings of the soft engine (SI units)."""

    substeps: int = 2
    """Implicit steps per output frame."""
    contact_stiffness: float = 0.0
    """Penalty stiffness kappa [N/m]; 0 = automatic (see :meth:`SoftWorldSolver.automatic_stiffness`)."""
    contact_thickness: float = 0.0
    """Penalty layer delta [m]; 0 = automatic: 0.5 % of the smallest soft body's extent (at least 0.1 mm)."""
    friction_velocity: float = 1.0e-3
    """Stick–slip velocity eps_v [m/s] of the smoothed friction."""
    friction_anchor: bool = False
    """IMPLICIT formulation: a sticking contact is held by a spring to the point where it stuck (its anchor,
    carried from step to step) instead of to its start-of-step position. The smoothed potential is then
    ``mu lambda f0(|u + o|)`` with ``o`` the contact's tangential offset from its anchor at ``x^n``, capped at
    ``eps_v h`` (a sliding contact drags its anchor along at the full Coulomb force). A resting contact holds its
    position exactly instead of creeping at ~eps_v, so eps_v can be large (smooth, cheap Newton) without creep.
    False: seed 003's lagged smoothed friction (creeps at ~eps_v under a tangential load)."""
    max_newton_iterations: int = 60
    residual_tolerance: float = 1.0e-6
    """Newton stops at ``||r|| <= tol * max(||r_0||, h ||M g||)``."""
    velocity_tolerance: float = 1.0e-6
    """...or when the Newton correction is below this [m/s]."""
    pcg_tolerance: float = 1.0e-8
    pcg_max_iterations: int = 2000
    max_line_search: int = 30
    integrator: str = "BE"
    """``"BE"`` (backward Euler, L-stable, damps) or ``"BDF2"`` (second order, much less numerical damping;
    the first step and any step after a change of step size are BE). IMPLICIT formulation only."""
    friction_mode: str = "implicit"
    """IMPLICIT formulation: ``"lagged"`` (normal force and frame from the start of the step, IPC style) or
    ``"implicit"`` (from the end of the step, seed 003: fixed-point iterations on top of the lagged solve)."""
    friction_iterations: int = 4
    friction_tolerance: float = 1.0e-3
    """Relative change of the normal forces at which the implicit-friction fixed point stops."""
    soft_soft: bool = True
    """Contact between different soft bodies (contact points against the other bodies' surface triangles)."""
    formulation: str = "IMPLICIT"
    """``"IMPLICIT"`` (seed 003: penalty contact and lagged smoothed friction inside the implicit
    step) or ``"DUAL"`` (course §4.3.3: contact-free implicit step, then hard contact with Coulomb
    friction on the Delassus operator ``W_A = J A^-1 J^T``)."""
    dual_solver: str = "PROX"
    """DUAL only: ``"PROX"`` (exact cone, adaptive r) or ``"PGS"`` (box friction)."""
    dual_iterations: int = 300
    dual_tolerance: float = 1.0e-7
    dual_stabilization: float = 0.2
    """DUAL only: fraction of a penetration removed per step (Baumgarte); approaching gaps are
    closed exactly (speculative contact)."""


@dataclass
class SoftWorldStats:
    """Diagnostics of the last step."""

    newton_iterations: int = 0
    pcg_iterations: int = 0
    converged: bool = False
    residual: float = 0.0
    contact_count: int = 0
    """Contacts at the end of the step; the frame loop sets the frame's largest count of one step here."""
    newton_max: int = 0
    """Set by the frame loop: the most Newton iterations one step of the frame took."""
    max_penetration: float = 0.0
    """Largest ``-d`` over contact elements at the end of the step [m] (0 = none below the surface)."""
    friction_iterations: int = 0
    """Implicit friction: fixed-point updates of the normal forces in this step."""
    friction_converged: bool = False
    projected: bool = False
    """True when the exact elastic tangent was indefinite in this step and PSD projection was used."""
    resolves: int = 0
    """Extra solves of the step (new contact pairs or a stiffness doubling)."""
    hessian_evaluations: int = 0
    """Elastic tangents evaluated over all tets in this step: the start-of-step one (Rayleigh damping's
    ``K^n`` and Newton's first matrix) and every refresh at an iterate."""
    contact_stiffness: float = 0.0
    dual_sweeps: int = 0
    """DUAL: sweeps of the contact solver."""
    contact_force: np.ndarray = None
    """(B, C, 3) penalty normal force soft body b exerts on collider c at the end of the step [N]."""
    body_contact_force: np.ndarray = None
    """(B, B, 3) normal force soft body a exerts on soft body b through a's points on b's surface [N]; the
    net force of a on b is ``[a, b] - [b, a]`` (b's points on a's surface push back)."""
    energy_history: list = field(default_factory=list)
    residual_history: list = field(default_factory=list)
    """``||r|| / r_scale`` at every Newton iteration (all solves of the step)."""


def resolved_contact_thickness(world: SoftWorld, settings: SoftSettings) -> float:
    """The penalty layer delta [m] a solver uses: the setting, or 0.5 % of the smallest body (>= 0.1 mm)."""
    if settings.contact_thickness > 0.0:
        return float(settings.contact_thickness)
    return max(1.0e-4, 0.005 * world.length_scale)


def check_settings(s: SoftSettings) -> None:
    """Raise ValueError on an unknown formulation, friction mode, integrator or dual solver, or BDF2 with DUAL."""
    if s.formulation not in ("IMPLICIT", "DUAL"):
        raise ValueError(f"formulation must be 'IMPLICIT' or 'DUAL', got {s.formulation!r}")
    if s.friction_mode not in ("lagged", "implicit"):
        raise ValueError(f"friction_mode must be 'lagged' or 'implicit', got {s.friction_mode!r}")
    if s.integrator not in ("BE", "BDF2"):
        raise ValueError(f"integrator must be 'BE' or 'BDF2', got {s.integrator!r}")
    if s.integrator == "BDF2" and s.formulation == "DUAL":
        raise ValueError("the DUAL formulation steps with backward Euler only")
    if s.dual_solver not in ("PROX", "PGS"):
        raise ValueError(f"dual_solver must be 'PROX' or 'PGS', got {s.dual_solver!r}")
