"""Contact Lab core: a numpy + Numba contact and friction engine. Never imports bpy or mathutils.

Public surface (one import path per symbol)::

    from contact_lab.core import ModelBuilder, simulate, iter_simulate, BodyKind
"""

from .builder import ModelBuilder, ModelError, shape_inertia, shape_volume
from .collision.pipeline import CollisionPipeline
from .contacts import Contacts
from .control import Control
from .enums import BodyKind, CombineMode, FrictionSet, RFactorStrategy, ShapeType, SolverStatus
from .model import Model
from .simulate import DivergenceError, KinematicTrack, iter_simulate, simulate
from .solvers import SOLVER_NAMES, SolverNewton, SolverPGS, SolverProx, make_solver
from .state import State
from .trajectory import Trajectory

__all__ = [
    "BodyKind",
    "CollisionPipeline",
    "CombineMode",
    "Contacts",
    "Control",
    "DivergenceError",
    "FrictionSet",
    "iter_simulate",
    "KinematicTrack",
    "make_solver",
    "Model",
    "ModelBuilder",
    "ModelError",
    "RFactorStrategy",
    "shape_inertia",
    "shape_volume",
    "ShapeType",
    "simulate",
    "SOLVER_NAMES",
    "SolverNewton",
    "SolverPGS",
    "SolverProx",
    "SolverStatus",
    "State",
    "Trajectory",
]
