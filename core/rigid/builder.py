"""ModelBuilder: the one place that validates input and derives static data."""

from __future__ import annotations

import numpy as np

from .. import config
from ..enums import BodyKind, CombineMode, ShapeType
from ..errors import ModelError
from ..friction.lookup import pack_surfaces
from ..friction.surface import StructureSource, SurfaceFriction, SurfaceFrictionModel
from ..math.quat import rotation_matrix
from .hull import convex_hull, pack_hulls
from .joints import JointSpec, pack_joints, validate_joint
from .mass_properties import primitive_mass_properties, shape_inertia, shape_volume
from .mesh import mesh_bounding_radius, pack_meshes, validated_mesh
from .model import Model
from .state import State

_CENTRED_SHAPES = (ShapeType.SPHERE, ShapeType.BOX, ShapeType.CAPSULE, ShapeType.CYLINDER, ShapeType.PLANE)
"""Shape types whose centroid is their origin (the others' inertia needs the centroid's offset)."""


def _as_quat(q) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64).reshape(4)
    n = float(np.linalg.norm(q))
    if not np.isfinite(n) or n < 1e-12:
        raise ModelError(f"invalid quaternion {q}")
    return q / n


def _validated_surface(label: str, surface: SurfaceFriction):
    """Check one shape's friction inputs; returns ``(model, tensor (2, 2), source, axis (3,))``.

    Raises:
        ModelError: negative or non-finite coefficients, a non-SPD tensor (course eq. 326), a zero axis, or a
            structure source / texture model without the mesh, UV map or normal map it needs.
    """
    model = SurfaceFrictionModel(surface.model)
    for name in ("mu", "mu_t", "mu_b", "kappa", "contensou"):
        value = float(getattr(surface, name))
        if not (np.isfinite(value) and value >= 0.0):
            raise ModelError(f"{label}: friction {name} must be >= 0, got {value}")
    tensor = np.asarray(surface.tensor, np.float64).reshape(2, 2)
    if model == SurfaceFrictionModel.TENSOR:
        if surface.kappa <= 0.0 or not np.all(np.linalg.eigvalsh(0.5 * (tensor + tensor.T)) > 0.0):
            raise ModelError(
                f"{label}: a friction tensor needs kappa > 0 and a symmetric positive "
                f"definite Q (course eq. 326: only then is the force dissipative)"
            )
    source = StructureSource(surface.structure_source)
    axis = np.asarray(surface.structure_axis, np.float64).reshape(3)
    if source == StructureSource.AXIS and not np.linalg.norm(axis) > 0.0:
        raise ModelError(f"{label}: the structure axis is zero")
    needs_mesh = source in (StructureSource.ATTRIBUTE, StructureSource.IMAGE, StructureSource.UV_TANGENT)
    if needs_mesh and surface.mesh is None:
        raise ModelError(f"{label}: structure source {source.name} needs the surface mesh")
    if model == SurfaceFrictionModel.TEXTURE and (
        surface.normal_map is None or surface.mesh is None or surface.mesh.corner_uv is None
    ):
        raise ModelError(f"{label}: texture friction needs a normal map, a mesh and a UV map")
    return model, tensor, source, axis


