"""Gathered Rigid-engine scene → core model, on any thread: bodies, shapes (hulls, mesh BVHs and fields), surface
friction and the passive bodies' kinematic track.

No bpy here (the bake's worker thread runs it): :mod:`.gather` reads the scene on Blender's main thread into a
:class:`RigidSceneInput`, and :func:`build_scene` turns it into a :class:`SceneExport`. Lengths in metres, masses
in kg; the conventions are :mod:`.gather`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core import (
    BodyKind,
    CombineMode,
    KinematicTrack,
    Model,
    ModelBuilder,
    RigidSettings,
    ShapeType,
)
from ...core.friction.surface import SurfaceFriction
from ...core.rigid.joints import JointSpec
from .. import units
from ..errors import BakeError

if TYPE_CHECKING:  # annotations only: shapes reads meshes through bmesh on the main thread
    from . import shapes as rigid_shapes


@dataclass
class ExportedBody:
    """One Contact Lab object as a core body."""

    object_name: str
    role: str
    """'ACTIVE' (dynamic) or 'PASSIVE' (kinematic)."""
    shape: str
    body_index: int
    centre_local: np.ndarray
    """Body origin in object space [BU], shape (3,): the centre of mass of an active body (the bounding-box centre
    of symmetric shapes), the bounding-box centre of a passive one (the origin for planes and Compound Parents)."""
    scale: np.ndarray
    """Object scale at the first frame, shape (3,)."""
    parts: list[str] = field(default_factory=list)
    """Names of a Compound Parent's parts (their shapes are this body's)."""


@dataclass
class SceneExport:
    """Everything a bake needs, detached from bpy (except object names)."""

    scene_name: str
    model: Model
    frames: np.ndarray
    """Scene frame numbers of the trajectory rows, shape (frame_count,), int."""
    fps: float
    """Frame rate [1/s]."""
    length_scale: float
    """Metres per Blender unit [m/BU]."""
    bodies: list[ExportedBody]
    kinematic_track: KinematicTrack | None
    substeps: int = 4
    solver: str = "PROX"
    iterations: int = 100
    tolerance: float = 1e-6
    shock_propagation: bool = False
    merit_history: bool = False
    sleeping: bool = False
    sleep_time: float = 0.5
    sleep_linear_speed: float = 0.05
    sleep_angular_speed: float = 0.05
    friction_combine: str = "GEOMETRIC"
    restitution_combine: str = "MAXIMUM"
    timings: dict = field(default_factory=dict)

    @property
    def frame_count(self) -> int:
        return int(self.frames.shape[0])

    @property
    def active_bodies(self) -> list[ExportedBody]:
        return [b for b in self.bodies if b.role == "ACTIVE"]

    @property
    def passive_bodies(self) -> list[ExportedBody]:
        return [b for b in self.bodies if b.role == "PASSIVE"]

    def rigid_settings(self) -> RigidSettings:
        """The core's solver settings record for this export."""
        return RigidSettings(
            substeps=self.substeps,
            solver=self.solver,
            iterations=self.iterations,
            tolerance=self.tolerance,
            sleeping=self.sleeping,
            sleep_time=self.sleep_time,
            sleep_linear_speed=self.sleep_linear_speed,
            sleep_angular_speed=self.sleep_angular_speed,
            merit_history=self.merit_history,
            solver_options={"shock_propagation": True} if self.shock_propagation else {},
        )

    def simulate_kwargs(self) -> dict:
        """Keyword arguments of :func:`core.iter_simulate` / :func:`core.simulate` for this export."""
        return dict(
            frame_count=self.frame_count,
            fps=self.fps,
            settings=self.rigid_settings(),
            kinematic_track=self.kinematic_track,
        )

    def object_transforms(self, trajectory) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Object-origin keyframe values of every active body.

        Returns:
            ``{object name: (location (F, 3) [BU], quaternion (F, 4) wxyz)}`` for the trajectory's rows.
        """
        out = {}
        for body in self.active_bodies:
            com = trajectory.body_pos[:, body.body_index] / self.length_scale
            quat = trajectory.body_quat[:, body.body_index]
            location = units.body_to_object_location(com, quat, body.centre_local, body.scale)
            out[body.object_name] = (location, np.array(quat, dtype=np.float64))
        return out


def _add_shape(builder: ModelBuilder, body: int, spec: rigid_shapes.ShapeSpec, mu: float, restitution: float) -> int:
    """Add one shape (posed in the body frame [m]) and return its shape index."""
    kw: dict[str, Any] = dict(pos=spec.pos, quat=spec.quat, mu=mu, restitution=restitution)
    t, p = spec.shape_type, spec.params
    if t == ShapeType.BOX:
        return builder.add_shape_box(body, p, **kw)
    if t == ShapeType.SPHERE:
        return builder.add_shape_sphere(body, float(p[0]), **kw)
    if t == ShapeType.CAPSULE:
        return builder.add_shape_capsule(body, float(p[0]), float(p[1]), **kw)
    if t == ShapeType.CYLINDER:
        return builder.add_shape_cylinder(body, float(p[0]), float(p[1]), **kw)
    if t == ShapeType.CONE:
        return builder.add_shape_cone(body, float(p[0]), float(p[1]), **kw)
    if t == ShapeType.PLANE:
        return builder.add_shape_plane(body, **kw)
    if t == ShapeType.CONVEX:
        return builder.add_shape_convex(body, spec.vertices, **kw)
    if t == ShapeType.MESH:
        return builder.add_shape_mesh(body, spec.vertices, spec.triangles, **kw)
    raise BakeError(f"unknown shape type {t!r}")


@dataclass
class BodyInput:
    """One object as a core body, read from Blender: what :func:`build_scene` adds to the model (no bpy)."""

    object_name: str
    role: str
    """'ACTIVE' (dynamic) or 'PASSIVE' (kinematic)."""
    shape: str
    geometry: rigid_shapes.BodyGeometry
    surface: SurfaceFriction | None
    """Surface friction inputs of its shapes (None: the shapes' μ says everything)."""
    mass: float
    friction: float
    restitution: float
    linear_damping: float
    angular_damping: float
    pos: np.ndarray
    """Centre of mass in the world at the first frame [m], (3,)."""
    quat: np.ndarray
    """Orientation at the first frame (wxyz), (4,)."""
    scale: np.ndarray
    """Object scale at the first frame, (3,)."""
    parts: list[str] = field(default_factory=list)
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    """Linear velocity at the first frame [m/s], (3,) (active bodies: the object's Initial Velocity)."""
    collision_collections: int = 1
    """20-bit mask of Blender's Collision Collections (bit k: collection k + 1); bodies collide when masks share a
    bit."""


def _add_bodies(builder, bodies: list[BodyInput]) -> list[ExportedBody]:
    """One body with its shapes (and their surface friction) per :class:`BodyInput`, in order (no bpy)."""
    out: list[ExportedBody] = []
    for body in bodies:
        geometry = body.geometry
        is_active = body.role == "ACTIVE"
        body_kw: dict[str, Any] = {}
        if is_active:
            body_kw = dict(vel=body.velocity, linear_damping=body.linear_damping, angular_damping=body.angular_damping)
            if any(spec.shape_type == ShapeType.MESH for spec in geometry.shapes):
                # a mesh's inertia comes from its triangles (the builder derives primitives' and hulls' itself)
                mp = geometry.mass_properties
                assert mp is not None  # body_geometry computes them for active bodies
                body_kw["inertia"] = np.asarray(mp.inertia) * (body.mass / mp.volume)
        index = builder.add_body(
            pos=body.pos,
            quat=body.quat,
            mass=body.mass if is_active else 1.0,
            kind=BodyKind.DYNAMIC if is_active else BodyKind.KINEMATIC,
            label=body.object_name,
            collision_collections=body.collision_collections,
            **body_kw,
        )
        for spec in geometry.shapes:
            shape_index = _add_shape(builder, index, spec, body.friction, body.restitution)
            if body.surface is not None:
                builder.set_shape_friction(shape_index, body.surface)
        out.append(
            ExportedBody(
                body.object_name, body.role, body.shape, index, geometry.centre_local.copy(), body.scale, body.parts
            )
        )
    return out


def _culprit(message: str, names) -> str | None:
    """The object a core ``ModelError`` message names (the core prefixes messages with the body's label)."""
    return next((name for name in sorted(names, key=len, reverse=True) if message.startswith(name)), None)


@dataclass
class RigidSceneInput:
    """A Rigid-engine scene as read from Blender (:func:`gather_scene`): plain data, no bpy.

    :func:`build_scene` turns it into a :class:`SceneExport` (the core model) on any thread.
    """

    scene_name: str
    frames: np.ndarray
    """Scene frame numbers of the trajectory rows, shape (frame_count,), int."""
    fps: float
    length_scale: float
    gravity: np.ndarray
    """(3,) [m/s²]."""
    bodies: list[BodyInput]
    active_count: int
    kinematic_pose: tuple | None
    """``(positions (F, K, 3) [m], quaternions (F, K, 4))`` of the passive bodies (``bodies[active_count:]``)."""
    settings: dict
    """The :class:`SceneExport` solver settings (``substeps``, ``solver``, ...) by name."""
    timings: dict = field(default_factory=dict)
    joints: list[JointSpec] = field(default_factory=list)
    """Blender's Rigid Body Constraints, in body indices of :attr:`bodies` (:mod:`.joints`)."""

    @property
    def frame_count(self) -> int:
        return int(self.frames.shape[0])


def build_scene(inp: RigidSceneInput) -> SceneExport:
    """The core model of a gathered scene (shapes, hulls, mesh BVHs and fields, friction; no bpy: any thread).

    Raises:
        BakeError: the core refuses the model (the message names the object).
    """
    builder = ModelBuilder(gravity=inp.gravity)
    try:
        bodies = _add_bodies(builder, inp.bodies)
        for spec in inp.joints:
            builder.add_joint(spec)
        model = builder.finalize(
            friction_combine=CombineMode[inp.settings["friction_combine"]],
            restitution_combine=CombineMode[inp.settings["restitution_combine"]],
        )
    except ValueError as exc:  # ModelError, or a joint the builder refuses (its message names the joint)
        message = str(exc)
        culprit = _culprit(message, [b.object_name for b in inp.bodies] + [j.name for j in inp.joints])
        if culprit is not None:  # "Name: ..." → "'Name': ...", like the bridge's own messages
            message = f"'{culprit}'{message[len(culprit) :]}"
        raise BakeError(message, object_name=culprit) from exc
    track = None
    if inp.kinematic_pose is not None:
        track = KinematicTrack(
            body_index=np.array([b.body_index for b in bodies[inp.active_count :]], dtype=np.int64),
            pos=inp.kinematic_pose[0],
            quat=inp.kinematic_pose[1],
        )
    return SceneExport(
        scene_name=inp.scene_name,
        model=model,
        frames=inp.frames,
        fps=inp.fps,
        length_scale=inp.length_scale,
        bodies=bodies,
        kinematic_track=track,
        timings=dict(inp.timings),
        **inp.settings,
    )
