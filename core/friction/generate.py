"""Per-contact friction generation: two surfaces → friction set, coefficients and frame (course §6.1.1).

Pair rules (decided here; the course leaves them open, spec Part L #6, #8):

* COULOMB × COULOMB: the isotropic cone with the scene's combine rule of both ``mu``.
* TEXTURE on either side: a BOX set whose four directional coefficients are the pair's combined
  isotropic ``mu`` (base friction) plus the plowing coefficients sampled from both normal maps
  (course §6.3). The frame is fixed to the textured surface's UV tangent (so ridges along U stay
  along ``t``); without one it follows the sliding direction.
* TENSOR on either side: ``L = L_A + R L_B R^T`` with ``L_S = kappa_S Q_S`` in the surface's structure
  frame for tensor surfaces and ``(mu_S / 2) I`` for the others (so two Coulomb surfaces give ``mu``);
  the ELLIPSE of ``C_P = L^-T L^-1`` (course eq. 321–325).
* MATCHSTICK on either side: course Alg. 21 with both structure directions; isotropic end ``mu`` =
  the combined isotropic coefficients; anisotropic extremes from the Matchstick surface(s) (combined
  per axis when both are). A surface without a structure direction (Coulomb, missing field) leaves
  the other one alone: ``d = 1`` with its direction (Table 5, "anisotropic Coulomb, frame fixed on one
  object").
* ANISOTROPIC on either side: the ELLIPSE ``(mu_t, mu_b)`` on the anisotropic surface's structure
  direction (body0's when both are; coefficients combined per axis); the Coulomb counterpart does not
  change it, since the anisotropic coefficients describe the pair's behaviour.
* A model that needs a structure direction but finds none at the contact falls back to the
  isotropic cone with the combined ``mu``.
Priority when the two surfaces differ: TEXTURE > TENSOR > MATCHSTICK > ANISOTROPIC > COULOMB.
"""

import math

import numpy as np

from ..jit import njit_kernel
from .lookup import surface_structure_direction
from .models import combine_coefficient, matchstick_coefficients, project_onto_plane, tensor_ellipse
from .texture import DEPTH_WINDOW_MIN, texture_patch_coefficients

COULOMB, ANISOTROPIC, MATCHSTICK, TENSOR, TEXTURE = 1, 2, 3, 4, 5
SET_BOX, SET_CONE, SET_ELLIPSE = 1, 2, 3


@njit_kernel
def _set_isotropic(k, mu, contact_friction_set, contact_mu4, contact_tangent_fixed):
    """Contact ``k`` gets the isotropic cone ``mu`` in all four directions, frame free."""
    contact_friction_set[k] = SET_CONE
    for i in range(4):
        contact_mu4[k, i] = mu
    contact_tangent_fixed[k] = False


@njit_kernel
def _set_ellipse(k, mu_t, mu_b, tx, ty, tz, contact_friction_set, contact_mu4, contact_tangent_fixed, hint):
    """Contact ``k`` gets the ELLIPSE ``(mu_t, mu_b)`` with its t axis fixed along ``(tx, ty, tz)`` (world)."""
    contact_friction_set[k] = SET_ELLIPSE
    contact_mu4[k, 0] = mu_t
    contact_mu4[k, 1] = mu_b
    contact_mu4[k, 2] = mu_t
    contact_mu4[k, 3] = mu_b
    contact_tangent_fixed[k] = True
    hint[k, 0] = tx
    hint[k, 1] = ty
    hint[k, 2] = tz


