"""A soft-body world: several tet-mesh soft bodies, colliders and dynamic rigid boxes in one system.

:class:`SoftWorldBuilder` collects the pieces; :meth:`SoftWorldBuilder.finalize` flattens them into
a :class:`SoftWorld` (structure of arrays, world coordinates, SI units) that
:class:`~.world_solver.SoftWorldSolver` advances.

Nodes. All soft-body vertices are concatenated into one node array; body ``b`` owns the node range
``body_node_start[b]:body_node_start[b + 1]``. A **dynamic** collider (a rigid box driven by contact
and gravity) is an *affine body* (Lan et al. 2022, "Affine Body Dynamics"): four virtual nodes at the
corners of a regular tetrahedron around its centre of mass carry its 12 affine degrees of freedom,
every point of the box is a fixed barycentric combination of them, its mass matrix is the consistent
``M_kl = ∫ rho w_k w_l dV`` (exact for rigid and affine motion), and a very stiff fixed-corotated
energy on the virtual tet keeps the map a rotation. Dynamic bodies therefore join the same Newton
system as the soft bodies, with no special coupling.

Colliders. ``STATIC`` and ``KINEMATIC`` colliders (a plane, box, sphere or capsule; kinematic ones
follow a pose track) act on soft vertices and on the corner samples of dynamic boxes; ``DYNAMIC``
boxes act on soft vertices. Rigid–rigid contact between dynamic boxes is not modelled here (that is
the rigid engine's job).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ..config import FLOAT, INDEX
from ..enums import ShapeType
from ..errors import SoftWorldError
from ..math.quat import quat_normalize, rotation_matrix
from .lattice import extract_surface_triangles
from .materials import MaterialModel
from .tet_mesh import compute_rest_shape, filled_vertex_mass, lame_parameters, lumped_vertex_mass
from .volume import VolumeModel

AFFINE_STIFFNESS_FACTOR = 1.0e4
"""A dynamic box's orthogonality stiffness: Young's modulus of its virtual tet =
factor × max(largest soft Young's modulus, contact stiffness / box size) [Pa]."""

# Corners of the virtual tet: alternate cube corners (a positively oriented regular tetrahedron).
_AFFINE_CORNERS = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])
_AFFINE_CORNERS = _AFFINE_CORNERS[[0, 2, 1, 3]]  # order with a positive signed volume


class ColliderKind(IntEnum):
    """How a collider moves."""

    STATIC = 0
    KINEMATIC = 1
    """Follows a prescribed pose track (see ``iter_simulate_soft``)."""
    DYNAMIC = 2
    """A rigid box moved by gravity and contact with the soft bodies (an affine body)."""


@dataclass
class SoftBodySpec:
    """One soft body as given to :meth:`SoftWorldBuilder.add_soft_body` (validated)."""

    name: str
    rest_vertices: np.ndarray
    tets: np.ndarray
    density: float
    youngs_modulus: float
    poisson_ratio: float
    damping: float
    material: MaterialModel
    friction: float
    pinned: np.ndarray
    volume_kappa: float
    volume_model: VolumeModel
    point_nodes: np.ndarray
    """(P, 4) body-local node indices of the contact points (-1 padded)."""
    point_weights: np.ndarray
    """(P, 4) their barycentric weights."""
    point_triangles: np.ndarray
    """(K, 3) contact-point indices of the surface triangles other soft bodies collide with."""
    initial_velocity: np.ndarray
    """(3,) velocity of every node at the start [m/s]."""
    tet_volume_fraction: np.ndarray | None = None
    """(T,) part of each tet the body fills, or None (all of it)."""


@dataclass
class ColliderSpec:
    """One collider as given to :meth:`SoftWorldBuilder.add_collider` (validated)."""

    name: str
    shape: ShapeType
    params: np.ndarray
    position: np.ndarray
    orientation: np.ndarray
    kind: ColliderKind
    friction: float
    mass: float
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray
    anisotropy: np.ndarray
    """(6,) ``(mu_along, mu_across, 1, axis_local)`` or zeros (isotropic)."""


