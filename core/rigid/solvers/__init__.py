"""Rigid contact solvers: ``step(state_in, state_out, control, contacts, dt)``."""

from .base import SolverBase
from .solver_dense import SolverDense
from .solver_newton import SolverNewton
from .solver_penalty import SolverPenalty
from .solver_pgs import SolverPGS
from .solver_prox import SolverProx

SOLVER_NAMES = ("PGS", "PROX", "NEWTON")
"""Names of the solvers that bake (the Blender ``scene.contact_lab.solver`` enum)."""
STUDY_SOLVER_NAMES = ("PENALTY", "DENSE")
"""Further names :func:`make_solver` accepts: methods for study, which do not suit baking (penalty springs sink
bodies into each other by their weight over the stiffness; a dense problem grows as the square of its rows)."""


def make_solver(model, name: str = "PROX", **options) -> SolverBase:
    """Solver instance by name: 'PGS' (box friction BLCP), 'PROX' or 'NEWTON' (each contact's own set), or
    'PENALTY' (springs at the contacts, :class:`SolverPenalty`) or 'DENSE' (a dense method by name,
    :class:`SolverDense`)."""
    key = str(name).upper()
    if key == "PGS":
        return SolverPGS(model, **options)
    if key == "PROX":
        return SolverProx(model, **options)
    if key == "NEWTON":
        return SolverNewton(model, **options)
    if key == "PENALTY":
        return SolverPenalty(model, **options)
    if key == "DENSE":
        return SolverDense(model, **options)
    raise ValueError(f"unknown solver {name!r}; choose one of {SOLVER_NAMES + STUDY_SOLVER_NAMES}")


__all__ = [
    "SOLVER_NAMES",
    "STUDY_SOLVER_NAMES",
    "SolverBase",
    "SolverDense",
    "SolverNewton",
    "SolverPGS",
    "SolverPenalty",
    "SolverProx",
    "make_solver",
]
