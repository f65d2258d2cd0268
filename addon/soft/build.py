"""Gathered Soft-engine scene → core soft world, on any thread: the lattices, embedding, pins and colliders.

No bpy here (the bake's worker thread runs it): :mod:`.gather` reads the scene on Blender's main thread into the
``*Input`` records below, and :func:`build_soft_scene` turns them into a :class:`SoftSceneExport`. Lengths arrive
and leave in metres (``BU × scale_length`` applied by the gather); the conventions are :mod:`.gather`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ...core.enums import ShapeType
from ...core.errors import SoftWorldError
from ...core.fem.lattice import LatticeMesh, tetrahedralize_lattice
from ...core.fem.world import ColliderKind, SoftWorld, SoftWorldBuilder
from ...core.soft.contact_samples import embed_in_lattice, face_sample_points, refined_surface
from ..errors import BakeError

SHAPES = {"BOX": ShapeType.BOX, "SPHERE": ShapeType.SPHERE, "CAPSULE": ShapeType.CAPSULE, "PLANE": ShapeType.PLANE}
"""Collider shapes of the soft engine by their ``obj.contact_lab.shape`` name."""


@dataclass
class SoftBodyExport:
    """One soft object as a lattice soft body of the core world."""

    object_name: str
    body_index: int
    """Index of the body in :class:`SoftWorld` (``world.body_positions(state, body_index)``)."""
    lattice: LatticeMesh
    """The lattice built in the object's scaled local frame [BU] (``tet_vertices`` there, not in the world)."""
    tet_indices: np.ndarray
    """(T, 4) int32 tets as given to the core (two columns swapped when the object is mirrored)."""
    embed_tet: np.ndarray
    """(V_render,) tet containing each render vertex."""
    embed_weights: np.ndarray
    """(V_render, 4) barycentric weights, columns matching :attr:`tet_indices`."""
    rest_world: np.ndarray
    """(V_tet, 3) lattice vertices in the world at the first frame [m]."""
    pinned: np.ndarray
    """(V_tet,) bool: lattice vertices that follow the object's transform."""
    pinned_render: np.ndarray
    """(V_render,) bool: render vertices in the pin group (weight above the threshold)."""
    world_matrices: np.ndarray
    """(F, 4, 4) row-major world matrices of the object at every baked frame [BU]."""

    @property
    def render_vertex_count(self) -> int:
        return int(self.embed_tet.shape[0])

    @property
    def tet_vertex_count(self) -> int:
        return int(self.rest_world.shape[0])

    @property
    def tet_count(self) -> int:
        return int(self.tet_indices.shape[0])

    def render_world(self, tet_positions: np.ndarray) -> np.ndarray:
        """Render-vertex positions from lattice positions (the embedding), in the same units.

        Args:
            tet_positions: (..., V_tet, 3) lattice vertex positions.

        Returns:
            (..., V_render, 3): ``sum_j w[v, j] x[tet[embed_tet[v], j]]``.
        """
        corners = np.asarray(tet_positions)[..., self.tet_indices[self.embed_tet], :]  # (..., V, 4, 3)
        return np.einsum("vj,...vjk->...vk", self.embed_weights, corners)

    def local_positions(self, tet_positions: np.ndarray, length_scale: float) -> np.ndarray:
        """Object-local render positions per frame: what the shape keys / the PC2 file store.

        Args:
            tet_positions: (F, V_tet, 3) simulated lattice positions in the world [m], one row per baked frame.
            length_scale: metres per Blender unit [m/BU].

        Returns:
            (F, V_render, 3) float32 [BU]: ``T_f⁻¹ · (embedded world position / length_scale)``.
        """
        frame_count = tet_positions.shape[0]
        out = np.empty((frame_count, self.render_vertex_count, 3), dtype=np.float32)
        inverse = np.linalg.inv(self.world_matrices[:frame_count])
        for f in range(frame_count):  # one vectorised embedding per frame: bounded memory for big meshes
            world = self.render_world(tet_positions[f]) / length_scale
            out[f] = world @ inverse[f, :3, :3].T + inverse[f, :3, 3]
        return out


@dataclass
class SoftColliderExport:
    """One rigid object (passive or active box) as a collider of the core world."""

    object_name: str
    role: str
    """'PASSIVE' (static or kinematic) or 'ACTIVE' (dynamic box, keyed by the bake)."""
    shape: str
    collider_index: int
    kind: ColliderKind
    centre_local: np.ndarray
    """Collider origin in object space [BU], shape (3,): the bounding-box centre (the origin for planes)."""
    scale: np.ndarray
    """Object scale at the first frame, shape (3,)."""