def _vec3(value, what: str) -> np.ndarray:
    out = np.asarray(value, dtype=FLOAT).reshape(-1)
    if out.shape != (3,) or not np.all(np.isfinite(out)):
        raise SoftWorldError(f"{what} must be three finite numbers, got {value!r}")
    return out.copy()


def _check_body(label, x, t, density, youngs_modulus, poisson_ratio, damping, friction, volume_kappa) -> None:
    """Raise :class:`SoftWorldError` (naming ``label``) on a malformed tet mesh ``x`` (V, 3) / ``t`` (T, 4) or
    material parameters out of range."""
    if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] < 4:
        raise SoftWorldError(f"{label}: rest_vertices must be (V >= 4, 3), got {x.shape}")
    if t.ndim != 2 or t.shape[1] != 4 or t.shape[0] < 1:
        raise SoftWorldError(f"{label}: tets must be (T >= 1, 4), got {t.shape}")
    if not np.all(np.isfinite(x)):
        raise SoftWorldError(f"{label}: rest_vertices contain NaN or infinity")
    if t.min() < 0 or t.max() >= x.shape[0]:
        raise SoftWorldError(f"{label}: tet indices out of range [0, {x.shape[0]})")
    if not (density > 0.0 and youngs_modulus > 0.0):
        raise SoftWorldError(f"{label}: density and Young's modulus must be positive")
    if not 0.0 <= poisson_ratio < 0.5:
        raise SoftWorldError(f"{label}: Poisson ratio must be in [0, 0.5), got {poisson_ratio}")
    if damping < 0.0 or friction < 0.0 or volume_kappa < 0.0:
        raise SoftWorldError(f"{label}: damping, friction and volume_kappa must be >= 0")
    try:
        compute_rest_shape(x, t)
    except ValueError as exc:
        raise SoftWorldError(f"{label}: {exc}") from None


