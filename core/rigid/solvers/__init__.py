"""Rigid contact solvers: ``step(state_in, state_out, control, contacts, dt)``."""

from .base import SolverBase
from .solver_newton import SolverNewton
from .solver_pgs import SolverPGS
from .solver_prox import SolverProx

SOLVER_NAMES = ("PGS", "PROX", "NEWTON")
"""Names accepted by :func:`make_solver` (and the Blender ``scene.contact_lab.solver`` enum)."""


def make_solver(model, name: str = "PROX", **options) -> SolverBase:
    """Solver instance by name: 'PGS' (box friction BLCP), 'PROX' or 'NEWTON' (each contact's own set)."""
    key = str(name).upper()
    if key == "PGS":
        return SolverPGS(model, **options)
    if key == "PROX":
        return SolverProx(model, **options)
    if key == "NEWTON":
        return SolverNewton(model, **options)
    raise ValueError(f"unknown solver {name!r}; choose one of {SOLVER_NAMES}")


__all__ = ["SOLVER_NAMES", "SolverBase", "SolverNewton", "SolverPGS", "SolverProx", "make_solver"]