@njit_kernel
def _tensor_in_plane(kappa, q, sx, sy, sz, has_dir, n, e1x, e1y, e1z, mu_iso):
    """2x2 tensor ``L_S`` of one surface expressed in the contact-plane basis ``(e1, n x e1)``."""
    if kappa <= 0.0:  # not a tensor surface: half its isotropic friction
        half = 0.5 * mu_iso
        return half, 0.0, 0.0, half
    if not has_dir:
        return kappa * q[0, 0], kappa * q[0, 1], kappa * q[1, 0], kappa * q[1, 1]
    # angle of the structure direction t_S from e1 within the plane
    e2x = n[1] * e1z - n[2] * e1y
    e2y = n[2] * e1x - n[0] * e1z
    e2z = n[0] * e1y - n[1] * e1x
    c = sx * e1x + sy * e1y + sz * e1z
    s = sx * e2x + sy * e2y + sz * e2z
    # R Q R^T with R = [[c, -s], [s, c]]
    m00 = c * q[0, 0] - s * q[1, 0]
    m01 = c * q[0, 1] - s * q[1, 1]
    m10 = s * q[0, 0] + c * q[1, 0]
    m11 = s * q[0, 1] + c * q[1, 1]
    return (
        kappa * (m00 * c - m01 * s),
        kappa * (m00 * s + m01 * c),
        kappa * (m10 * c - m11 * s),
        kappa * (m10 * s + m11 * c),
    )


@njit_kernel
def _texture_set(k, m0, m1, a0, a1, a2, has0, b0, b1, b2, has1, mu_iso, friction_set, mu4, tangent_fixed, hint):
    """TEXTURE pair: BOX set at the base ``mu_iso``; the frame follows the textured surface's projected direction."""
    _set_isotropic(k, mu_iso, friction_set, mu4, tangent_fixed)
    friction_set[k] = SET_BOX
    if m0 == TEXTURE and has0:
        tangent_fixed[k] = True
        hint[k, 0], hint[k, 1], hint[k, 2] = a0, a1, a2
    elif m1 == TEXTURE and has1:
        tangent_fixed[k] = True
        hint[k, 0], hint[k, 1], hint[k, 2] = b0, b1, b2


@njit_kernel
def _tensor_set(
    k, s0, s1, m0, m1, n, a0, a1, a2, has0, b0, b1, b2, has1, shape_mu, shape_kappa, shape_tensor,
    friction_set, mu4, tangent_fixed, hint,
):  # fmt: skip
    """TENSOR pair: ELLIPSE of ``L = L_A + R L_B R^T`` (course eq. 321-325) in a common in-plane basis."""
    # a common in-plane basis e1: a structure direction if there is one, else any tangent
    if has0:
        e1x, e1y, e1z = a0, a1, a2
    elif has1:
        e1x, e1y, e1z = b0, b1, b2
    else:
        e1x, e1y, e1z, ok = project_onto_plane(1.0, 0.0, 0.0, n)
        if not ok:
            e1x, e1y, e1z, ok = project_onto_plane(0.0, 1.0, 0.0, n)
    k0 = shape_kappa[s0] if m0 == TENSOR else 0.0
    k1 = shape_kappa[s1] if m1 == TENSOR else 0.0
    la00, la01, la10, la11 = _tensor_in_plane(k0, shape_tensor[s0], a0, a1, a2, has0, n, e1x, e1y, e1z, shape_mu[s0])
    lb00, lb01, lb10, lb11 = _tensor_in_plane(k1, shape_tensor[s1], b0, b1, b2, has1, n, e1x, e1y, e1z, shape_mu[s1])
    mu_t, mu_b, ca, sa = tensor_ellipse(la00 + lb00, la01 + lb01, la10 + lb10, la11 + lb11)
    e2x = n[1] * e1z - n[2] * e1y
    e2y = n[2] * e1x - n[0] * e1z
    e2z = n[0] * e1y - n[1] * e1x
    _set_ellipse(
        k, mu_t, mu_b, ca * e1x + sa * e2x, ca * e1y + sa * e2y, ca * e1z + sa * e2z,
        friction_set, mu4, tangent_fixed, hint,
    )  # fmt: skip


