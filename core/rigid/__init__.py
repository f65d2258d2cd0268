"""The rigid engine: rigid bodies with complementarity contact (course ch. 1–3, seeds 001, 002, 004).

The same shape as its siblings :mod:`..soft` and :mod:`..ipc`:

- ``builder``: :class:`ModelBuilder` validates input and finalizes an immutable :class:`Model`;
- ``settings``: the solver settings record :class:`RigidSettings`;
- ``frame_loop``: the generator :func:`iter_simulate` yields after every frame; :func:`simulate` runs it out;
- ``trajectory``: the result, :class:`Trajectory` (poses and per-frame statistics).

Inside: ``model``/``state``/``control``/``contacts`` (structure-of-arrays data), ``collision`` (broad and
narrow phase, contact generation), ``contact_rows`` (contact frames, Jacobian rows, warm start),
``hull`` (convex hulls and their packed arrays), ``mesh`` (triangle meshes: BVH, signed distance fields,
surface samples, packed arrays; with ``mesh_sdf`` and ``mesh_queries``), ``mass_properties`` (volume, centroid
and inertia of meshes, primitives and unions), ``integrate`` (semi-implicit Newton–Euler with Bullet-style
damping) and ``solvers`` (one step: free motion, rows, a contact solver of :mod:`..contact_solvers`,
integration).
"""

from .builder import ModelBuilder
from .collision.pipeline import CollisionPipeline
from .contacts import Contacts
from .control import Control
from .frame_loop import KinematicTrack, iter_simulate, simulate
from .hull import Hull, HullArrays, convex_hull, pack_hulls
from .mass_properties import (
    MassProperties,
    combine_mass_properties,
    is_closed_mesh,
    mesh_mass_properties,
    primitive_mass_properties,
    shape_inertia,
    shape_volume,
)
from .mesh import MeshArrays, TriangleMesh, pack_meshes, validated_mesh
from .model import Model
from .settings import RigidSettings
from .solvers import SOLVER_NAMES, SolverNewton, SolverPGS, SolverProx, make_solver
from .state import State
from .trajectory import Trajectory

__all__ = [
    "CollisionPipeline",
    "combine_mass_properties",
    "Contacts",
    "Control",
    "convex_hull",
    "Hull",
    "HullArrays",
    "is_closed_mesh",
    "iter_simulate",
    "KinematicTrack",
    "make_solver",
    "MassProperties",
    "MeshArrays",
    "mesh_mass_properties",
    "Model",
    "ModelBuilder",
    "pack_hulls",
    "pack_meshes",
    "primitive_mass_properties",
    "RigidSettings",
    "shape_inertia",
    "shape_volume",
    "simulate",
    "SOLVER_NAMES",
    "SolverNewton",
    "SolverPGS",
    "SolverProx",
    "State",
    "Trajectory",
    "TriangleMesh",
    "validated_mesh",
]