@dataclass(kw_only=True)
class SoftBakeSettings:
    """The soft engine's solver and output settings as the scene sets them (SI units), and the bake's bookkeeping:
    read by :func:`gather_soft_scene`, handed unchanged from the gathered scene to its export."""

    substeps: int = 2
    contact: str = "IMPLICIT"
    dual_solver: str = "PROX"
    """Contact solver of the DUAL formulation: 'PGS' when the scene's Solver is PGS, else 'PROX'."""
    integrator: str = "BE"
    """'BE' or 'BDF2' (the DUAL formulation always steps with backward Euler)."""
    contact_thickness: float = 0.0
    """Soft contact thickness [m]; 0 = automatic."""
    friction_velocity: float = 1.0e-2
    """Static friction speed ε_v [m/s] of the IMPLICIT formulation's smoothed friction (``soft_friction_velocity``).
    With the anchored friction below a resting contact does not creep, so ε_v only sets the static spring's
    give (ε_v h); 1 cm/s keeps Newton short (the core's own default, 1 mm/s, is seed 003's)."""
    friction_anchor: bool = True
    """Anchored friction (core ``SoftSettings.friction_anchor``): a sticking contact is held at the point where it
    stuck, so a resting contact does not creep whatever ε_v."""
    output: str = "SHAPE_KEYS"
    cache_dir: str | None = None
    """Absolute folder of the PC2 files (output 'PC2' only)."""
    cache_files: list[str] = field(default_factory=list)
    """Absolute PC2 path per soft body, in the bodies' order (output 'PC2' only; :mod:`..output.caches`)."""
    warnings: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)

    def bake_settings(self) -> dict:
        """These settings by name (copies of the lists), to build the next stage's record from."""
        values = {f.name: getattr(self, f.name) for f in fields(SoftBakeSettings)}
        values.update(warnings=list(self.warnings), timings=dict(self.timings), cache_files=list(self.cache_files))
        return values

    def solver_settings(self):
        """The core's :class:`~contact_lab.core.soft.frame_loop.SoftSettings` for this bake."""
        from ...core.soft.frame_loop import SoftSettings

        return SoftSettings(
            substeps=self.substeps,
            contact_thickness=self.contact_thickness,
            friction_velocity=self.friction_velocity,
            friction_anchor=self.friction_anchor,
            formulation=self.contact,
            dual_solver=self.dual_solver,
            integrator=self.integrator,
        )


@dataclass
class SoftSceneExport(SoftBakeSettings):
    """Everything a soft bake needs, detached from bpy (except object names)."""

    scene_name: str
    world: SoftWorld
    frames: np.ndarray
    """Scene frame numbers of the baked rows, shape (F,), int."""
    fps: float
    """Frame rate [1/s]."""
    length_scale: float
    """Metres per Blender unit [m/BU]."""
    bodies: list[SoftBodyExport]
    colliders: list[SoftColliderExport]
    pin_tracks: dict
    """``{body index: (F, 4, 4) world matrices with translations in metres}`` of bodies with pinned vertices."""
    collider_tracks: dict
    """``{collider index: (positions (F, 3) [m], quaternions (F, 4) wxyz)}`` of kinematic colliders."""

    @property
    def frame_count(self) -> int:
        return int(self.frames.shape[0])

    @property
    def dynamic_colliders(self) -> list[SoftColliderExport]:
        return [c for c in self.colliders if c.kind == ColliderKind.DYNAMIC]

    @property
    def passive_colliders(self) -> list[SoftColliderExport]:
        return [c for c in self.colliders if c.kind != ColliderKind.DYNAMIC]


SAMPLED = "SAMPLED"
"""Contact surface of the soft engine, whose penalty contact acts on points: the mesh's vertices and points on its
edges and faces at most a lattice cell apart (:mod:`contact_lab.core.soft.contact_samples`), so that a coarse mesh
(the default cube) is held by its faces, not only by its corners."""
REFINED = "REFINED"
"""Contact surface of IPC, whose barrier acts on triangles (a point lying on its own face would touch it): the
mesh's triangles split until no edge is longer than :data:`REFINED_SPACING` lattice cells, every new point embedded
like the vertices."""
REFINED_SPACING = 2.0
"""Longest edge of IPC's split surface, in lattice cells. On the default cube (2 m, resolution 8) the top over the
third second is within 3 mm of the Soft engine's at 1 and 2 cells and 3.7 cm lower at 3; a frame takes 0.085, 0.032
and 0.018 s (``tests/benchmarks/bench_default_cube.py``, ``tests/blender/test_ipc_bake.py``)."""
MESH = "MESH"
"""Contact surface of IPC in files made before :data:`REFINED`: the mesh's own vertices, edges and triangles."""