def _contact_points(label, t, contact_points, contact_triangles) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A body's contact points and surface triangles (see :meth:`SoftWorldBuilder.add_soft_body`):
    ``(point_nodes (P, 4) body-local, -1 padded, point_weights (P, 4), triangles (K, 3) point indices)``."""
    if contact_points is None:
        faces = extract_surface_triangles(t)
        boundary = np.unique(faces)
        point_nodes = np.full((len(boundary), 4), -1, dtype=np.int64)
        point_nodes[:, 0] = boundary
        point_weights = np.zeros((len(boundary), 4))
        point_weights[:, 0] = 1.0
        default_triangles = np.searchsorted(boundary, faces)
    else:
        tet_of, point_weights = contact_points
        tet_of = np.asarray(tet_of, dtype=np.int64).reshape(-1)
        point_weights = np.ascontiguousarray(point_weights, dtype=FLOAT).reshape(-1, 4)
        if tet_of.shape[0] != point_weights.shape[0] or (
            tet_of.size and not 0 <= tet_of.min() <= tet_of.max() < len(t)
        ):
            raise SoftWorldError(f"{label}: contact_points must be (tet (P,), weights (P, 4)) with valid tets")
        point_nodes = t[tet_of].astype(np.int64)
        default_triangles = np.zeros((0, 3), dtype=np.int64)
    triangles = default_triangles if contact_triangles is None else np.asarray(contact_triangles, dtype=np.int64)
    triangles = triangles.reshape(-1, 3)
    if triangles.size and not 0 <= triangles.min() <= triangles.max() < len(point_nodes):
        raise SoftWorldError(f"{label}: contact_triangles must index the {len(point_nodes)} contact points")
    return point_nodes, point_weights, triangles


class SoftWorldBuilder:
    """Collects soft bodies and colliders; :meth:`finalize` returns the flattened :class:`SoftWorld`."""

    def __init__(self, *, gravity=(0.0, 0.0, -9.81)):
        self.gravity = _vec3(gravity, "gravity")
        self.bodies: list[SoftBodySpec] = []
        self.colliders: list[ColliderSpec] = []

    def add_soft_body(
        self,
        rest_vertices,
        tets,
        *,
        density: float = 1000.0,
        youngs_modulus: float = 1.0e5,
        poisson_ratio: float = 0.3,
        damping: float = 0.0,
        material: MaterialModel = MaterialModel.STABLE_NEOHOOKEAN,
        friction: float = 0.5,
        pinned=None,
        volume_kappa: float = 0.0,
        volume_model: VolumeModel = VolumeModel.QUADRATIC,
        contact_points=None,
        contact_triangles=None,
        initial_velocity=(0.0, 0.0, 0.0),
        tet_volume_fraction=None,
        name: str = "",
    ) -> int:
        """Add a tet-mesh soft body; return its index.

        Args:
            rest_vertices: (V, 3) initial = rest positions in world space [m].
            tets: (T, 4) vertex indices, positively oriented (``lattice.tetrahedralize_lattice`` output).
            density: rho [kg/m³]. youngs_modulus: E [Pa]. poisson_ratio: nu in [0, 0.5).
            damping: Rayleigh stiffness-proportional damping beta [s] (force ``-beta K v``); 0 = none.
            material: hyperelastic model.
            friction: Coulomb coefficient mu of this body's surface (combined with a collider's by the
                geometric mean).
            pinned: optional (V,) bool mask of vertices that follow the body's pin track.
            volume_kappa: compressibility of the volume penalty [1/Pa] (seed 003 eq. 18–21, smaller =
                stiffer); 0 disables it. Needs a closed boundary (always true for a tet mesh).
            volume_model: the penalty's work function.
            contact_points: optional ``(tet (P,) int, weights (P, 4))``: the points that collide, as
                barycentric combinations of a tet's vertices (e.g. the render-mesh vertices embedded in
                a lattice, so the visible surface touches the colliders rather than the lattice, which
                overhangs it by up to a cell). Default: every vertex on the tet mesh's boundary.
            contact_triangles: optional (K, 3) indices into the contact points: the surface other soft
                bodies collide with (e.g. the render mesh's triangles). Default: the tet mesh's boundary
                faces (with the default points) or none (with given points).
            initial_velocity: (3,) start velocity of the whole body [m/s] (a thrown object).
            tet_volume_fraction: optional (T,) part of each tet the body fills, in [0, 1] (a lattice around a
                mesh: ``LatticeMesh.tet_volume_fraction``): the body's mass is ``density`` times the filled
                volume instead of the tets' volume (:func:`~.tet_mesh.filled_vertex_mass`). Only the mass follows
                the fraction; see :meth:`SoftWorld._flatten_bodies`. Default: every tet full.
            name: label used in error messages.
        """
        label = name or f"soft body {len(self.bodies)}"
        x = np.ascontiguousarray(rest_vertices, dtype=FLOAT)
        t = np.ascontiguousarray(tets, dtype=INDEX)
        _check_body(label, x, t, density, youngs_modulus, poisson_ratio, damping, friction, volume_kappa)
        mask = np.zeros(x.shape[0], dtype=bool) if pinned is None else np.asarray(pinned, dtype=bool).copy()
        if mask.shape != (x.shape[0],):
            raise SoftWorldError(f"{label}: pinned must have shape ({x.shape[0]},), got {mask.shape}")
        point_nodes, point_weights, triangles = _contact_points(label, t, contact_points, contact_triangles)
        fraction = None
        if tet_volume_fraction is not None:
            fraction = np.array(tet_volume_fraction, dtype=FLOAT).reshape(-1)
            if fraction.shape != (t.shape[0],) or not np.all((fraction >= 0.0) & (fraction <= 1.0)):
                raise SoftWorldError(f"{label}: tet_volume_fraction must be {t.shape[0]} numbers in [0, 1]")
            if not fraction.any():
                raise SoftWorldError(f"{label}: tet_volume_fraction is zero everywhere (the body has no volume)")
        self.bodies.append(
            SoftBodySpec(
                label, x.copy(), t.copy(), float(density), float(youngs_modulus), float(poisson_ratio),
                float(damping), MaterialModel(material), float(friction), mask, float(volume_kappa),
                VolumeModel(volume_model), point_nodes, point_weights, triangles,
                _vec3(initial_velocity, f"{label}: initial_velocity"), fraction,
            )
        )  # fmt: skip
        return len(self.bodies) - 1

    def add_collider(
        self,
        shape: ShapeType,
        *,
        half_extents=(0.5, 0.5, 0.5),
        radius: float = 0.5,
        half_height: float = 0.5,
        position=(0.0, 0.0, 0.0),
        orientation=(1.0, 0.0, 0.0, 0.0),
        kind: ColliderKind = ColliderKind.STATIC,
        friction: float = 0.5,
        mass: float = 1.0,
        linear_velocity=(0.0, 0.0, 0.0),
        angular_velocity=(0.0, 0.0, 0.0),
        anisotropic_friction=None,
        name: str = "",
    ) -> int:
        """Add a collider; return its index.

        Args:
            shape: PLANE (local XY plane, solid below local -Z), BOX (``half_extents``), SPHERE
                (``radius``) or CAPSULE (local Z axis, ``half_height`` of the segment, ``radius``).
            position, orientation: initial pose (world, [m]; unit quaternion wxyz).
            kind: STATIC, KINEMATIC (pose from a track) or DYNAMIC (BOX only; moved by gravity and
                soft contact; ``mass`` [kg] and initial ``linear_velocity`` [m/s] /
                ``angular_velocity`` [rad/s] used).
            friction: Coulomb coefficient of its surface.
            anisotropic_friction: optional ``(mu_along, mu_across, axis)`` for a STATIC or KINEMATIC
                collider: elliptic Coulomb friction (course ch. 6) with ``mu_along`` when sliding along the
                surface projection of ``axis`` (collider-local, (3,)) and ``mu_across`` across it. It
                replaces the pair's combined coefficient (a structured surface keeps its own ellipse).
        """
        label = name or f"collider {len(self.colliders)}"
        shape = ShapeType(shape)
        kind = ColliderKind(kind)
        if shape == ShapeType.BOX:
            params = _vec3(half_extents, f"{label}: half_extents")
        elif shape == ShapeType.SPHERE:
            params = np.array([radius, 0.0, 0.0])
        elif shape == ShapeType.CAPSULE:
            params = np.array([radius, half_height, 0.0])
        elif shape == ShapeType.PLANE:
            params = np.zeros(3)
        else:
            raise SoftWorldError(f"{label}: unsupported collider shape {shape!r}")
        if shape != ShapeType.PLANE and not np.all(params[: 3 if shape == ShapeType.BOX else 1] > 0.0):
            raise SoftWorldError(f"{label}: collider size must be positive, got {params}")
        if kind == ColliderKind.DYNAMIC and shape != ShapeType.BOX:
            raise SoftWorldError(f"{label}: dynamic colliders in the soft engine must be boxes, got {shape.name}")
        if kind == ColliderKind.DYNAMIC and not mass > 0.0:
            raise SoftWorldError(f"{label}: a dynamic collider needs a positive mass")
        if friction < 0.0:
            raise SoftWorldError(f"{label}: friction must be >= 0")
        aniso = np.zeros(6)  # (mu_along, mu_across, flag, axis)
        if anisotropic_friction is not None:
            mu_along, mu_across, axis = anisotropic_friction
            axis = _vec3(axis, f"{label}: anisotropic friction axis")
            if kind == ColliderKind.DYNAMIC:
                raise SoftWorldError(f"{label}: anisotropic friction is supported on static and kinematic colliders")
            if not (mu_along >= 0.0 and mu_across >= 0.0) or np.linalg.norm(axis) == 0.0:
                raise SoftWorldError(f"{label}: anisotropic friction needs mu >= 0 and a non-zero axis")
            aniso[:3] = (float(mu_along), float(mu_across), 1.0)
            aniso[3:] = axis / np.linalg.norm(axis)
        q = np.asarray(orientation, dtype=FLOAT).reshape(4)
        if not np.all(np.isfinite(q)) or np.sum(q * q) <= 0.0:
            raise SoftWorldError(f"{label}: orientation must be a non-zero quaternion (wxyz)")
        self.colliders.append(
            ColliderSpec(
                label, shape, params, _vec3(position, f"{label}: position"), quat_normalize(q), kind,
                float(friction), float(mass), _vec3(linear_velocity, f"{label}: linear_velocity"),
                _vec3(angular_velocity, f"{label}: angular_velocity"), aniso,
            )
        )  # fmt: skip
        return len(self.colliders) - 1

    def finalize(self) -> SoftWorld:
        """Flatten into a :class:`SoftWorld`."""
        if not self.bodies:
            raise SoftWorldError("the soft world has no soft body")
        return SoftWorld(self)


class SoftWorld:
    """Flattened soft world (read-only after construction). Shapes: N nodes, T tets, C colliders.

    Node data: ``node_rest`` (N, 3) [m], ``node_mass`` (N,) lumped [kg] (0 for affine nodes),
    ``node_pinned`` (N,) bool, ``node_body`` (N,) soft body index or -1 (affine node),
    ``node_friction`` (N,) mu of the owning soft body.
    Tets (soft, then one virtual tet per dynamic box): ``tet_indices`` (T, 4), ``tet_Dm_inv``
    (T, 3, 3), ``tet_rest_volume`` (T,), ``tet_mu``/``tet_lam`` (T,) [Pa], ``tet_material`` (T,).
    Colliders: ``collider_shape`` (C,), ``collider_params`` (C, 3), ``collider_kind`` (C,),
    ``collider_friction`` (C,), initial ``collider_position`` (C, 3), ``collider_orientation`` (C, 4).
    Dynamic boxes (A of them): ``affine_collider`` (A,) collider index, ``affine_nodes`` (A, 4),
    ``affine_rest_nodes`` (A, 4, 3), ``affine_mass`` (A, 4, 4) consistent mass [kg],
    ``affine_corner_weights`` (A, 8, 4) barycentric weights of the box corners, ``affine_tet`` (A,)
    index of the virtual tet.
    """

    def __init__(self, builder: SoftWorldBuilder):
        bodies, colliders = builder.bodies, builder.colliders
        self.gravity = builder.gravity.copy()
        self.body_names = [b.name for b in bodies]
        self.collider_names = [c.name for c in colliders]
        self.body_count = len(bodies)
        self.collider_count = len(colliders)
        counts = [b.rest_vertices.shape[0] for b in bodies]
        self.body_node_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        soft_nodes = int(self.body_node_start[-1])
        dynamic = [i for i, c in enumerate(colliders) if c.kind == ColliderKind.DYNAMIC]
        self.affine_count = len(dynamic)
        self.node_count = soft_nodes + 4 * self.affine_count
        self.soft_node_count = soft_nodes
        tet_lists = self._flatten_bodies(bodies)
        self._flatten_contact_points(bodies)
        self._flatten_colliders(colliders)
        tet_base = sum(len(v) for v in tet_lists[2])
        self._add_affine_bodies(colliders, dynamic, tet_base, tet_lists)
        tets, Dm, vol, mu, lam, mat, damp = tet_lists
        self.tet_indices = np.ascontiguousarray(np.concatenate(tets), dtype=INDEX)
        self.tet_Dm_inv = np.ascontiguousarray(np.concatenate(Dm))
        self.tet_rest_volume = np.ascontiguousarray(np.concatenate(vol))
        self.tet_mu = np.ascontiguousarray(np.concatenate(mu))
        self.tet_lam = np.ascontiguousarray(np.concatenate(lam))
        self.tet_material = np.ascontiguousarray(np.concatenate(mat), dtype=np.int64)
        self.tet_damping = np.ascontiguousarray(np.concatenate(damp))
        self.soft_tet_count = tet_base
        self.tet_count = int(self.tet_indices.shape[0])
        self.length_scale = min(float(np.max(np.ptp(b.rest_vertices, axis=0))) for b in bodies)
        """The smallest soft body's largest extent [m] (sets the automatic contact thickness)."""

    def _flatten_bodies(self, bodies: list[SoftBodySpec]) -> tuple[list, ...]:
        """Node and per-body arrays of the soft bodies; returns the per-tet lists ``(tets, Dm_inv, volume, mu,
        lam, material, damping)`` (one entry per body) that the dynamic boxes' virtual tets are appended to.

        A body's ``tet_volume_fraction`` (the part of a lattice its mesh fills) sets its **mass** only, hence its
        weight and inertia: the lumped masses total ``density`` times the filled volume. The rest stays with the
        whole tets, on purpose:

        - *elasticity* (``tet_rest_volume``): the lattice is the body's elastic discretization, and the tets it
          overhangs carry the embedded render surface and its contact points; scaling their stiffness by the fraction
          (the finite cell method) would leave those points on nearly unsupported nodes. The price is a body up to
          one cell stiffer than its mesh;
        - the *volume penalty* (``body_rest_volume``): it measures the volume inside the lattice's boundary, so its
          rest volume must be the lattice's too (the mesh's volume would be a compression at rest); its pressure
          depends on the ratio V / V0 only.
        """
        self.node_rest = np.zeros((self.node_count, 3))
        self.node_mass = np.zeros(self.node_count)
        self.node_pinned = np.zeros(self.node_count, dtype=bool)
        self.node_body = np.full(self.node_count, -1, dtype=np.int64)
        self.node_friction = np.zeros(self.node_count)
        self.node_velocity = np.zeros((self.node_count, 3))
        tets, Dm, vol, mu, lam, mat, damp = [], [], [], [], [], [], []
        self.body_surface = []
        self.body_volume_kappa = np.zeros(self.body_count)
        self.body_volume_model = np.zeros(self.body_count, dtype=np.int64)
        self.body_rest_volume = np.zeros(self.body_count)
        for b, spec in enumerate(bodies):
            s, e = int(self.body_node_start[b]), int(self.body_node_start[b + 1])
            self.node_rest[s:e] = spec.rest_vertices
            if spec.tet_volume_fraction is None:
                self.node_mass[s:e] = lumped_vertex_mass(spec.rest_vertices, spec.tets, spec.density)
            else:
                self.node_mass[s:e] = filled_vertex_mass(
                    spec.rest_vertices, spec.tets, spec.density, spec.tet_volume_fraction
                )
            self.node_pinned[s:e] = spec.pinned
            self.node_body[s:e] = b
            self.node_friction[s:e] = spec.friction
            self.node_velocity[s:e] = spec.initial_velocity
            Dm_b, vol_b = compute_rest_shape(spec.rest_vertices, spec.tets)
            m, la = lame_parameters(spec.youngs_modulus, spec.poisson_ratio)
            tets.append(spec.tets + s)
            Dm.append(Dm_b)
            vol.append(vol_b)
            mu.append(np.full(len(vol_b), m))
            lam.append(np.full(len(vol_b), la))
            mat.append(np.full(len(vol_b), int(spec.material)))
            damp.append(np.full(len(vol_b), spec.damping))
            self.body_surface.append((extract_surface_triangles(spec.tets) + s).astype(INDEX))
            self.body_volume_kappa[b] = spec.volume_kappa
            self.body_volume_model[b] = int(spec.volume_model)
            self.body_rest_volume[b] = float(vol_b.sum())
        self.max_youngs_modulus = max(b.youngs_modulus for b in bodies)
        return tets, Dm, vol, mu, lam, mat, damp

    def _flatten_contact_points(self, bodies: list[SoftBodySpec]) -> None:
        """Contact points and surface triangles of all bodies, with global node and point indices."""
        nodes = [
            np.where(b.point_nodes >= 0, b.point_nodes + self.body_node_start[i], -1) for i, b in enumerate(bodies)
        ]
        point_start = np.concatenate([[0], np.cumsum([len(b.point_nodes) for b in bodies])])
        self.triangle_points = np.ascontiguousarray(
            np.concatenate([b.point_triangles + point_start[i] for i, b in enumerate(bodies)]), dtype=np.int64
        ).reshape(-1, 3)
        """(K, 3) global contact-point indices of the soft surfaces' triangles (soft-soft contact)."""
        self.point_nodes = np.ascontiguousarray(np.concatenate(nodes), dtype=np.int64)
        self.point_weights = np.ascontiguousarray(np.concatenate([b.point_weights for b in bodies]))
        self.point_body = np.concatenate([np.full(len(b.point_nodes), i) for i, b in enumerate(bodies)])
        self.point_friction = np.array([bodies[i].friction for i in self.point_body], dtype=FLOAT)

    def _flatten_colliders(self, colliders: list[ColliderSpec]) -> None:
        """Per-collider arrays (shape, size, kind, friction, anisotropy, initial pose)."""
        self.collider_shape = np.array([int(c.shape) for c in colliders], dtype=np.int64)
        self.collider_params = np.array([c.params for c in colliders], dtype=FLOAT).reshape(-1, 3)
        self.collider_kind = np.array([int(c.kind) for c in colliders], dtype=np.int64)
        self.collider_friction = np.array([c.friction for c in colliders], dtype=FLOAT)
        self.collider_anisotropy = np.array([c.anisotropy for c in colliders], dtype=FLOAT).reshape(-1, 6)
        self.collider_position = np.array([c.position for c in colliders], dtype=FLOAT).reshape(-1, 3)
        self.collider_orientation = np.array([c.orientation for c in colliders], dtype=FLOAT).reshape(-1, 4)

    def _add_affine_bodies(self, colliders: list[ColliderSpec], dynamic: list[int], tet_base: int, tet_lists) -> None:
        """The dynamic boxes as affine bodies (module docstring): four virtual nodes after the soft nodes, their
        consistent mass, corner weights and initial velocities; one virtual tet each appended to ``tet_lists``
        (numbered from ``tet_base``)."""
        tets, Dm, vol, mu, lam, mat, damp = tet_lists
        A = self.affine_count
        self.affine_collider = np.array(dynamic, dtype=np.int64)
        self.affine_nodes = np.zeros((A, 4), dtype=np.int64)
        self.affine_rest_nodes = np.zeros((A, 4, 3))
        self.affine_mass = np.zeros((A, 4, 4))
        self.affine_corner_weights = np.zeros((A, 8, 4))
        self.affine_tet = np.zeros(A, dtype=np.int64)
        self.affine_velocity = np.zeros((A, 4, 3))
        self.affine_half_extents = np.zeros((A, 3))
        for a, ci in enumerate(dynamic):
            spec = colliders[ci]
            nodes = self.soft_node_count + 4 * a + np.arange(4)
            rest = self._add_affine_box(a, spec, nodes)
            Dm_a, vol_a = compute_rest_shape(rest, np.array([[0, 1, 2, 3]], dtype=INDEX))
            tets.append(nodes[None, :].astype(INDEX))
            Dm.append(Dm_a)
            vol.append(vol_a)
            mu.append(np.full(1, np.nan))  # set by the solver from its contact stiffness
            lam.append(np.zeros(1))
            mat.append(np.full(1, int(MaterialModel.COROTATED)))
            damp.append(np.zeros(1))
            self.affine_tet[a] = tet_base + a

    def _add_affine_box(self, a: int, spec: ColliderSpec, nodes: np.ndarray) -> np.ndarray:
        """Virtual nodes ``nodes`` (4,) of dynamic box ``a``: rest positions (returned, (4, 3) [m]), consistent
        mass ``M_kl = ∫ rho w_k w_l dV`` [kg], barycentric weights of the 8 corners, rigid initial velocity."""
        R = rotation_matrix(spec.orientation)
        half = spec.params
        scale = float(np.sqrt(np.sum(half * half)))
        rest = spec.position + (_AFFINE_CORNERS * scale) @ R.T
        self.affine_nodes[a] = nodes
        self.affine_rest_nodes[a] = rest
        self.affine_half_extents[a] = half
        self.node_rest[nodes] = rest
        # Barycentric weights are affine in p: w(p) = a0 + B (p - c) with c the centre of mass.
        D = (rest[1:] - rest[0]).T
        Dinv = np.linalg.inv(D)
        w123_c = Dinv @ (spec.position - rest[0])
        a0 = np.concatenate([[1.0 - w123_c.sum()], w123_c])
        B = np.vstack([-Dinv.sum(axis=0), Dinv])  # (4, 3): dw/dp
        S = R @ np.diag(spec.mass * half * half / 3.0) @ R.T  # ∫ rho (p - c)(p - c)^T dV
        self.affine_mass[a] = spec.mass * np.outer(a0, a0) + B @ S @ B.T
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=FLOAT)
        corners = spec.position + (signs * half) @ R.T
        self.affine_corner_weights[a] = a0[None, :] + (corners - spec.position) @ B.T
        for k in range(4):  # rigid initial velocity of each virtual node
            self.affine_velocity[a, k] = spec.linear_velocity + np.cross(spec.angular_velocity, rest[k] - spec.position)
        return rest

    # -------------------------------------------------------------------------------------------

    def state(self) -> SoftWorldState:
        """The initial state: nodes at rest with their body's initial velocity, dynamic boxes with theirs."""
        v = self.node_velocity.copy()
        for a in range(self.affine_count):
            v[self.affine_nodes[a]] = self.affine_velocity[a]
        return SoftWorldState(self.node_rest.copy(), v, self.collider_position.copy(), self.collider_orientation.copy())

    def body_positions(self, state: SoftWorldState, body: int) -> np.ndarray:
        """Positions (V_b, 3) [m] of soft body ``body``'s tet vertices (a view into ``state.x``)."""
        return state.x[self.body_node_start[body] : self.body_node_start[body + 1]]

    def affine_map(self, state: SoftWorldState, a: int) -> tuple[np.ndarray, np.ndarray]:
        """``(A, t)`` with ``x = A x_rest + t`` for dynamic box ``a`` (``A`` (3, 3), ``t`` (3,))."""
        X = state.x[self.affine_nodes[a]]
        Xr = self.affine_rest_nodes[a]
        A = (X[1:] - X[0]).T @ np.linalg.inv((Xr[1:] - Xr[0]).T)
        return A, X[0] - A @ Xr[0]

    def collider_pose(self, state: SoftWorldState, collider: int) -> tuple[np.ndarray, np.ndarray]:
        """World pose ``(position (3,), orientation wxyz (4,))`` of a collider.

        For a dynamic box the rotation is the polar factor of its affine map (which the stiff virtual
        tet keeps within ~1e-6 of a rotation); static and kinematic colliders return
        ``state.collider_position`` / ``state.collider_orientation``.
        """
        if self.collider_kind[collider] != ColliderKind.DYNAMIC:
            return state.collider_position[collider].copy(), state.collider_orientation[collider].copy()
        a = int(np.flatnonzero(self.affine_collider == collider)[0])
        A, t = self.affine_map(state, a)
        U, _, Vt = np.linalg.svd(A)
        R = U @ Vt
        if np.linalg.det(R) < 0.0:
            U[:, -1] *= -1.0
            R = U @ Vt
        R0 = rotation_matrix(self.collider_orientation[collider])
        return A @ self.collider_position[collider] + t, _matrix_to_quat(R @ R0)


def _matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (wxyz, w >= 0) of a rotation matrix (Shepperd's method)."""
    tr = np.trace(R)
    if tr > 0.0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.zeros(4)
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q /= np.linalg.norm(q)
    return q if q[0] >= 0.0 else -q


@dataclass
class SoftWorldState:
    """Time-varying data: node positions ``x`` (N, 3) [m] and velocities ``v`` (N, 3) [m/s], plus the
    current pose of every collider (kinematic ones are updated by the driver; dynamic ones are derived
    from their nodes, see :meth:`SoftWorld.collider_pose`)."""

    x: np.ndarray
    v: np.ndarray
    collider_position: np.ndarray = None
    collider_orientation: np.ndarray = None
    stats: object = None
    """Diagnostics of the last step (``SoftWorldStats``), set by ``iter_simulate_soft``."""
