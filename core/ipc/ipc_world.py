"""The IPC view of a soft world: one surface of vertices, triangles and edges over the Newton unknowns.

IPC (course §5.3) needs every colliding thing as a triangle surface. :class:`IpcWorld` wraps a
:class:`~contact_lab.core.fem.world.SoftWorld` (soft bodies, materials, pins and dynamic boxes as
affine bodies, built exactly as for the soft engine) and adds:

- **Unknowns** (``dof_count`` nodes, 3 coordinates each): the soft world's nodes (soft vertices and
  the four virtual nodes of each dynamic box), then one node per vertex of every KINEMATIC collider.
  Kinematic vertices are unknowns held on their animation by a stiff spring (an augmented-Lagrangian
  style penalty, :class:`~.ipc_solver.IpcSolver`): they then move along the CCD-filtered Newton
  path like everything else, so a collider can never be driven *through* a soft body within a step.
- **Surface vertices** ``S``: each is ``x_s = offset_s + sum_j w_sj X[n_sj]`` (``n_sj = -1`` unused):
  a soft body's contact points (its render vertices embedded in the lattice, or its boundary
  vertices), the eight corners of a dynamic box (weights over its affine nodes), a kinematic
  collider's vertices (weight 1 on their own node) and a static collider's vertices (no node; the
  offset is their world position).
- **Triangles and edges** over the surface vertices, and ``surface_group`` (S,): the soft body index,
  ``body_count + a`` for dynamic box ``a``, ``-1`` for collider vertices (so collider–collider pairs
  are skipped while soft self-contact is kept).

Colliders are the soft world's analytic shapes, tessellated (:func:`tessellate_shape`; a sphere or
capsule is inscribed in the analytic one, a plane becomes one triangle around a disc of radius
``plane_half_size``), plus
arbitrary triangle meshes (:class:`MeshCollider`, e.g. a bowl or knife blades from Blender).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..config import FLOAT, INDEX
from ..enums import ShapeType
from ..fem.materials import MaterialModel
from ..fem.primitives import icosphere
from ..fem.world import ColliderKind, SoftWorld, SoftWorldState
from ..math.quat import rotation_matrix
from .broad_phase import build_edges

BOX_TRIANGLES = np.array(
    [[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
     [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]], dtype=INDEX,
)  # fmt: skip
"""Outward triangles of the box whose corner ``k`` has signs ``((k>>2)&1, (k>>1)&1, k&1)`` (x, y, z; 1 = +)."""

SPHERE_SUBDIVISIONS = 3
"""Icosphere level of tessellated spheres and capsules (642 vertices)."""


@dataclass
class MeshCollider:
    """A static or kinematic triangle-mesh collider (local coordinates, posed like the soft world's colliders).

    ``vertices`` (V, 3) [m] in the collider frame, ``triangles`` (T, 3) outward (counter-clockwise seen from
    outside; IPC uses unsigned distances, so orientation only matters for the reader), ``position`` (3,) [m]
    and ``orientation`` wxyz (4,) of the frame at frame 0, ``friction`` mu, ``anisotropy`` (6,) as in
    ``SoftWorldBuilder.add_collider`` (zeros = isotropic).
    """

    vertices: np.ndarray
    triangles: np.ndarray
    kind: ColliderKind = ColliderKind.STATIC
    position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    orientation: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    friction: float = 0.5
    anisotropy: np.ndarray = field(default_factory=lambda: np.zeros(6))
    name: str = ""


def box_corner_signs() -> np.ndarray:
    """(8, 3) corner signs in the order of :data:`BOX_TRIANGLES` (same order as the soft world's box corners)."""
    return np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=FLOAT)


def tessellate_shape(shape: ShapeType, params, plane_half_size: float) -> tuple[np.ndarray, np.ndarray]:
    """Triangle surface (vertices (V, 3) in the shape frame [m], triangles (T, 3)) of an analytic collider."""
    shape = ShapeType(int(shape))
    p = np.asarray(params, dtype=FLOAT)
    if shape == ShapeType.BOX:
        return box_corner_signs() * p[:3], BOX_TRIANGLES.copy()
    if shape == ShapeType.SPHERE:
        return icosphere(p[0], SPHERE_SUBDIVISIONS)
    if shape == ShapeType.CAPSULE:
        v, t = icosphere(p[0], SPHERE_SUBDIVISIONS)
        v = v.copy()
        v[:, 2] += np.where(v[:, 2] > 0.0, p[1], np.where(v[:, 2] < 0.0, -p[1], 0.0))
        return v, t
    if shape == ShapeType.PLANE:
        # One triangle whose inscribed circle has radius plane_half_size: no interior edges, so a body
        # resting on the plane meets exactly one face (a square's diagonal would double its contacts).
        R = 2.0 * float(plane_half_size)
        angles = np.radians([90.0, 210.0, 330.0])
        v = np.stack([R * np.cos(angles), R * np.sin(angles), np.zeros(3)], axis=1)
        return v, np.array([[0, 1, 2]], dtype=INDEX)
    raise ValueError(f"cannot tessellate collider shape {shape!r}")


@dataclass
class _Collider:
    name: str
    kind: ColliderKind
    local_vertices: np.ndarray
    triangles: np.ndarray
    position: np.ndarray
    orientation: np.ndarray
    friction: float
    anisotropy: np.ndarray
    soft_index: int
    """Index in the soft world's colliders, or -1 for a mesh collider."""


def _soft_world_colliders(sw: SoftWorld, plane_half_size: float) -> list[_Collider]:
    """The soft world's static and kinematic analytic colliders, tessellated (dynamic boxes are affine bodies)."""
    colliders = []
    for c in range(sw.collider_count):
        if sw.collider_kind[c] == ColliderKind.DYNAMIC:
            continue
        v, t = tessellate_shape(sw.collider_shape[c], sw.collider_params[c], plane_half_size)
        colliders.append(
            _Collider(sw.collider_names[c], ColliderKind(int(sw.collider_kind[c])), v, t,
                      sw.collider_position[c].copy(), sw.collider_orientation[c].copy(),
                      float(sw.collider_friction[c]), sw.collider_anisotropy[c].copy(), c)
        )  # fmt: skip
    return colliders


def _mesh_collider(m: MeshCollider) -> _Collider:
    """Validate a :class:`MeshCollider` (STATIC or KINEMATIC, indices in range) and normalise its orientation."""
    kind = ColliderKind(int(m.kind))
    if kind == ColliderKind.DYNAMIC:
        raise ValueError(f"mesh collider {m.name!r}: only STATIC or KINEMATIC meshes are supported")
    v = np.ascontiguousarray(m.vertices, dtype=FLOAT).reshape(-1, 3)
    t = np.ascontiguousarray(m.triangles, dtype=INDEX).reshape(-1, 3)
    if t.size and not 0 <= t.min() <= t.max() < len(v):
        raise ValueError(f"mesh collider {m.name!r}: triangle indices out of range")
    return _Collider(m.name, kind, v, t, np.asarray(m.position, dtype=FLOAT).copy(),
                     np.asarray(m.orientation, dtype=FLOAT) / np.linalg.norm(m.orientation),
                     float(m.friction), np.asarray(m.anisotropy, dtype=FLOAT).reshape(6).copy(), -1)  # fmt: skip


class _SurfaceParts:
    """Per-group pieces of the surface map, concatenated once all groups (bodies, boxes, colliders) are in."""

    FIELDS = ("nodes", "weights", "offset", "group", "friction", "owner", "faces")

    def __init__(self):
        self.parts = {name: [] for name in self.FIELDS}
        self.count = 0
        """Surface vertices added so far (the next group's first vertex)."""

    def add(self, *arrays) -> tuple[int, int]:
        """Append one group of V vertices, one array per field (faces already offset by :attr:`count`).

        Returns the group's ``(start, end)`` surface vertex range.
        """
        for name, value in zip(self.FIELDS, arrays, strict=True):
            self.parts[name].append(value)
        start = self.count
        self.count += len(arrays[0])
        return start, self.count

    def concatenated(self, name: str, dtype) -> np.ndarray:
        """All groups' pieces of field ``name`` as one contiguous array."""
        return np.ascontiguousarray(np.concatenate(self.parts[name]), dtype=dtype)


class IpcWorld:
    """A :class:`SoftWorld` plus the collision surface IPC works on (read-only after construction).

    Attributes (S surface vertices, F triangles, E edges, N = ``dof_count`` nodes):
        soft: the wrapped soft world. ``soft.node_count`` first unknowns are its nodes.
        dof_count: N. ``node_mass`` (N,) lumped [kg] (0 for affine and kinematic nodes),
        ``node_kinematic`` (N,) bool (kinematic collider vertices).
        surface_nodes (S, 4) int64, surface_weights (S, 4), surface_offset (S, 3) [m]: the map above.
        surface_rest (S, 3) [m]: surface vertices at frame 0 (edge–edge mollifier thresholds).
        surface_group (S,) int64, surface_friction (S,), surface_collider (S,) int64 (collider or -1).
        faces (F, 3) int64, edges (E, 2) int64 into the surface vertices.
        body_vertex_range: per soft body ``(start, end)`` of its surface vertices.
        collider_vertex_range: per collider ``(start, end)``; ``collider_kind`` (K,), ``collider_names``.
        collider_friction (K,), collider_anisotropy (K, 6).
        tet_material: soft tets use classical neo-Hookean (``MaterialModel.NEOHOOKEAN``, infinite energy at
            inversion, so the line search keeps every tet upright); virtual box tets keep theirs.
    """

    def __init__(self, soft: SoftWorld, mesh_colliders=(), *, plane_half_size: float | None = None):
        self.soft = soft
        sw = soft
        extent = float(np.max(np.ptp(sw.node_rest, axis=0)))
        centre_dist = float(np.max(np.linalg.norm(sw.node_rest, axis=1)))
        self.plane_half_size = float(plane_half_size or 10.0 * (extent + centre_dist) + 1.0)
        colliders = _soft_world_colliders(sw, self.plane_half_size) + [_mesh_collider(m) for m in mesh_colliders]
        self._set_colliders(colliders)

        # Unknowns: soft-world nodes, then kinematic collider vertices.
        kin_counts = [len(c.local_vertices) if c.kind == ColliderKind.KINEMATIC else 0 for c in colliders]
        self.dof_count = sw.node_count + int(sum(kin_counts))
        self.node_mass = np.zeros(self.dof_count)
        self.node_mass[: sw.node_count] = sw.node_mass
        self.node_kinematic = np.zeros(self.dof_count, dtype=bool)
        self.node_kinematic[sw.node_count :] = True

        parts = _SurfaceParts()
        self._add_body_surfaces(parts)
        self._add_collider_surfaces(parts)
        self.surface_nodes = parts.concatenated("nodes", np.int64)
        self.surface_weights = parts.concatenated("weights", FLOAT)
        self.surface_offset = parts.concatenated("offset", FLOAT)
        self.surface_group = parts.concatenated("group", np.int64)
        self.surface_friction = parts.concatenated("friction", FLOAT)
        self.surface_collider = parts.concatenated("owner", np.int64)
        self.faces = parts.concatenated("faces", np.int64).reshape(-1, 3)
        self.edges = np.ascontiguousarray(build_edges(self.faces), dtype=np.int64)
        self.surface_count = parts.count
        x0 = self.initial_positions()
        self.surface_rest = self.surface_positions(x0)

        self.tet_material = sw.tet_material.copy()
        self.tet_material[: sw.soft_tet_count] = int(MaterialModel.NEOHOOKEAN)
        self.length_scale = sw.length_scale
        self.bbox_diagonal = float(np.linalg.norm(np.ptp(sw.node_rest, axis=0)))
        """Diagonal of the soft bodies' bounding box at rest [m] (scales dhat's default and the tolerances)."""

    def _set_colliders(self, colliders: list[_Collider]) -> None:
        # Per-collider arrays (K = collider_count) of the tessellated and mesh colliders.
        self._colliders = colliders
        self.collider_count = len(colliders)
        self.collider_names = [c.name for c in colliders]
        self.collider_kind = np.array([int(c.kind) for c in colliders], dtype=np.int64)
        self.collider_friction = np.array([c.friction for c in colliders], dtype=FLOAT)
        self.collider_anisotropy = np.array([c.anisotropy for c in colliders], dtype=FLOAT).reshape(-1, 6)
        self.collider_soft_index = np.array([c.soft_index for c in colliders], dtype=np.int64)
        self.collider_position = np.array([c.position for c in colliders], dtype=FLOAT).reshape(-1, 3)
        self.collider_orientation = np.array([c.orientation for c in colliders], dtype=FLOAT).reshape(-1, 4)

    def _add_body_surfaces(self, parts: _SurfaceParts) -> None:
        # Soft bodies' contact points (embedded render or boundary vertices), then the 8 corners of each dynamic
        # box, weighted over its 4 affine nodes.
        sw = self.soft
        self.body_vertex_range = []
        for b in range(sw.body_count):
            sel = np.flatnonzero(sw.point_body == b)
            tri = sw.triangle_points[np.isin(sw.triangle_points[:, 0], sel)]
            self.body_vertex_range.append(
                parts.add(sw.point_nodes[sel], sw.point_weights[sel], np.zeros((len(sel), 3)), np.full(len(sel), b),
                          sw.point_friction[sel], np.full(len(sel), -1), tri - sel[0] + parts.count)
            )  # fmt: skip
        self.box_vertex_range = []
        for a in range(sw.affine_count):
            c = int(sw.affine_collider[a])
            self.box_vertex_range.append(
                parts.add(np.tile(sw.affine_nodes[a], (8, 1)), sw.affine_corner_weights[a], np.zeros((8, 3)),
                          np.full(8, sw.body_count + a), np.full(8, sw.collider_friction[c]), np.full(8, -1),
                          BOX_TRIANGLES + parts.count)
            )  # fmt: skip

    def _add_collider_surfaces(self, parts: _SurfaceParts) -> None:
        # Collider vertices: a kinematic one is its own unknown node (weight 1), a static one has no node and its
        # world position as offset.
        self.collider_vertex_range = []
        self.collider_node_start = np.full(self.collider_count, -1, dtype=np.int64)
        next_node = self.soft.node_count
        for k, c in enumerate(self._colliders):
            V = len(c.local_vertices)
            world = self._pose_vertices(k, c.position, c.orientation)
            n = np.full((V, 4), -1, dtype=np.int64)
            w = np.zeros((V, 4))
            if c.kind == ColliderKind.KINEMATIC:
                n[:, 0] = next_node + np.arange(V)
                w[:, 0] = 1.0
                offset = np.zeros((V, 3))
                self.collider_node_start[k] = next_node
                next_node += V
            else:
                offset = world
            faces = c.triangles + parts.count
            self.collider_vertex_range.append(
                parts.add(n, w, offset, np.full(V, -1), np.full(V, c.friction), np.full(V, k), faces)
            )

    # -------------------------------------------------------------------------------------------

    def _pose_vertices(self, k: int, position, orientation) -> np.ndarray:
        c = self._colliders[k]
        return c.local_vertices @ rotation_matrix(orientation).T + np.asarray(position, dtype=FLOAT)

    def collider_vertices(self, k: int, position, orientation) -> np.ndarray:
        """World positions (V_k, 3) [m] of collider ``k``'s vertices at the given pose."""
        return self._pose_vertices(k, position, orientation)

    def initial_positions(self) -> np.ndarray:
        """Unknowns at frame 0, (N, 3) [m]: soft-world rest nodes and posed kinematic vertices."""
        x = np.zeros((self.dof_count, 3))
        x[: self.soft.node_count] = self.soft.node_rest
        for k in range(self.collider_count):
            s = self.collider_node_start[k]
            if s >= 0:
                V = len(self._colliders[k].local_vertices)
                x[s : s + V] = self._pose_vertices(k, self.collider_position[k], self.collider_orientation[k])
        return x

    def surface_positions(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Surface vertex positions (S, 3) [m] from the unknowns ``x`` (N, 3)."""
        n, w = self.surface_nodes, self.surface_weights
        gathered = np.where(n[..., None] >= 0, x[np.maximum(n, 0)] * w[..., None], 0.0).sum(axis=1)
        res = self.surface_offset + gathered
        if out is not None:
            out[:] = res
            return out
        return res

    def state(self) -> SoftWorldState:
        """Initial state: unknowns (N, 3) with the soft world's velocities, colliders at their frame-0 pose."""
        base = self.soft.state()
        x = self.initial_positions()
        v = np.zeros_like(x)
        v[: self.soft.node_count] = base.v
        return SoftWorldState(x, v, self.collider_position.copy(), self.collider_orientation.copy())

    def body_surface(self, state: SoftWorldState, body: int) -> np.ndarray:
        """Soft body ``body``'s contact points (its render vertices when embedded) in the world, (P_b, 3) [m]."""
        s, e = self.body_vertex_range[body]
        return self.surface_positions(state.x)[s:e]