@dataclass
class SoftBodyInput:
    """One soft object as read from Blender: everything :func:`build_soft_body` needs, detached from bpy.

    Read on Blender's main thread (:func:`read_soft_body`); the lattice is built from it on any thread.
    """

    object_name: str
    vertices: np.ndarray
    """(V, 3) float64 mesh vertices as modelled, object space [BU]."""
    triangles: np.ndarray
    """(T, 3) int64 mesh triangles."""
    world_matrices: np.ndarray
    """(F, 4, 4) row-major world matrices at the baked frames [BU]."""
    pinned_render: np.ndarray
    """(V,) bool: render vertices in the pin group (weight above :data:`PIN_WEIGHT_THRESHOLD`)."""
    lattice_resolution: int
    material: dict
    """Keyword arguments of ``SoftWorldBuilder.add_soft_body`` known before the lattice (SI units)."""
    """Keyword arguments of ``SoftWorldBuilder.add_soft_body`` known before the lattice (SI units)."""
    lattice_fitted: bool = True
    """The lattice ends at faces lying on its cell planes (False: a layer of cells beyond them, older files)."""
    surface: str = SAMPLED
    """What collides (:data:`SAMPLED`: the soft engine; IPC's :data:`REFINED` or :data:`MESH`)."""
    ipc_surface: str = REFINED
    """The object's *IPC Surface*: what collides when the IPC engine bakes it (its gather sets :attr:`surface`)."""


@dataclass
class ColliderInput:
    """One rigid object (passive or active box) as read from Blender, for :func:`build_soft_scene`."""

    object_name: str
    role: str
    shape: str
    kind: ColliderKind
    centre_local: np.ndarray
    """Collider origin in object space [BU], (3,)."""
    scale: np.ndarray
    """Object scale at the first frame, (3,)."""
    arguments: dict
    """Keyword arguments of ``SoftWorldBuilder.add_collider`` (SI units)."""
    track: tuple | None = None
    """Kinematic colliders: ``(positions (F, 3) [m], quaternions (F, 4) wxyz)``."""


@dataclass
class SoftSceneInput(SoftBakeSettings):
    """A Soft-engine scene as read from Blender (:func:`gather_soft_scene`): plain data, no bpy.

    :func:`build_soft_scene` turns it into a :class:`SoftSceneExport` on any thread (the bake's worker thread).
    """

    scene_name: str
    frames: np.ndarray
    """Scene frame numbers of the baked rows, shape (F,), int."""
    fps: float
    length_scale: float
    """Metres per Blender unit [m/BU]."""
    gravity: np.ndarray
    """(3,) [m/s²]."""
    bodies: list[SoftBodyInput]
    colliders: list[ColliderInput]

    @property
    def frame_count(self) -> int:
        return int(self.frames.shape[0])


def _pin_mask(lattice_tets: np.ndarray, embed_tet: np.ndarray, pinned_render: np.ndarray, count: int) -> np.ndarray:
    """Lattice vertices of the tets that contain a pinned render vertex, shape (count,) bool."""
    mask = np.zeros(count, dtype=bool)
    mask[lattice_tets[embed_tet[pinned_render]].ravel()] = True
    return mask