@njit_kernel
def _anisotropic_set(
    k, s0, s1, m0, m1, top, a0, a1, a2, has0, b0, b1, b2, has1, mu_iso, shape_mu_t, shape_mu_b, friction_combine,
    friction_set, mu4, tangent_fixed, hint,
):  # fmt: skip
    """MATCHSTICK / ANISOTROPIC pair: Alg. 21 with both directions, else the ellipse on the one that has one."""
    # anisotropic extremes: from the structured surface(s) of this model or better
    aniso0 = m0 == MATCHSTICK or m0 == ANISOTROPIC
    aniso1 = m1 == MATCHSTICK or m1 == ANISOTROPIC
    if aniso0 and aniso1:
        mu_t_a = combine_coefficient(shape_mu_t[s0], shape_mu_t[s1], friction_combine)
        mu_b_a = combine_coefficient(shape_mu_b[s0], shape_mu_b[s1], friction_combine)
    elif aniso0:
        mu_t_a, mu_b_a = shape_mu_t[s0], shape_mu_b[s0]
    else:
        mu_t_a, mu_b_a = shape_mu_t[s1], shape_mu_b[s1]
    use0 = aniso0 and has0
    use1 = aniso1 and has1
    if top == MATCHSTICK and use0 and use1:
        mu_t, mu_b, tx, ty, tz = matchstick_coefficients(a0, a1, a2, b0, b1, b2, mu_iso, mu_t_a, mu_b_a)
        _set_ellipse(k, mu_t, mu_b, tx, ty, tz, friction_set, mu4, tangent_fixed, hint)
    elif use0:
        _set_ellipse(k, mu_t_a, mu_b_a, a0, a1, a2, friction_set, mu4, tangent_fixed, hint)
    elif use1:
        _set_ellipse(k, mu_t_a, mu_b_a, b0, b1, b2, friction_set, mu4, tangent_fixed, hint)
    else:
        _set_isotropic(k, mu_iso, friction_set, mu4, tangent_fixed)


@njit_kernel
def generate_friction_sets(
    shape_friction_model,
    shape_mu,
    shape_mu_t,
    shape_mu_b,
    shape_kappa,
    shape_tensor,
    friction_combine,
    contact_shape0,
    contact_shape1,
    contact_normal,
    contact_structure0,
    contact_structure1,
    contact_count,
    # outputs
    contact_friction_set,
    contact_mu4,
    contact_tangent_fixed,
    contact_tangent_hint,
):
    """Friction set, coefficients ``[+t, +b, -t, -b]`` and fixed tangent of every contact (rules above).

    ``contact_structure0/1`` (c, 3) are the two surfaces' structure directions at the contact in world
    coordinates (zero where a surface has none). TEXTURE contacts get their base coefficients here; the
    plowing part is added by the texture sampler.
    """
    for k in range(contact_count):
        s0 = contact_shape0[k]
        s1 = contact_shape1[k]
        m0 = shape_friction_model[s0]
        m1 = shape_friction_model[s1]
        n = contact_normal[k]
        mu_iso = combine_coefficient(shape_mu[s0], shape_mu[s1], friction_combine)
        a0, a1, a2, has0 = project_onto_plane(
            contact_structure0[k, 0], contact_structure0[k, 1], contact_structure0[k, 2], n
        )
        b0, b1, b2, has1 = project_onto_plane(
            contact_structure1[k, 0], contact_structure1[k, 1], contact_structure1[k, 2], n
        )
        top = max(m0, m1)
        if top == TEXTURE:
            _texture_set(
                k, m0, m1, a0, a1, a2, has0, b0, b1, b2, has1, mu_iso,
                contact_friction_set, contact_mu4, contact_tangent_fixed, contact_tangent_hint,
            )  # fmt: skip
        elif top == TENSOR:
            _tensor_set(
                k, s0, s1, m0, m1, n, a0, a1, a2, has0, b0, b1, b2, has1, shape_mu, shape_kappa, shape_tensor,
                contact_friction_set, contact_mu4, contact_tangent_fixed, contact_tangent_hint,
            )  # fmt: skip
        elif top == MATCHSTICK or top == ANISOTROPIC:
            _anisotropic_set(
                k, s0, s1, m0, m1, top, a0, a1, a2, has0, b0, b1, b2, has1, mu_iso, shape_mu_t, shape_mu_b,
                friction_combine, contact_friction_set, contact_mu4, contact_tangent_fixed, contact_tangent_hint,
            )  # fmt: skip
        else:
            _set_isotropic(k, mu_iso, contact_friction_set, contact_mu4, contact_tangent_fixed)


