"""The rigid engine's settings record, :class:`RigidSettings`, and how the frame loop's older keyword form maps to it.

The soft and IPC engines take their settings as one record (``SoftSettings``, ``IpcSettings``); the rigid engine
does too. The frame rate and the frame count stay arguments of the frame loop, as in the other engines.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from .sleeping import DEFAULT_SLEEP_ANGULAR_SPEED, DEFAULT_SLEEP_LINEAR_SPEED, DEFAULT_SLEEP_TIME

TIME_STEPPINGS = ("SEMI_IMPLICIT", "MOREAU")
"""The rigid step's time-stepping schemes (:attr:`RigidSettings.time_stepping`)."""


@dataclass(frozen=True)
class RigidSettings:
    """Solver settings of the rigid engine (SI units); checked when made.

    Raises:
        ValueError: ``substeps`` below 1, an unknown ``time_stepping``, or ``sleeping`` with a threshold that is not
            positive.
    """

    substeps: int = 4
    """Solver steps per output frame; the time step is ``1 / (fps * substeps)`` [s]."""
    solver: str = "PROX"
    """'PGS' (box friction), 'PROX' (Coulomb cone) or 'NEWTON' (each contact's own friction set)."""
    iterations: int = 100
    """Most solver sweeps per step."""
    tolerance: float = 1e-6
    """A solve stops when the largest impulse change of a sweep is below tolerance times the largest impulse."""
    time_stepping: str = "SEMI_IMPLICIT"
    """'SEMI_IMPLICIT' (course §1.2: contacts found at the step's start, ``q+ = q + h u+``) or 'MOREAU' (the
    mid-point scheme of §3.4.5: ``q^{t+1/2} = q + (h/2) u``, contacts found there, ``q+ = q^{t+1/2} + (h/2) u+``;
    a body in free flight follows its parabola exactly)."""
    sleeping: bool = False
    """Islands that rested for ``sleep_time`` keep still until something touches them (:mod:`.sleeping`). Off by
    default, as Blender's Deactivation: a body barely sliding would stop."""
    sleep_time: float = DEFAULT_SLEEP_TIME
    """Seconds an island must rest before it sleeps [s]."""
    sleep_linear_speed: float = DEFAULT_SLEEP_LINEAR_SPEED
    """A body rests below this centre-of-mass speed [m/s]."""
    sleep_angular_speed: float = DEFAULT_SLEEP_ANGULAR_SPEED
    """A body rests below this angular speed [rad/s]."""
    merit_history: bool = False
    """Record FCLIB's merit after every sweep of each frame's last contact solve
    (:attr:`.trajectory.Trajectory.solver_merit_history`): how the solve converged, on the scale of
    ``solver_merit``. It costs one more pass over the contacts per sweep of that solve; the motion is the same."""
    solver_options: dict = field(default_factory=dict)
    """Further keyword arguments of the solver class (e.g. ``warm_start``, ``r_strategy``)."""

    def __post_init__(self):
        if self.substeps < 1:
            raise ValueError("substeps must be at least 1")
        if self.time_stepping not in TIME_STEPPINGS:
            raise ValueError(f"time_stepping must be one of {TIME_STEPPINGS}, not {self.time_stepping!r}")
        positive = self.sleep_time > 0.0 and self.sleep_linear_speed > 0.0 and self.sleep_angular_speed > 0.0
        if self.sleeping and not positive:
            raise ValueError("sleep_time, sleep_linear_speed and sleep_angular_speed must be positive")


SETTING_NAMES = frozenset(f.name for f in fields(RigidSettings))
"""Keyword arguments of the frame loop's older form that are fields of :class:`RigidSettings`."""


def settings_from_keywords(settings: RigidSettings | None, keywords: dict, caller: str) -> RigidSettings:
    """The record a frame loop runs with: ``settings``, or the older keyword form folded into one.

    ``keywords`` are the loop's extra keyword arguments: fields of :class:`RigidSettings` by name, anything else a
    solver option (as the frame loop took them before the record existed).

    Raises:
        TypeError: ``settings`` and keywords given together (naming the keywords).
    """
    if settings is not None:
        if keywords:
            names = ", ".join(sorted(keywords))
            raise TypeError(f"{caller}() got settings= and also {names}: put them into the RigidSettings instead")
        return settings
    named = {k: v for k, v in keywords.items() if k in SETTING_NAMES and k != "solver_options"}
    options = {k: v for k, v in keywords.items() if k not in SETTING_NAMES}
    return RigidSettings(**named, solver_options={**keywords.get("solver_options", {}), **options})
