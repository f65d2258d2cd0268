"""Contact Lab core: a numpy + Numba contact and friction engine. Never imports bpy or mathutils.

Three sibling engines, each a folder that is the whole engine and has the same shape from outside
(a builder that finalizes an immutable model, a generator ``iter_simulate`` that yields after every
frame, a result with per-frame statistics): ``rigid/``, ``soft/`` (tetrahedral FEM) and ``ipc/``
(Incremental Potential Contact). Shared pieces beside them: ``friction/`` (every friction model),
``contact_solvers/`` (PGS, PROX, Newton on a contact problem), ``math/``, ``linalg/``, ``formats/``
(PC2), ``jit.py``, ``config.py``, ``enums.py`` and ``errors.py``.

Public surface (one import path per symbol; the rigid engine's names, as the README shows them)::

    from contact_lab.core import ModelBuilder, simulate, iter_simulate, BodyKind
"""

from .enums import BodyKind, CombineMode, FrictionSet, RFactorStrategy, ShapeType, SolverStatus
from .errors import DivergenceError, ModelError
from .rigid import (
    SOLVER_NAMES,
    CollisionPipeline,
    Contacts,
    Control,
    KinematicTrack,
    Model,
    ModelBuilder,
    RigidSettings,
    SolverNewton,
    SolverPGS,
    SolverProx,
    State,
    Trajectory,
    iter_simulate,
    make_solver,
    shape_inertia,
    shape_volume,
    simulate,
)

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
    "RigidSettings",
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
