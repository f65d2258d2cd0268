"""CollisionPipeline: shape poses → broad phase → narrow phase → sorted Contacts (orchestration only)."""

from __future__ import annotations

import numpy as np

from ...enums import FrictionSet
from ...friction.generate import add_texture_friction, compute_contact_structure, generate_friction_sets
from ...friction.models import combine_coefficient
from ...friction.texture import STANDARD_DIRECTIONS
from ...jit import njit_kernel
from ...math.quat import quat_mul, quat_rotate, quat_to_matrix
from ..contacts import Contacts
from ..joint_rows import drop_joined_pairs
from ..model import Model
from .broad_phase import keep_shared_collections, sweep_and_prune
from .narrow_phase import FEATURE_MAX, compute_shape_aabbs, generate_contacts


@njit_kernel
def compute_shape_world_poses(
    shape_body,
    shape_pos_local,
    shape_quat_local,
    body_pos,
    body_quat,
    # outputs
    shape_world_pos,
    shape_world_rot,
):
    """World position (ns, 3) [m] and rotation matrix (ns, 3, 3) of every shape."""
    for s in range(shape_body.shape[0]):
        b = shape_body[s]
        shape_world_pos[s] = body_pos[b] + quat_rotate(body_quat[b], shape_pos_local[s])
        quat_to_matrix(quat_mul(body_quat[b], shape_quat_local[s]), shape_world_rot[s])


@njit_kernel
def compute_shape_sweeps(shape_body, shape_reach, body_vel, body_omega, gravity, dt, sweep, aabb_lower, aabb_upper):
    """How far each shape can move in the coming step [m], and its AABB grown by that much.

    ``sweep = h (|v| + |g| h + |w| reach)`` with the body's velocity (v, w) at the start of the step and ``reach``
    (ns,) [m] the largest distance from the body origin to a point of the shape: a bound on any point's travel.
    Shapes: sweep (ns,); aabb_lower/aabb_upper (ns, 3) [m], grown in place.
    """
    g = np.sqrt(gravity[0] ** 2 + gravity[1] ** 2 + gravity[2] ** 2)
    for s in range(shape_body.shape[0]):
        b = shape_body[s]
        v = np.sqrt(body_vel[b, 0] ** 2 + body_vel[b, 1] ** 2 + body_vel[b, 2] ** 2)
        w = np.sqrt(body_omega[b, 0] ** 2 + body_omega[b, 1] ** 2 + body_omega[b, 2] ** 2)
        sweep[s] = dt * (v + g * dt + w * shape_reach[s])
        for k in range(3):
            aabb_lower[s, k] -= sweep[s]
            aabb_upper[s, k] += sweep[s]


@njit_kernel
def finish_contacts(
    pairs,
    shape_body,
    shape_mu,
    shape_restitution,
    shape_count,
    friction_combine,
    restitution_combine,
    raw_pair,
    raw_feature,
    count,
    # outputs
    contact_shape0,
    contact_shape1,
    contact_body0,
    contact_body1,
    contact_mu,
    contact_restitution,
    contact_key,
):
    """Fill per-contact shape/body ids, combined coefficients and the int64 match key."""
    for c in range(count):
        p = raw_pair[c]
        s0, s1 = pairs[p, 0], pairs[p, 1]
        contact_shape0[c] = s0
        contact_shape1[c] = s1
        contact_body0[c] = shape_body[s0]
        contact_body1[c] = shape_body[s1]
        contact_mu[c] = combine_coefficient(shape_mu[s0], shape_mu[s1], friction_combine)
        contact_restitution[c] = combine_coefficient(shape_restitution[s0], shape_restitution[s1], restitution_combine)
        contact_key[c] = (np.int64(s0) * shape_count + s1) * FEATURE_MAX + raw_feature[c]


@njit_kernel
def combine_spin_coefficients(shape_contensou, contact_shape0, contact_shape1, contact_count, mode, contact_mu_spin):
    """Pair torsion coefficient: the combine rule when both surfaces have one, else the one that does."""
    for k in range(contact_count):
        a = shape_contensou[contact_shape0[k]]
        b = shape_contensou[contact_shape1[k]]
        contact_mu_spin[k] = combine_coefficient(a, b, mode) if a > 0.0 and b > 0.0 else a + b