@njit_kernel
def _to_shape_frame(contact_point, k, shape_world_pos, shape_world_rot, s, out):
    """Contact point ``k`` in the frame of shape ``s``: ``out = R_s^T (p_k - x_s)`` [m], shape (3,)."""
    R = shape_world_rot[s]
    d0 = contact_point[k, 0] - shape_world_pos[s, 0]
    d1 = contact_point[k, 1] - shape_world_pos[s, 1]
    d2 = contact_point[k, 2] - shape_world_pos[s, 2]
    for j in range(3):
        out[j] = R[0, j] * d0 + R[1, j] * d1 + R[2, j] * d2


@njit_kernel
def compute_contact_structure(
    surfaces,
    shape_world_pos,
    shape_world_rot,
    contact_shape0,
    contact_shape1,
    contact_point,
    contact_count,
    # outputs
    contact_structure0,
    contact_structure1,
):
    """World structure direction of both surfaces at every contact (zero where a surface has none).

    Args:
        surfaces: :class:`~.lookup.SurfaceArrays` of the model's shapes.
        shape_world_pos: shape origins [m], shape (S, 3); shape_world_rot: shape-to-world rotations (S, 3, 3).
        contact_shape0, contact_shape1: shape indices per contact (c,); contact_point: points [m] (c, 3).
        contact_structure0, contact_structure1: outputs, world structure vectors (c, 3), not normalised.

    The contact point goes into each shape's frame, :func:`.lookup.surface_structure_direction` finds the
    field there (attribute, direction image, UV tangent or axis), and the result goes back to world: ``R s``.
    """
    local_p = np.empty(3)
    local_s = np.empty(3)
    for k in range(contact_count):
        for side in range(2):
            s = contact_shape0[k] if side == 0 else contact_shape1[k]
            out = contact_structure0[k] if side == 0 else contact_structure1[k]
            out[0] = 0.0
            out[1] = 0.0
            out[2] = 0.0
            if surfaces.surface_source[s] == 0:
                continue
            _to_shape_frame(contact_point, k, shape_world_pos, shape_world_rot, s, local_p)
            surface_structure_direction(surfaces, s, local_p, local_s)
            R = shape_world_rot[s]
            for j in range(3):
                out[j] = R[j, 0] * local_s[0] + R[j, 1] * local_s[1] + R[j, 2] * local_s[2]


@njit_kernel
def _fix_box_frame(k, n, contact_tangent_fixed, contact_tangent_hint, t, b):
    """Tangents ``t, b`` (3,) of BOX contact ``k``: the hint projected onto the plane, else a deterministic tangent.

    The hint is replaced by ``t`` and fixed, so the solver uses exactly the directions that get sampled.
    """
    if contact_tangent_fixed[k]:
        hint = contact_tangent_hint[k]
        hn = hint[0] * n[0] + hint[1] * n[1] + hint[2] * n[2]
        for i in range(3):
            t[i] = hint[i] - hn * n[i]
        norm = math.sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2])
    else:
        norm = 0.0
    if not norm > 1e-9:
        tx, ty, tz, ok = project_onto_plane(1.0, 0.0, 0.0, n)
        if not ok:
            tx, ty, tz, ok = project_onto_plane(0.0, 1.0, 0.0, n)
        t[0], t[1], t[2] = tx, ty, tz
        norm = 1.0
    for i in range(3):
        t[i] /= norm
        contact_tangent_hint[k, i] = t[i]
    contact_tangent_fixed[k] = True
    b[0] = n[1] * t[2] - n[2] * t[1]
    b[1] = n[2] * t[0] - n[0] * t[2]
    b[2] = n[0] * t[1] - n[1] * t[0]


@njit_kernel
def _pair_patch_settings(surfaces, s0, s1):
    """Patch side [m] and resolution of a pair: the largest among its textured surfaces (resolution 0: none)."""
    size = 0.0
    res = 0
    for s in (s0, s1):
        if surfaces.surface_normal_image[s] >= 0:
            size = max(size, surfaces.surface_patch_size[s])
            res = max(res, surfaces.surface_patch_resolution[s])
    return size, res


