"""Rigid contact solvers: ``step(state_in, state_out, control, contacts, dt)``."""

from .base import SolverBase
from .solver_pgs import SolverPGS
from .solver_prox import SolverProx

SOLVER_NAMES = ("PGS", "PROX")
"""Names accepted by :func:`make_solver` (and the Blender ``scene.contact_lab.solver`` enum)."""


def make_solver(model, name: str = "PROX", **options) -> SolverBase:
    """Solver instance by name: 'PGS' (box friction BLCP) or 'PROX' (Coulomb cone)."""
    key = str(name).upper()
    if key == "PGS":
        return SolverPGS(model, **options)
    if key == "PROX":
        return SolverProx(model, **options)
    raise ValueError(f"unknown solver {name!r}; choose one of {SOLVER_NAMES}")


__all__ = ["SOLVER_NAMES", "SolverBase", "SolverPGS", "SolverProx", "make_solver"]