class ModelBuilder:
    """Collects bodies and shapes as Python lists; :meth:`finalize` validates and returns a :class:`Model`."""

    def __init__(self, *, gravity=(0.0, 0.0, -9.81), plowing_law: int = 0):
        """Args:
        gravity: [m/s²]. plowing_law: texture friction law, 0 = ``(2/pi) theta`` (default), 1 = ``tan``.
        """
        self.gravity = np.asarray(gravity, dtype=np.float64).reshape(3)
        self.plowing_law = int(plowing_law)
        self._bodies: list[dict] = []
        self._shapes: list[dict] = []
        self._joints: list[JointSpec] = []

    # bodies ---------------------------------------------------------------------------------
    def add_body(
        self,
        *,
        pos=(0.0, 0.0, 0.0),
        quat=(1.0, 0.0, 0.0, 0.0),
        vel=(0.0, 0.0, 0.0),
        omega=(0.0, 0.0, 0.0),
        mass: float = 1.0,
        inertia=None,
        kind: BodyKind = BodyKind.DYNAMIC,
        label: str = "",
        linear_damping: float = 0.0,
        angular_damping: float = 0.0,
        collision_collections: int = 1,
    ) -> int:
        """Add a body whose frame origin is its centre of mass; returns its index.

        Args:
            pos: centre of mass [m]. quat: orientation (w, x, y, z).
            vel: linear velocity [m/s]. omega: world angular velocity [rad/s].
            mass: [kg], ignored for kinematic bodies.
            inertia: body-frame inertia (3, 3) [kg·m²]; ``None`` derives it from the
                body's shapes as uniform solids of total ``mass``.
            kind: DYNAMIC or KINEMATIC.
            label: name used in error messages and reports.
            linear_damping, angular_damping: fraction of the linear / angular velocity lost per second, in
                [0, 1] [dimensionless]; each step scales v by ``(1 - linear_damping) ** dt`` and w likewise
                (Bullet's ``btRigidBody::applyDamping``, so Blender's rigid body damping means the same).
            collision_collections: 20-bit mask of Blender's Collision Collections (bit k: collection k + 1); two
                bodies collide only when their masks share a bit.
        """
        index = len(self._bodies)
        self._bodies.append(
            dict(
                pos=np.asarray(pos, np.float64).reshape(3),
                quat=np.asarray(quat, np.float64).reshape(4),
                vel=np.asarray(vel, np.float64).reshape(3),
                omega=np.asarray(omega, np.float64).reshape(3),
                mass=float(mass),
                inertia=None if inertia is None else np.asarray(inertia, np.float64).reshape(3, 3),
                kind=int(kind),
                label=label or f"body{index}",
                linear_damping=float(linear_damping),
                angular_damping=float(angular_damping),
                collision_collections=int(collision_collections),
            )
        )
        return index

    # shapes ---------------------------------------------------------------------------------
    def _add_shape(self, body, shape_type, params, pos, quat, mu, restitution, hull=None, mesh=None) -> int:
        self._check_body(body)
        self._shapes.append(
            dict(
                body=int(body),
                type=int(shape_type),
                params=np.asarray(params, np.float64).reshape(3),
                pos=np.asarray(pos, np.float64).reshape(3),
                quat=np.asarray(quat, np.float64).reshape(4),
                mu=float(mu),
                restitution=float(restitution),
                hull=hull,
                mesh=mesh,
            )
        )
        return len(self._shapes) - 1

    def _check_body(self, body) -> None:
        """Raise ModelError unless ``body`` is the index of an added body."""
        if not 0 <= body < len(self._bodies):
            raise ModelError(f"shape refers to unknown body {body}")

    def add_shape_sphere(self, body, radius, *, pos=(0, 0, 0), quat=(1, 0, 0, 0), mu=0.5, restitution=0.0) -> int:
        """Sphere of ``radius`` [m] centred at ``pos`` in the body frame."""
        return self._add_shape(body, ShapeType.SPHERE, (radius, 0.0, 0.0), pos, quat, mu, restitution)

    def add_shape_box(self, body, half_extents, *, pos=(0, 0, 0), quat=(1, 0, 0, 0), mu=0.5, restitution=0.0) -> int:
        """Box with ``half_extents`` (3,) [m] along the shape frame axes."""
        return self._add_shape(body, ShapeType.BOX, half_extents, pos, quat, mu, restitution)

    def add_shape_capsule(
        self, body, radius, half_height, *, pos=(0, 0, 0), quat=(1, 0, 0, 0), mu=0.5, restitution=0.0
    ) -> int:
        """Capsule: segment of length ``2 half_height`` [m] along local z, swept by ``radius`` [m]."""
        return self._add_shape(body, ShapeType.CAPSULE, (radius, half_height, 0.0), pos, quat, mu, restitution)

    def add_shape_cylinder(
        self, body, radius, half_height, *, pos=(0, 0, 0), quat=(1, 0, 0, 0), mu=0.5, restitution=0.0
    ) -> int:
        """Solid cylinder of ``radius`` [m] along local z from ``-half_height`` to ``+half_height`` [m]."""
        return self._add_shape(body, ShapeType.CYLINDER, (radius, half_height, 0.0), pos, quat, mu, restitution)

    def add_shape_cone(
        self, body, radius, half_height, *, pos=(0, 0, 0), quat=(1, 0, 0, 0), mu=0.5, restitution=0.0
    ) -> int:
        """Solid cone: base disc of ``radius`` [m] at local z = ``-half_height``, apex at ``+half_height`` [m].

        The shape origin is the middle of the axis (Blender's Cone shape); the centroid lies at
        ``z = -half_height / 2``, which the derived inertia accounts for.
        """
        return self._add_shape(body, ShapeType.CONE, (radius, half_height, 0.0), pos, quat, mu, restitution)

    def add_shape_convex(self, body, vertices, *, pos=(0, 0, 0), quat=(1, 0, 0, 0), mu=0.5, restitution=0.0) -> int:
        """Convex hull of ``vertices`` (N, 3) [m], given in the shape frame; computed now.

        Raises:
            ModelError: naming the body, when the points are not finite or span no volume (see
                :func:`~.hull.convex_hull`).
        """
        self._check_body(body)
        hull = convex_hull(vertices, label=self._bodies[body]["label"])
        radius = float(np.sqrt(np.max(np.sum(hull.vertices * hull.vertices, axis=1))))
        return self._add_shape(body, ShapeType.CONVEX, (radius, 0.0, 0.0), pos, quat, mu, restitution, hull)

    def add_shape_mesh(
        self, body, vertices, triangles, *, pos=(0, 0, 0), quat=(1, 0, 0, 0), mu=0.5, restitution=0.0
    ) -> int:
        """Triangle mesh: ``vertices`` (V, 3) [m] in the shape frame, ``triangles`` (T, 3) corner indices.

        On a static or kinematic body (passive) any triangle soup collides, through a BVH over its triangles
        (open surfaces such as bowls and terrain collide on both sides). On a dynamic body (active) the mesh must
        be closed, wound with its faces pointing out and enclose a positive volume; it collides through a signed
        distance field built at :meth:`finalize`, and its inertia (unless given to :meth:`add_body`) comes from
        the enclosed solid like a hull's.

        Raises:
            ModelError: naming the body, for bad arrays, non-finite coordinates, out-of-range indices, no
                triangle with area, or (dynamic body) an open or inward-wound mesh.
        """
        self._check_body(body)
        b = self._bodies[body]
        mesh = validated_mesh(vertices, triangles, solid=b["kind"] == BodyKind.DYNAMIC, label=b["label"])
        radius = mesh_bounding_radius(mesh)
        return self._add_shape(body, ShapeType.MESH, (radius, 0.0, 0.0), pos, quat, mu, restitution, mesh=mesh)

    def add_shape_plane(self, body, *, pos=(0, 0, 0), quat=(1, 0, 0, 0), mu=0.5, restitution=0.0) -> int:
        """Infinite ground plane through ``pos``; solid below, outward normal = local +z. Kinematic bodies only."""
        return self._add_shape(body, ShapeType.PLANE, (0.0, 0.0, 0.0), pos, quat, mu, restitution)

    def set_shape_friction(self, shape: int, surface: SurfaceFriction) -> None:
        """Give shape ``shape`` a friction model other than plain Coulomb (course ch. 6).

        ``surface.mu`` replaces the ``mu`` the shape was added with. Validated in :meth:`finalize`.
        """
        if not 0 <= shape < len(self._shapes):
            raise ModelError(f"friction refers to unknown shape {shape}")
        self._shapes[shape]["surface"] = surface
        self._shapes[shape]["mu"] = float(surface.mu)

    # joints ---------------------------------------------------------------------------------
    def add_joint(self, spec: JointSpec) -> int:
        """Add a joint (:mod:`.joints`) between bodies already added; returns its index.

        Raises:
            ModelError: naming ``spec.name`` and the field (see :func:`.joints.validate_joint`).
        """
        validate_joint(spec, len(self._bodies))
        self._joints.append(spec)
        return len(self._joints) - 1

    # finalize -------------------------------------------------------------------------------
    def finalize(
        self,
        *,
        contact_margin: float = config.DEFAULT_CONTACT_MARGIN,
        contact_max: int | None = None,
        friction_combine: CombineMode = CombineMode.GEOMETRIC,
        restitution_combine: CombineMode = CombineMode.MAXIMUM,
    ) -> Model:
        """Validate everything and return the immutable :class:`Model`.

        Raises:
            ModelError: non-positive mass or size, a plane on a dynamic body, a dynamic
                body without shapes, non-finite input, damping outside [0, 1].
        """
        nb, ns = len(self._bodies), len(self._shapes)
        if nb == 0:
            raise ModelError("the scene has no bodies")
        shapes_of = [[] for _ in range(nb)]
        for s_index, s in enumerate(self._shapes):
            shapes_of[s["body"]].append(s_index)

        m = Model()
        m.body_count, m.shape_count = nb, ns
        m.gravity = self.gravity.copy()
        m.contact_margin = float(contact_margin)
        m.friction_combine = int(friction_combine)
        m.restitution_combine = int(restitution_combine)
        m.contact_max = int(contact_max) if contact_max else max(64, config.DEFAULT_CONTACTS_PER_BODY * nb)

        m.body_kind = np.array([b["kind"] for b in self._bodies], np.int32)
        m.body_mass = np.zeros(nb)
        m.body_inv_mass = np.zeros(nb)
        m.body_inertia_local = np.zeros((nb, 3, 3))
        m.body_inv_inertia_local = np.zeros((nb, 3, 3))
        m.body_label = [b["label"] for b in self._bodies]

        order = self._finalize_shapes(m, shapes_of, contact_margin)
        self._finalize_friction(m, order)
        self._validate_shapes()
        m.initial_state = self._finalize_bodies(m, shapes_of)
        if self._joints:
            pack_joints(m, self._joints, m.initial_state.body_pos, m.initial_state.body_quat)
        return m

    def _finalize_shapes(self, m: Model, shapes_of: list[list[int]], margin: float) -> list[int]:
        """Shape arrays in body order (CSR ``body_shape_start``); returns model shape index → builder shape index.

        Hulls and meshes are packed here (meshes with their BVH, and the fields of active ones, whose band covers
        the contact ``margin`` [m])."""
        nb, ns = m.body_count, m.shape_count
        order = [s for b in range(nb) for s in shapes_of[b]]
        m.body_shape_start = np.zeros(nb + 1, np.int32)
        m.body_shape_start[1:] = np.cumsum([len(shapes_of[b]) for b in range(nb)])
        m.shape_body = np.array([self._shapes[s]["body"] for s in order], np.int32).reshape(ns)
        m.shape_type = np.array([self._shapes[s]["type"] for s in order], np.int32).reshape(ns)
        m.shape_params = np.array([self._shapes[s]["params"] for s in order], np.float64).reshape(ns, 3)
        m.shape_pos_local = np.array([self._shapes[s]["pos"] for s in order], np.float64).reshape(ns, 3)
        m.shape_quat_local = np.array([_as_quat(self._shapes[s]["quat"]) for s in order], np.float64).reshape(ns, 4)
        m.shape_mu = np.array([self._shapes[s]["mu"] for s in order], np.float64).reshape(ns)
        m.shape_restitution = np.array([self._shapes[s]["restitution"] for s in order], np.float64).reshape(ns)
        m.shape_hull = np.full(ns, -1, np.int32)
        hulls = []
        for i, s in enumerate(order):
            if self._shapes[s]["hull"] is not None:
                m.shape_hull[i] = len(hulls)
                hulls.append(self._shapes[s]["hull"])
        m.hulls = pack_hulls(hulls)
        m.shape_mesh = np.full(ns, -1, np.int32)
        meshes = []
        for i, s in enumerate(order):
            if self._shapes[s]["mesh"] is not None:
                m.shape_mesh[i] = len(meshes)
                meshes.append(self._shapes[s]["mesh"])
        m.meshes = pack_meshes(meshes, margin)
        return order

    def _validate_shapes(self) -> None:
        """Finite offsets, positive sizes, friction >= 0 and restitution in [0, 1] for every shape."""
        for s in self._shapes:
            label = self._bodies[s["body"]]["label"]
            if not np.all(np.isfinite(s["params"])) or not np.all(np.isfinite(s["pos"])):
                raise ModelError(f"{label}: non-finite shape size or offset")
            if s["type"] != ShapeType.PLANE:
                n_size = {ShapeType.BOX: 3, ShapeType.CYLINDER: 2, ShapeType.CONE: 2}.get(ShapeType(s["type"]), 1)
                if np.any(s["params"][:n_size] <= 0.0):
                    raise ModelError(f"{label}: shape size must be positive, got {s['params'][:n_size]}")
                if s["type"] == ShapeType.CAPSULE and s["params"][1] < 0.0:
                    raise ModelError(f"{label}: capsule half height must not be negative")
            if s["mu"] < 0.0 or not np.isfinite(s["mu"]):
                raise ModelError(f"{label}: friction must be >= 0, got {s['mu']}")
            if not 0.0 <= s["restitution"] <= 1.0:
                raise ModelError(f"{label}: restitution must lie in [0, 1], got {s['restitution']}")

    def _finalize_bodies(self, m: Model, shapes_of: list[list[int]]) -> State:
        """Validate the bodies, fill mass and inertia [kg, kg·m²] of the dynamic ones; returns the initial state."""
        state = State(m.body_count)
        m.body_linear_damping = np.array([b["linear_damping"] for b in self._bodies], np.float64)
        m.body_angular_damping = np.array([b["angular_damping"] for b in self._bodies], np.float64)
        m.body_collision_mask = np.array([b["collision_collections"] for b in self._bodies], np.int32)
        masks = m.body_collision_mask
        # one bit shared by every body: the broad phase need not look at the masks (every pair collides as before)
        m.has_collision_filter = masks.size > 0 and int(np.bitwise_and.reduce(masks)) == 0
        for i, b in enumerate(self._bodies):
            label = b["label"]
            for key in ("pos", "vel", "omega"):
                if not np.all(np.isfinite(b[key])):
                    raise ModelError(f"{label}: non-finite {key}")
            for key in ("linear_damping", "angular_damping"):
                if not 0.0 <= b[key] <= 1.0:
                    raise ModelError(f"{label}: {key.replace('_', ' ')} must lie in [0, 1], got {b[key]}")
            if not 0 <= b["collision_collections"] < 1 << 20:
                raise ModelError(
                    f"{label}: collision collections must be a 20-bit mask, got {b['collision_collections']}"
                )
            state.body_pos[i] = b["pos"]
            state.body_quat[i] = _as_quat(b["quat"])
            state.body_vel[i] = b["vel"]
            state.body_omega[i] = b["omega"]
            if b["kind"] == BodyKind.KINEMATIC:
                continue
            if b["kind"] != BodyKind.DYNAMIC:
                raise ModelError(f"{label}: unknown body kind {b['kind']}")
            if not shapes_of[i]:
                raise ModelError(f"{label}: a dynamic body needs at least one shape")
            if not (b["mass"] > 0.0 and np.isfinite(b["mass"])):
                raise ModelError(f"{label}: mass must be positive, got {b['mass']} kg")
            if any(self._shapes[s]["type"] == ShapeType.PLANE for s in shapes_of[i]):
                raise ModelError(f"{label}: an infinite plane can only be passive (kinematic)")
            inertia = b["inertia"] if b["inertia"] is not None else self._derived_inertia(shapes_of[i], b["mass"])
            if not np.all(np.linalg.eigvalsh(0.5 * (inertia + inertia.T)) > 0.0):
                raise ModelError(f"{label}: inertia must be positive definite")
            m.body_mass[i] = b["mass"]
            m.body_inv_mass[i] = 1.0 / b["mass"]
            m.body_inertia_local[i] = inertia
            m.body_inv_inertia_local[i] = np.linalg.inv(inertia)
        return state

    def _finalize_friction(self, m: Model, order: list[int]) -> None:
        """Per-shape friction-model arrays (``order`` maps model shape index → builder shape index)."""
        ns = len(order)
        m.shape_friction_model = np.full(ns, int(SurfaceFrictionModel.COULOMB), np.int32)
        m.shape_mu_t = np.zeros(ns)
        m.shape_mu_b = np.zeros(ns)
        m.shape_kappa = np.zeros(ns)
        m.shape_contensou = np.zeros(ns)
        m.shape_tensor = np.tile(np.eye(2), (ns, 1, 1))
        m.shape_structure_source = np.zeros(ns, np.int32)
        m.shape_structure_axis = np.zeros((ns, 3))
        m.shape_surface = []
        for i, s_index in enumerate(order):
            shape = self._shapes[s_index]
            surface = shape.get("surface")
            m.shape_surface.append(surface)
            label = self._bodies[shape["body"]]["label"]
            m.shape_mu_t[i] = m.shape_mu_b[i] = shape["mu"]
            if surface is None:
                continue
            model, tensor, source, axis = _validated_surface(label, surface)
            m.shape_friction_model[i] = int(model)
            m.shape_mu_t[i] = surface.mu_t
            m.shape_mu_b[i] = surface.mu_b
            m.shape_kappa[i] = surface.kappa
            m.shape_contensou[i] = surface.contensou
            m.shape_tensor[i] = tensor
            m.shape_structure_source[i] = int(source)
            m.shape_structure_axis[i] = axis
        m.has_friction_generators = bool(np.any(m.shape_friction_model != int(SurfaceFrictionModel.COULOMB)))
        m.has_spin_friction = bool(np.any(m.shape_contensou > 0.0))
        m.has_texture_friction = bool(np.any(m.shape_friction_model == int(SurfaceFrictionModel.TEXTURE)))
        m.plowing_law = int(self.plowing_law)
        if m.has_friction_generators:
            pool = pack_surfaces(m.shape_surface)
            # texture friction samples along the textured surface's U direction when it has no other field
            texture = (m.shape_friction_model == int(SurfaceFrictionModel.TEXTURE)) & (pool.surface_source == 0)
            pool.surface_source[texture] = int(StructureSource.UV_TANGENT)
            m.surface_pool = pool

    def _derived_inertia(self, shape_indices, mass) -> np.ndarray:
        """Uniform-density inertia [kg·m²] of the union of a body's shapes about the body origin."""
        shapes = [self._shapes[s] for s in shape_indices]
        volumes = np.array([shape_volume(s["type"], s["params"], s["hull"], s["mesh"]) for s in shapes])
        total = volumes.sum()
        inertia = np.zeros((3, 3))
        for shape, vol in zip(shapes, volumes, strict=True):
            m_s = mass * vol / total
            rot = rotation_matrix(_as_quat(shape["quat"]))
            d = shape["pos"]
            if shape["type"] in _CENTRED_SHAPES:
                i_local = rot @ shape_inertia(shape["type"], shape["params"], m_s) @ rot.T
            else:  # the centroid is off the shape origin: inertia about it, then shifted with it
                unit = primitive_mass_properties(shape["type"], shape["params"], shape["hull"], shape["mesh"])
                i_local = rot @ (unit.inertia * (m_s / unit.volume)) @ rot.T
                d = d + rot @ unit.centroid
            inertia += i_local + m_s * (float(d @ d) * np.eye(3) - np.outer(d, d))  # parallel-axis theorem
        return inertia