class CollisionPipeline:
    """Finds the contacts of a state; scratch buffers are allocated once."""

    def __init__(self, model: Model, *, pair_max: int | None = None):
        self.model = model
        ns = model.shape_count
        self.pair_max = int(pair_max) if pair_max else max(64, 8 * ns)
        self.shape_world_pos = np.zeros((ns, 3))
        self.shape_world_rot = np.zeros((ns, 3, 3))
        self.aabb_lower = np.zeros((ns, 3))
        self.aabb_upper = np.zeros((ns, 3))
        self.shape_sweep = np.zeros(ns)
        self.shape_reach = self._shape_reach()
        self.pairs = np.zeros((self.pair_max, 2), np.int32)
        self.pair_counts = np.zeros(2, np.int64)
        n = model.contact_max
        self._raw_pair = np.zeros(n, np.int32)
        self._raw_point = np.zeros((n, 3))
        self._raw_normal = np.zeros((n, 3))
        self._raw_gap = np.zeros(n)
        self._raw_feature = np.zeros(n, np.int32)
        self._contact_counts = np.zeros(2, np.int64)
        self._structure0 = np.zeros((n, 3))
        self._structure1 = np.zeros((n, 3))
        # texture-friction cache (keys, contact points in both shape frames, plowing coefficients)
        self._tex_key = np.zeros(n, np.int64)
        self._tex_local = np.zeros((n, 2, 3))
        self._tex_plowing = np.zeros((n, 4))
        self._tex_count = 0
        self._tex_local_next = np.zeros((n, 2, 3))
        self._tex_plowing_next = np.zeros((n, 4))
        res = 1
        if model.surface_pool is not None and len(model.surface_pool.surface_patch_resolution):
            res = int(model.surface_pool.surface_patch_resolution.max())
        self._tex_scratch = np.zeros((2, res * res, STANDARD_DIRECTIONS.shape[0] + 1))
        self._tex_work = np.zeros((4 + STANDARD_DIRECTIONS.shape[0], 3))
        self.texture_samples = 0
        """Contacts whose texture friction was sampled (not cached) in the last call."""
        self.pair_overflow = 0
        """Candidate pairs dropped for lack of capacity in the last call."""

    def _shape_reach(self) -> np.ndarray:
        """Largest distance [m] from each shape's body origin to a point of the shape (0 for planes), (ns,).

        Bounded by the shape's AABB at its identity pose: the farthest corner from the shape origin, plus the shape's
        offset in its body.
        """
        m = self.model
        ns = m.shape_count
        lower, upper = np.zeros((ns, 3)), np.zeros((ns, 3))
        compute_shape_aabbs(
            m.shape_type, m.shape_params, np.zeros((ns, 3)), np.broadcast_to(np.eye(3), (ns, 3, 3)).copy(),
            m.hulls, m.shape_hull, m.meshes, m.shape_mesh, 0.0, lower, upper,
        )  # fmt: skip
        corner = np.maximum(np.abs(lower), np.abs(upper))
        reach = np.sqrt((corner * corner).sum(axis=1)) + np.sqrt((m.shape_pos_local**2).sum(axis=1))
        return np.where(np.isfinite(reach), reach, 0.0)

    def collide(self, state, contacts: Contacts, dt: float = 0.0) -> None:
        """Replace ``contacts`` with the contacts of ``state``, sorted by (shape0, shape1, feature).

        ``dt`` [s]: the coming step; pairs that can close more than the contact margin in it get speculative
        contacts up to that distance (0: the contact margin only).
        """
        m = self.model
        self._place_shapes(state)
        if dt > 0.0:
            compute_shape_sweeps(
                m.shape_body, self.shape_reach, state.body_vel, state.body_omega, m.gravity, dt,
                self.shape_sweep, self.aabb_lower, self.aabb_upper,
            )  # fmt: skip
        else:
            self.shape_sweep[:] = 0.0
        pair_count = self._find_pairs()
        count = self._generate_contacts(pair_count, contacts)
        self._sort_contacts(contacts, count)
        # Isotropic Coulomb unless a friction generator says otherwise (course ch. 6).
        contacts.contact_friction_set[:count] = int(FrictionSet.CONE)
        contacts.contact_mu4[:count] = contacts.contact_mu[:count, None]
        contacts.contact_tangent_fixed[:count] = False
        if m.has_friction_generators and count:
            self._generate_friction(contacts, count)
        if m.has_spin_friction and count:
            combine_spin_coefficients(
                m.shape_contensou, contacts.contact_shape0, contacts.contact_shape1, count, m.friction_combine,
                contacts.contact_mu_spin,
            )  # fmt: skip

    def _place_shapes(self, state) -> None:
        """World poses and AABBs (inflated by the contact margin) of every shape."""
        m = self.model
        compute_shape_world_poses(
            m.shape_body,
            m.shape_pos_local,
            m.shape_quat_local,
            state.body_pos,
            state.body_quat,
            self.shape_world_pos,
            self.shape_world_rot,
        )
        compute_shape_aabbs(
            m.shape_type,
            m.shape_params,
            self.shape_world_pos,
            self.shape_world_rot,
            m.hulls,
            m.shape_hull,
            m.meshes,
            m.shape_mesh,
            m.contact_margin,
            self.aabb_lower,
            self.aabb_upper,
        )

    def _find_pairs(self) -> int:
        """Broad phase into ``self.pairs``; returns the number of candidate pairs."""
        m = self.model
        sweep_and_prune(self.aabb_lower, self.aabb_upper, m.shape_body, m.body_kind, self.pairs, self.pair_counts)
        if self.pair_counts[1] > 0:  # grow once and redo: never drop candidate pairs silently
            self.pair_max = int(self.pair_counts[0] + self.pair_counts[1]) * 2
            self.pairs = np.zeros((self.pair_max, 2), np.int32)
            sweep_and_prune(self.aabb_lower, self.aabb_upper, m.shape_body, m.body_kind, self.pairs, self.pair_counts)
        if m.joint_joined_pairs.shape[0]:  # joints with Disable Collisions: their bodies never touch
            self.pair_counts[0] = drop_joined_pairs(
                self.pairs, self.pair_counts[0], m.shape_body, m.body_count, m.joint_joined_pairs
            )
        self.pair_overflow = int(self.pair_counts[1])
        if m.has_collision_filter:
            return keep_shared_collections(self.pairs, int(self.pair_counts[0]), m.shape_body, m.body_collision_mask)
        return int(self.pair_counts[0])

    def _generate_contacts(self, pair_count: int, contacts: Contacts) -> int:
        """Narrow phase into the raw buffers, then ids, combined coefficients and keys into ``contacts``.

        Returns the contact count (unsorted yet); sets ``contacts.contact_overflow``.
        """
        m = self.model
        generate_contacts(
            m.shape_type,
            m.shape_params,
            self.shape_world_pos,
            self.shape_world_rot,
            m.hulls,
            m.shape_hull,
            m.meshes,
            m.shape_mesh,
            self.pairs,
            pair_count,
            m.contact_margin,
            self.shape_sweep,
            self._raw_pair,
            self._raw_point,
            self._raw_normal,
            self._raw_gap,
            self._raw_feature,
            self._contact_counts,
        )
        count = int(self._contact_counts[0])
        contacts.contact_overflow = int(self._contact_counts[1])
        finish_contacts(
            self.pairs,
            m.shape_body,
            m.shape_mu,
            m.shape_restitution,
            m.shape_count,
            m.friction_combine,
            m.restitution_combine,
            self._raw_pair,
            self._raw_feature,
            count,
            contacts.contact_shape0,
            contacts.contact_shape1,
            contacts.contact_body0,
            contacts.contact_body1,
            contacts.contact_mu,
            contacts.contact_restitution,
            contacts.contact_key,
        )
        return count

    def _sort_contacts(self, contacts: Contacts, count: int) -> None:
        """Deterministic order independent of the broad phase: sort by key (stable)."""
        order = np.argsort(contacts.contact_key[:count], kind="stable")
        for name in (
            "contact_shape0",
            "contact_shape1",
            "contact_body0",
            "contact_body1",
            "contact_mu",
            "contact_restitution",
            "contact_key",
        ):
            arr = getattr(contacts, name)
            arr[:count] = arr[:count][order]
        contacts.contact_point[:count] = self._raw_point[:count][order]
        contacts.contact_normal[:count] = self._raw_normal[:count][order]
        contacts.contact_gap[:count] = self._raw_gap[:count][order]
        contacts.contact_feature[:count] = self._raw_feature[:count][order]
        contacts.contact_count = count

    def _generate_friction(self, contacts: Contacts, count: int) -> None:
        """Friction sets of non-Coulomb surfaces (course §6.1: generator evaluated outside the solver)."""
        m = self.model
        surfaces = m.surface_pool
        compute_contact_structure(
            surfaces, self.shape_world_pos, self.shape_world_rot,
            contacts.contact_shape0, contacts.contact_shape1, contacts.contact_point, count,
            self._structure0, self._structure1,
        )  # fmt: skip
        generate_friction_sets(
            m.shape_friction_model, m.shape_mu, m.shape_mu_t, m.shape_mu_b, m.shape_kappa, m.shape_tensor,
            m.friction_combine, contacts.contact_shape0, contacts.contact_shape1, contacts.contact_normal,
            self._structure0, self._structure1, count,
            contacts.contact_friction_set, contacts.contact_mu4, contacts.contact_tangent_fixed,
            contacts.contact_tangent_hint,
        )  # fmt: skip
        if m.has_texture_friction:
            self.texture_samples = add_texture_friction(
                surfaces, self.shape_world_pos, self.shape_world_rot,
                contacts.contact_shape0, contacts.contact_shape1, contacts.contact_point, contacts.contact_normal,
                contacts.contact_friction_set, contacts.contact_key, count, STANDARD_DIRECTIONS, m.plowing_law,
                self._tex_key, self._tex_local, self._tex_plowing, self._tex_count,
                contacts.contact_tangent_fixed, contacts.contact_tangent_hint, contacts.contact_mu4,
                self._tex_local_next, self._tex_plowing_next, self._tex_scratch, self._tex_work,
            )  # fmt: skip
            self._tex_key[:count] = contacts.contact_key[:count]
            self._tex_local, self._tex_local_next = self._tex_local_next, self._tex_local
            self._tex_plowing, self._tex_plowing_next = self._tex_plowing_next, self._tex_plowing
            self._tex_count = count