@njit_kernel
def _largest_move(cur, prev):
    """Largest coordinate change [m] between two (2, 3) pairs of shape-frame points (max norm)."""
    moved = 0.0
    for side in range(2):
        for i in range(3):
            moved = max(moved, abs(cur[side, i] - prev[side, i]))
    return moved


@njit_kernel
def add_texture_friction(
    surfaces, shape_world_pos, shape_world_rot,
    contact_shape0, contact_shape1, contact_point, contact_normal, contact_friction_set, contact_key, contact_count,
    directions, law, prev_key, prev_local, prev_plowing, prev_count,
    # outputs
    contact_tangent_fixed, contact_tangent_hint, contact_mu4, cur_local, cur_plowing, scratch, work,
):  # fmt: skip
    """Add the plowing coefficients of both normal maps to every BOX (texture) contact (course §6.3.2).

    Args:
        surfaces: :class:`~.lookup.SurfaceArrays` of the model's shapes.
        shape_world_pos, shape_world_rot: shape poses, (S, 3) [m] and (S, 3, 3).
        contact_*: the contacts (c = ``contact_count`` used), keys sorted ascending.
        directions: (4, 2) sliding directions in the (t, b) basis (``STANDARD_DIRECTIONS``); law: plowing law.
        prev_key, prev_local (c', 2, 3) [m], prev_plowing (c', 4), prev_count: the previous call's cache.
        contact_tangent_fixed, contact_tangent_hint, contact_mu4: updated for BOX contacts.
        cur_local, cur_plowing: this call's cache (the caller swaps them with ``prev_*`` afterwards).
        scratch, work: as in :func:`.texture.texture_patch_coefficients`.

    The frame is fixed here (the UV tangent from the generator, else a deterministic tangent) so the
    solver uses exactly the directions that were sampled: ``mu4 += [+t, +b, -t, -b]`` plowing.
    Cache: a contact whose key existed in the previous call and whose point moved less than one patch
    sample in both shapes' frames reuses its coefficients (keys are sorted: matching is a merge).
    Returns the number of contacts sampled (not taken from the cache).
    """
    t = np.empty(3)
    b = np.empty(3)
    coefficients = np.empty(4)
    sampled = 0
    j = 0
    for k in range(contact_count):
        if contact_friction_set[k] != SET_BOX:
            continue
        s0 = contact_shape0[k]
        s1 = contact_shape1[k]
        n = contact_normal[k]
        _fix_box_frame(k, n, contact_tangent_fixed, contact_tangent_hint, t, b)
        size, res = _pair_patch_settings(surfaces, s0, s1)
        if res == 0:
            continue
        # the contact point in both shape frames (cache test)
        _to_shape_frame(contact_point, k, shape_world_pos, shape_world_rot, s0, cur_local[k, 0])
        _to_shape_frame(contact_point, k, shape_world_pos, shape_world_rot, s1, cur_local[k, 1])
        while j < prev_count and prev_key[j] < contact_key[k]:
            j += 1
        reuse = False
        if j < prev_count and prev_key[j] == contact_key[k]:
            reuse = _largest_move(cur_local[k], prev_local[j]) < size / res
        if reuse:
            for i in range(4):
                coefficients[i] = prev_plowing[j, i]
            # keep the sampled positions so slow creep still triggers a resample
            cur_local[k] = prev_local[j]
        else:
            texture_patch_coefficients(
                surfaces, s0, shape_world_rot[s0], shape_world_pos[s0], s1, shape_world_rot[s1], shape_world_pos[s1],
                contact_point[k], n, t, b, directions, size, res, law, max(size, DEPTH_WINDOW_MIN),
                coefficients, scratch, work,
            )  # fmt: skip
            sampled += 1
        for i in range(4):
            cur_plowing[k, i] = coefficients[i]
            contact_mu4[k, i] += coefficients[i]
    return sampled
