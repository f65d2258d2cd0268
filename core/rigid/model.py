"""Model: the immutable structure-of-arrays description of a scene.

Built only by :class:`~.builder.ModelBuilder`. Course symbols (seed 000 §1.10.1):
``body_pos`` = x, ``body_quat`` = Q (wxyz), ``(body_vel, body_omega)`` = u = (v, w).
"""

from __future__ import annotations

import numpy as np

from .contacts import Contacts
from .control import Control
from .hull import HullArrays, empty_hull_arrays
from .mesh import MeshArrays, empty_mesh_arrays
from .state import State


class Model:
    """Static (non-time-varying) scene description; read-only during a simulation."""

    def __init__(self):
        self._declare_bodies()
        self._declare_shapes()
        self._declare_surfaces()
        self._declare_world()
        self._declare_joints()

    def _declare_bodies(self) -> None:
        """Bodies: mass, inertia, damping and where their shapes start."""
        self.body_count: int = 0
        """Number of bodies (dynamic and kinematic)."""
        self.body_kind: np.ndarray = np.zeros(0, np.int32)
        """:class:`BodyKind` per body, shape (body_count,), int32."""
        self.body_mass: np.ndarray = np.zeros(0)
        """Mass m [kg], shape (body_count,); 0 for kinematic bodies."""
        self.body_inv_mass: np.ndarray = np.zeros(0)
        """1/m [1/kg], shape (body_count,); 0 for kinematic bodies."""
        self.body_inertia_local: np.ndarray = np.zeros((0, 3, 3))
        """Body-frame inertia about the centre of mass [kg·m²], shape (body_count, 3, 3)."""
        self.body_inv_inertia_local: np.ndarray = np.zeros((0, 3, 3))
        """Inverse body-frame inertia [1/(kg·m²)], shape (body_count, 3, 3); 0 for kinematic bodies."""
        self.body_linear_damping: np.ndarray = np.zeros(0)
        """Linear damping in [0, 1] [dimensionless], shape (body_count,): each step scales a dynamic body's free
        velocity by ``(1 - d) ** dt`` (Bullet's ``applyDamping``)."""
        self.body_angular_damping: np.ndarray = np.zeros(0)
        """Angular damping in [0, 1] [dimensionless], shape (body_count,): scales w by ``(1 - d) ** dt``."""
        self.body_collision_mask: np.ndarray = np.ones(0, np.int32)
        """Blender's Collision Collections per body, a 20-bit mask (bit k: collection k + 1), shape (body_count,),
        int32: two bodies collide only when their masks share a bit."""
        self.has_collision_filter: bool = False
        """True when some pair of bodies shares no collision collection (the broad phase then filters its pairs)."""
        self.body_shape_start: np.ndarray = np.zeros(1, np.int32)
        """CSR offsets into the shape arrays, shape (body_count + 1,), int32."""
        self.body_label: list[str] = []
        """Name of the source of each body (a Blender object name), for reports."""

    def _declare_shapes(self) -> None:
        """Collision shapes: type, size, placement, hulls, meshes, plain friction and restitution."""
        self.shape_count: int = 0
        """Number of collision shapes."""
        self.shape_body: np.ndarray = np.zeros(0, np.int32)
        """Owning body of each shape, shape (shape_count,), int32."""
        self.shape_type: np.ndarray = np.zeros(0, np.int32)
        """:class:`ShapeType` per shape, shape (shape_count,), int32."""
        self.shape_params: np.ndarray = np.zeros((0, 3))
        """Size parameters per shape [m], shape (shape_count, 3); meaning per :class:`ShapeType`."""
        self.shape_pos_local: np.ndarray = np.zeros((0, 3))
        """Shape origin in its body frame [m], shape (shape_count, 3)."""
        self.shape_quat_local: np.ndarray = np.zeros((0, 4))
        """Shape orientation in its body frame (wxyz), shape (shape_count, 4)."""
        self.shape_hull: np.ndarray = np.zeros(0, np.int32)
        """Index into :attr:`hulls` of each CONVEX shape, -1 for every other shape, shape (shape_count,), int32."""
        self.hulls: HullArrays = empty_hull_arrays()
        """Every convex hull of the model (:class:`~.hull.HullArrays`, shape-frame coordinates)."""
        self.shape_mesh: np.ndarray = np.zeros(0, np.int32)
        """Index into :attr:`meshes` of each MESH shape, -1 for every other shape, shape (shape_count,), int32."""
        self.meshes: MeshArrays = empty_mesh_arrays()
        """Every triangle mesh of the model (:class:`~.mesh.MeshArrays`: vertices, triangles, BVH, and the signed
        distance field and surface samples of the active ones; shape-frame coordinates)."""
        self.shape_mu: np.ndarray = np.zeros(0)
        """Friction coefficient mu of each surface [dimensionless], shape (shape_count,)."""
        self.shape_restitution: np.ndarray = np.zeros(0)
        """Restitution coefficient of each surface [dimensionless], shape (shape_count,)."""

    def _declare_surfaces(self) -> None:
        """Surface friction beyond plain Coulomb (anisotropic, tensor, texture, torsion)."""
        self.shape_friction_model: np.ndarray = np.zeros(0, np.int32)
        """:class:`SurfaceFrictionModel` per shape (COULOMB unless set), shape (shape_count,), int32."""
        self.shape_mu_t: np.ndarray = np.zeros(0)
        """Friction along the structure direction (ANISOTROPIC, MATCHSTICK), shape (shape_count,)."""
        self.shape_mu_b: np.ndarray = np.zeros(0)
        """Friction across the structure direction (ANISOTROPIC, MATCHSTICK), shape (shape_count,)."""
        self.shape_kappa: np.ndarray = np.zeros(0)
        """Friction-tensor scale kappa (TENSOR), shape (shape_count,)."""
        self.shape_tensor: np.ndarray = np.zeros((0, 2, 2))
        """Friction tensor Q in the structure frame (TENSOR), shape (shape_count, 2, 2)."""
        self.shape_contensou: np.ndarray = np.zeros(0)
        """Torsional (Coulomb–Contensou) friction coefficient [m] per shape, shape (shape_count,)."""
        self.has_spin_friction: bool = False
        """True when any shape has a torsional friction coefficient."""
        self.shape_structure_source: np.ndarray = np.zeros(0, np.int32)
        """:class:`StructureSource` per shape, shape (shape_count,), int32."""
        self.shape_structure_axis: np.ndarray = np.zeros((0, 3))
        """Structure direction in the shape frame for the AXIS source, shape (shape_count, 3)."""
        self.shape_surface: list = []
        """The :class:`SurfaceFriction` given for each shape (None: plain Coulomb with ``shape_mu``)."""
        self.surface_pool = None
        """``core.friction.lookup.SurfaceArrays`` of the shapes' friction inputs, built once by ``pack_surfaces``
        and passed as one argument to the friction kernels (None when all shapes are plain Coulomb)."""
        self.plowing_law: int = 0
        """Texture plowing law: 0 = ``(2/pi) theta`` (course eq. 334–336), 1 = ``(2/pi) tan theta`` (eq. 333)."""
        self.has_texture_friction: bool = False
        """True when any shape uses TEXTURE friction."""
        self.has_friction_generators: bool = False
        """True when any shape uses a model other than isotropic Coulomb."""

    def _declare_world(self) -> None:
        """Scene-wide settings: combine modes, gravity, contact margin and capacity, initial state."""
        self.friction_combine: int = 1
        """:class:`CombineMode` for the pair friction (default geometric mean)."""
        self.restitution_combine: int = 4
        """:class:`CombineMode` for the pair restitution (default maximum)."""
        self.gravity: np.ndarray = np.zeros(3)
        """Gravitational acceleration [m/s²], shape (3,)."""
        self.contact_margin: float = 0.01
        """Contacts are generated up to this separation [m]."""
        self.contact_max: int = 64
        """Capacity of :class:`Contacts` buffers."""

        self.initial_state: State | None = None
        """Poses and velocities at time 0 (copied by :meth:`state`)."""

    def _declare_joints(self) -> None:
        """Joints (:mod:`.joints`): bodies, frames in each body, the per-axis table, springs, motors, breaking."""
        self.joint_count: int = 0
        """Number of joints."""
        self.joint_body: np.ndarray = np.zeros((0, 2), np.int64)
        """Body0 (Blender's object1) and body1 per joint, shape (joint_count, 2), int64; -1 is the world."""
        self.joint_frame_pos: np.ndarray = np.zeros((0, 2, 3))
        """The joint frame's origin in each side's body frame [m] (world frame for the world), (joint_count, 2, 3)."""
        self.joint_frame_quat: np.ndarray = np.zeros((0, 2, 4))
        """The joint frame's orientation in each side's body frame (wxyz), shape (joint_count, 2, 4)."""
        self.joint_axis_flags: np.ndarray = np.zeros((0, 6), np.int32)
        """``AXIS_*`` flags of :mod:`.joints` per axis (lin x, y, z, ang x, y, z), shape (joint_count, 6), int32."""
        self.joint_lower: np.ndarray = np.zeros((0, 6))
        """Lower limit or locked value per axis [m | rad] in Blender's sense, shape (joint_count, 6)."""
        self.joint_upper: np.ndarray = np.zeros((0, 6))
        """Upper limit per axis [m | rad], shape (joint_count, 6)."""
        self.joint_sign: np.ndarray = np.ones((0, 6))
        """Blender's coordinate = sign × the core's (body1 relative to body0), shape (joint_count, 6)."""
        self.joint_spring_stiffness: np.ndarray = np.zeros((0, 6))
        """Spring stiffness per axis [N/m | N·m/rad], shape (joint_count, 6)."""
        self.joint_spring_damping: np.ndarray = np.zeros((0, 6))
        """Spring damping per axis [N·s/m | N·m·s/rad], shape (joint_count, 6)."""
        self.joint_spring_type: np.ndarray = np.zeros(0, np.int32)
        """``SPRING1`` or ``SPRING2`` of :mod:`.joints` per joint, shape (joint_count,), int32."""
        self.joint_motor_target: np.ndarray = np.zeros((0, 6))
        """Motor target velocity in the core's coordinate [m/s | rad/s], shape (joint_count, 6)."""
        self.joint_motor_max_impulse: np.ndarray = np.zeros((0, 6))
        """Largest motor impulse per step [N·s | N·m·s], shape (joint_count, 6)."""
        self.joint_break_threshold: np.ndarray = np.zeros(0)
        """A row impulse of at least this breaks the joint [N·s] (inf: unbreakable), shape (joint_count,)."""
        self.joint_passes: np.ndarray = np.zeros(0, np.int32)
        """Blender's solver iterations override per joint (0: the scene's), shape (joint_count,), int32."""
        self.joint_disable_collisions: np.ndarray = np.zeros(0, np.bool_)
        """Whether the joined bodies skip collisions with each other, shape (joint_count,)."""
        self.joint_joined_pairs: np.ndarray = np.zeros(0, np.int64)
        """Body pairs that do not collide (a joint with Disable Collisions joins them), sorted keys
        ``min(b0, b1) * body_count + max(b0, b1)``, int64 (:func:`.joint_rows.drop_joined_pairs`)."""
        self.joint_label: list[str] = []
        """The constraint object's name per joint, for messages and reports."""

    # factories -----------------------------------------------------------------------------
    def state(self) -> State:
        """A new :class:`State` holding a copy of the initial poses and velocities."""
        s = State(self.body_count)
        s.copy_from(self.initial_state)
        return s

    def control(self) -> Control:
        """A new :class:`Control` whose kinematic targets are the initial poses."""
        c = Control(self.body_count)
        c.body_target_pos[:] = self.initial_state.body_pos
        c.body_target_quat[:] = self.initial_state.body_quat
        return c

    def contacts(self) -> Contacts:
        """New contact buffers with capacity :attr:`contact_max`."""
        return Contacts(self.contact_max)

    @property
    def dynamic_mask(self) -> np.ndarray:
        """Boolean mask of dynamic bodies, shape (body_count,)."""
        from ..enums import BodyKind

        return self.body_kind == int(BodyKind.DYNAMIC)