def build_soft_body(inp: SoftBodyInput, metres: float) -> tuple[dict, SoftBodyExport]:
    """Lattice, embedding and pins of one soft object (no bpy: runs on the bake's worker thread); its contact
    surface as ``inp.surface`` says (:data:`SAMPLED`, :data:`REFINED` or :data:`MESH`). The render mesh and its
    output stay the mesh's vertices whatever collides.

    Args:
        inp: the object as read by :func:`read_soft_body`.
        metres: metres per Blender unit.

    Returns:
        ``(keyword arguments of SoftWorldBuilder.add_soft_body, the export record with body_index = -1)``.
    """
    matrices = inp.world_matrices
    linear = matrices[0, :3, :3]
    scale = np.linalg.norm(linear, axis=0)  # column norms: the object's (positive) scale
    # cubic cells along the object's own axes: tetrahedralize the scaled local mesh, then place it in the world
    local = inp.vertices * scale
    lattice = tetrahedralize_lattice(local, inp.triangles, resolution=inp.lattice_resolution, fitted=inp.lattice_fitted)
    point_tet, point_weights = lattice.embed_tet, lattice.embed_weights
    surface_triangles = np.array(inp.triangles, dtype=np.int64, copy=True)
    if inp.surface == REFINED:
        points, surface_triangles = refined_surface(local, inp.triangles, REFINED_SPACING * lattice.cell_size)
        extra = points[local.shape[0] :]
    elif inp.surface == SAMPLED:  # contact points between the vertices (never output: the render mesh stays them)
        extra = face_sample_points(local, inp.triangles, lattice.cell_size)
    else:
        extra = np.zeros((0, 3))
    sample_tet, sample_weights = embed_in_lattice(lattice, extra)
    if sample_tet.shape[0] < extra.shape[0] and inp.surface == REFINED:  # a point outside the lattice: the mesh's
        sample_tet, sample_weights = sample_tet[:0], sample_weights[:0]
        surface_triangles = np.array(inp.triangles, dtype=np.int64, copy=True)
    point_tet = np.concatenate([point_tet, sample_tet])
    point_weights = np.concatenate([point_weights, sample_weights])
    placement = linear / scale  # a rotation, or a rotation with shear (parents) / a mirror (det < 0)
    rest_world = (lattice.tet_vertices @ placement.T + matrices[0, :3, 3]) * metres
    tets = np.array(lattice.tet_indices, copy=True)
    weights = np.array(lattice.embed_weights, copy=True)
    point_weights = np.array(point_weights, copy=True)
    if np.linalg.det(placement) < 0.0:  # mirrored: swap two corners so every tet stays positively oriented
        tets[:, [2, 3]] = tets[:, [3, 2]]
        weights[:, [2, 3]] = weights[:, [3, 2]]
        point_weights[:, [2, 3]] = point_weights[:, [3, 2]]
        surface_triangles[:, [1, 2]] = surface_triangles[:, [2, 1]]  # and keep the faces outward
    pinned = _pin_mask(tets, lattice.embed_tet, inp.pinned_render, rest_world.shape[0])
    kwargs = dict(
        inp.material,
        pinned=pinned,
        contact_points=(np.asarray(point_tet), point_weights),  # the visible surface collides, not the lattice
        contact_triangles=surface_triangles,  # what other soft bodies collide with (the vertices come first)
        tet_volume_fraction=np.asarray(lattice.tet_volume_fraction),  # the mass is the mesh's, not the lattice's
    )
    record = SoftBodyExport(
        object_name=inp.object_name,
        body_index=-1,
        lattice=lattice,
        tet_indices=tets,
        embed_tet=np.asarray(lattice.embed_tet),
        embed_weights=weights,
        rest_world=rest_world,
        pinned=pinned,
        pinned_render=inp.pinned_render,
        world_matrices=inp.world_matrices,
    )
    return kwargs, record


def _add_soft_bodies(builder, bodies: list[SoftBodyInput], metres: float) -> tuple[list, dict]:
    """Add every soft body to ``builder``; returns
    ``(exports, pin tracks)``.

    Returns:
        The :class:`SoftBodyExport` records, and ``{body index: world matrices (F, 4, 4) [m]}`` of the bodies
        with pinned vertices (their pins follow the object's animation).
    """
    records: list[SoftBodyExport] = []
    pin_tracks = {}
    for inp in bodies:
        kwargs, record = build_soft_body(inp, metres)
        record.body_index = builder.add_soft_body(record.rest_world, record.tet_indices, **kwargs)
        records.append(record)
        if record.pinned.any():
            track = np.array(inp.world_matrices, dtype=np.float64)
            track[:, :3, 3] *= metres
            pin_tracks[record.body_index] = track
    return records, pin_tracks


def _add_colliders(builder, colliders: list[ColliderInput]) -> tuple[list, dict]:
    """Add passive objects and active boxes; return (records, kinematic tracks by collider index)."""
    records, tracks = [], {}
    for c in colliders:
        index = builder.add_collider(SHAPES[c.shape], **c.arguments)
        if c.track is not None:
            tracks[index] = c.track
        records.append(SoftColliderExport(c.object_name, c.role, c.shape, index, c.kind, c.centre_local, c.scale))
    return records, tracks


def build_soft_scene(inp: SoftSceneInput) -> SoftSceneExport:
    """The core soft world of a gathered scene (lattices, embedding, colliders; no bpy: any thread).

    Raises:
        BakeError: the core refuses the world (the message names the object).
    """
    builder = SoftWorldBuilder(gravity=inp.gravity)
    try:
        bodies, pin_tracks = _add_soft_bodies(builder, inp.bodies, inp.length_scale)
        colliders, collider_tracks = _add_colliders(builder, inp.colliders)
        world = builder.finalize()
    except SoftWorldError as exc:
        message = str(exc)
        names = [b.object_name for b in inp.bodies] + [c.object_name for c in inp.colliders]
        culprit = next((name for name in names if message.startswith(name + ":")), None)
        raise BakeError(message, object_name=culprit) from exc
    return SoftSceneExport(
        scene_name=inp.scene_name,
        world=world,
        frames=inp.frames,
        fps=inp.fps,
        length_scale=inp.length_scale,
        bodies=bodies,
        colliders=colliders,
        pin_tracks=pin_tracks,
        collider_tracks=collider_tracks,
        **inp.bake_settings(),
    )
