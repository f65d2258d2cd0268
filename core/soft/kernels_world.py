"""Kernels of the soft-world step (:mod:`.world_solver`): per-tet materials, contact elements against
colliders and dynamic boxes, lagged friction, the matrix-free Newton operator, its group
block-Jacobi preconditioner and PCG.

**Contact elements.** Element ``e`` couples up to 8 nodes. Its signed distance ``d_e(x)`` has the
gradient ``dd/dx_k = c_k g`` (scalar coefficients ``c_k``, one world vector ``g``):

- kind ``POINT_COLLIDER``: a point ``p = sum_k w_k x_k`` (a soft body's contact point: a tet vertex,
  ``w = 1``, or a render-mesh vertex embedded in a tet; or a corner of a dynamic box, 4 affine nodes)
  against a static/kinematic collider at its end-of-step pose
  ``(t, R)``: ``d = sdf(R^T (p - t))``, ``g = R n_local``, ``c_k = w_k``.
- kind ``POINT_BOX``: a soft contact point ``x_v = sum_k w_k x_k`` (nodes 0..3) against dynamic box
  ``a`` with affine nodes ``X_0..3`` (element nodes 4..7). The point's barycentric coordinates
  ``beta`` in the virtual tet map it to the box's rest frame, ``p_rest = sum_k beta_k Xr_k``, and
  ``d = sdf_box(p_rest)``. With ``A = D Dr^-1`` (``D``, ``Dr`` the edge matrices) the exact gradient is
  ``g = A^-T n_rest``, ``c = (w_0..w_3, -beta_0, ..., -beta_3)``.

Penalty energy (seed 003 eq. 3, as ``kernels_contact``): ``kappa b(d)``, ``b = (delta - d)^3/delta``
for ``d < delta``. Gradient ``kappa b'(d) c_k g``; Gauss–Newton Hessian ``kappa b''(d) c_k c_l g g^T``
(rank one per element, PSD; the curvature term ``b' d^2 d/dx^2`` is dropped).

**Lagged friction** (IPC style, as ``kernels_contact``): frozen at ``x^n`` per element: normal force
``lambda^n``, tangent basis ``T`` (3x2), displacement coefficients ``f_k`` (``w_k``, or ``1, -beta^n``)
and the collider's own displacement ``s`` of the touched material point over the step. The relative
tangential displacement is ``u = T^T (sum_k f_k (x_k - x_k^n) - s)`` and the potential
``mu lambda^n f0(|u|)``. Its 2x2 Hessian ``H2`` in the tangent plane is PSD.

**Operator.** ``A = CSR + h^2 (contact + friction + volume rank-one)``. The CSR holds
``M + h^2 (K_elastic + K_damping)`` and the dynamic boxes' consistent mass; the element and volume
terms are applied matrix-free. Rows of pinned nodes are identity (the coefficients of pinned
nodes are zeroed).
"""

import math

import numpy as np

from ..jit import njit_kernel, njit_parallel, prange
from ..linalg.csr import csr_matvec, csr_matvec_serial
from .kernels_contact import flat_dot, smoothed_friction_factors
from .materials import (
    HESSIAN_CHUNKS,
    WORK_MATRICES,
    material_energy,
    pk1_stress,
    project_psd,
    tet_gradient_from_stress,
    tet_hessian_block,
)
from .tet_mesh import deformation_gradient

KIND_POINT_COLLIDER = 0
KIND_POINT_BOX = 1
KIND_POINT_TRIANGLE = 2
ELEMENT_NODES = 16

SHAPE_SPHERE = 1
SHAPE_BOX = 2
SHAPE_CAPSULE = 3
SHAPE_PLANE = 4


# --------------------------------------------------------------------------------------------
# Materials with per-tet parameters
# --------------------------------------------------------------------------------------------


@njit_kernel
def world_elastic_energy(x, tets, Dm_inv, volume, mu, lam, material):
    """``sum_t V_t Psi_t(F_t)`` [J] with per-tet ``mu``, ``lam`` [Pa] and ``material`` (T,)."""
    work = np.empty((WORK_MATRICES, 3, 3))
    F = np.empty((3, 3))
    total = 0.0
    for t in range(tets.shape[0]):
        deformation_gradient(x, tets[t], Dm_inv[t], F)
        total += volume[t] * material_energy(F, mu[t], lam[t], material[t], work)
    return total


@njit_kernel
def world_elastic_gradient(x, tets, Dm_inv, volume, mu, lam, material, out):
    """Overwrite ``out`` (N, 3) with ``dPsi/dx`` [N] (serial scatter: deterministic)."""
    work = np.empty((WORK_MATRICES, 3, 3))
    F = np.empty((3, 3))
    P = np.empty((3, 3))
    G = np.empty((4, 3))
    g = np.empty(12)
    out[:, :] = 0.0
    for t in range(tets.shape[0]):
        deformation_gradient(x, tets[t], Dm_inv[t], F)
        pk1_stress(F, mu[t], lam[t], material[t], work, P)
        tet_gradient_from_stress(P, Dm_inv[t], volume[t], G, g)
        for a in range(4):
            for i in range(3):
                out[tets[t, a], i] += g[3 * a + i]


@njit_parallel
def world_elastic_hessian_blocks(x, tets, Dm_inv, volume, mu, lam, material, project, out):
    """Per-tet 12x12 Hessians [N/m] into ``out`` (T, 12, 12), PSD-projected if ``project`` (analytic
    eigensystem, see ``materials.tet_hessian_block``); parallel over chunks of tets."""
    count = tets.shape[0]
    n_chunks = min(count, HESSIAN_CHUNKS)
    work = np.empty((n_chunks, WORK_MATRICES, 3, 3))
    F = np.empty((n_chunks, 3, 3))
    G = np.empty((n_chunks, 4, 3))
    dPdF = np.empty((n_chunks, 9, 9))
    evals = np.empty((n_chunks, 9))
    coef = np.empty((n_chunks, 9))
    Z = np.empty((n_chunks, 9, 12))
    for c in prange(n_chunks):
        for t in range(c * count // n_chunks, (c + 1) * count // n_chunks):
            deformation_gradient(x, tets[t], Dm_inv[t], F[c])
            tet_hessian_block(F[c], mu[t], lam[t], material[t], project, Dm_inv[t], volume[t], work[c], G[c],
                              dPdF[c], evals[c], coef[c], Z[c], out[t])  # fmt: skip


@njit_kernel
def damping_energy_gradient(x, x_start, tets, damp_blocks, damp_scale, out_grad):
    """Rayleigh damping potential ``sum_t (beta_t / 2h) dx_t^T K_t^n dx_t`` [J] (``damp_scale = beta/h``
    per tet, ``K^n`` the projected tet Hessians at ``x^n``); adds its gradient to ``out_grad``."""
    dx = np.empty(12)
    total = 0.0
    for t in range(tets.shape[0]):
        s = damp_scale[t]
        if s == 0.0:
            continue
        for a in range(4):
            for i in range(3):
                dx[3 * a + i] = x[tets[t, a], i] - x_start[tets[t, a], i]
        for r in range(12):
            acc = 0.0
            for q in range(12):
                acc += damp_blocks[t, r, q] * dx[q]
            total += 0.5 * s * dx[r] * acc
            out_grad[tets[t, r // 3], r % 3] += s * acc
    return total


# --------------------------------------------------------------------------------------------
# Signed distances of collider shapes (local frame)
# --------------------------------------------------------------------------------------------


@njit_kernel
def shape_signed_distance(shape, params, q, n_out):
    """Signed distance [m] of local point ``q`` (3,) to a shape; unit outward gradient into ``n_out``.

    PLANE: local XY plane, solid below (``d = q_z``). SPHERE: radius ``params[0]``. CAPSULE: radius
    ``params[0]``, segment ``z in [-params[1], params[1]]``. BOX: half extents ``params``.
    """
    if shape == SHAPE_PLANE:
        n_out[0] = 0.0
        n_out[1] = 0.0
        n_out[2] = 1.0
        return q[2]
    if shape == SHAPE_SPHERE or shape == SHAPE_CAPSULE:
        cz = 0.0
        if shape == SHAPE_CAPSULE:
            cz = min(max(q[2], -params[1]), params[1])
        dx, dy, dz = q[0], q[1], q[2] - cz
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        if r > 0.0:
            n_out[0] = dx / r
            n_out[1] = dy / r
            n_out[2] = dz / r
        else:
            n_out[0] = 0.0
            n_out[1] = 0.0
            n_out[2] = 1.0
        return r - params[0]
    # BOX
    outside = 0.0
    inside = -1.0e300
    axis = 0
    for c in range(3):
        e = abs(q[c]) - params[c]
        if e > 0.0:
            outside += e * e
        if e > inside:
            inside = e
            axis = c
    if outside > 0.0:
        d = math.sqrt(outside)
        for c in range(3):
            e = abs(q[c]) - params[c]
            n_out[c] = (math.copysign(e, q[c]) / d) if e > 0.0 else 0.0
        return d
    for c in range(3):
        n_out[c] = 0.0
    n_out[axis] = 1.0 if q[axis] >= 0.0 else -1.0
    return inside


@njit_kernel
def inverse3(M, out):
    """``out = M^-1`` (3x3) by cofactors; returns det(M)."""
    c00 = M[1, 1] * M[2, 2] - M[1, 2] * M[2, 1]
    c01 = M[1, 2] * M[2, 0] - M[1, 0] * M[2, 2]
    c02 = M[1, 0] * M[2, 1] - M[1, 1] * M[2, 0]
    det = M[0, 0] * c00 + M[0, 1] * c01 + M[0, 2] * c02
    inv = 1.0 / det
    out[0, 0] = c00 * inv
    out[1, 0] = c01 * inv
    out[2, 0] = c02 * inv
    out[0, 1] = (M[0, 2] * M[2, 1] - M[0, 1] * M[2, 2]) * inv
    out[1, 1] = (M[0, 0] * M[2, 2] - M[0, 2] * M[2, 0]) * inv
    out[2, 1] = (M[0, 1] * M[2, 0] - M[0, 0] * M[2, 1]) * inv
    out[0, 2] = (M[0, 1] * M[1, 2] - M[0, 2] * M[1, 1]) * inv
    out[1, 2] = (M[0, 2] * M[1, 0] - M[0, 0] * M[1, 2]) * inv
    out[2, 2] = (M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]) * inv
    return det


# --------------------------------------------------------------------------------------------
# Contact elements
# --------------------------------------------------------------------------------------------


@njit_kernel
def element_distance(e, x, el_kind, el_nodes, el_weights, el_target, col_shape, col_params, col_pos, col_rot,
                     aff_nodes, aff_rest, aff_rest_center, aff_rest_rot, aff_half, coef, g, scratch):  # fmt: skip
    """Signed distance of contact element ``e`` at positions ``x``; fills ``coef`` (16,) and ``g`` (3,).

    ``scratch`` is (4, 3, 3) float64. Collider poses ``col_pos`` (C, 3), ``col_rot`` (C, 3, 3) are the
    end-of-step poses; ``aff_rest_center`` (A, 3) / ``aff_rest_rot`` (A, 3, 3) the boxes' rest poses.
    """
    q = scratch[0, 0]
    n = scratch[0, 1]
    p = scratch[0, 2]
    for k in range(ELEMENT_NODES):
        coef[k] = 0.0
    if el_kind[e] == KIND_POINT_COLLIDER:
        c = el_target[e]
        _element_point(e, x, el_nodes, el_weights, 0, p)
        for k in range(4):
            coef[k] = el_weights[e, k] if el_nodes[e, k] >= 0 else 0.0
        R = col_rot[c]
        for i in range(3):
            q[i] = (
                R[0, i] * (p[0] - col_pos[c, 0]) + R[1, i] * (p[1] - col_pos[c, 1]) + R[2, i] * (p[2] - col_pos[c, 2])
            )
        d = shape_signed_distance(col_shape[c], col_params[c], q, n)
        for i in range(3):
            g[i] = R[i, 0] * n[0] + R[i, 1] * n[1] + R[i, 2] * n[2]
        return d
    if el_kind[e] == KIND_POINT_TRIANGLE:
        return _point_triangle_distance(e, x, el_nodes, el_weights, coef, g, scratch)
    # POINT_BOX: the point sum_k w_k x_k (nodes 0..3) against dynamic box a (affine nodes 4..7)
    a = el_target[e]
    v = scratch[0, 0]  # the point; q is overwritten only after its last use
    _element_point(e, x, el_nodes, el_weights, 0, v)
    D = scratch[1]
    Dinv = scratch[2]
    Dr = scratch[3]
    n0 = aff_nodes[a, 0]
    for i in range(3):
        for j in range(3):
            D[i, j] = x[aff_nodes[a, j + 1], i] - x[n0, i]
            Dr[i, j] = aff_rest[a, j + 1, i] - aff_rest[a, 0, i]
    inverse3(D, Dinv)
    b1 = Dinv[0, 0] * (v[0] - x[n0, 0]) + Dinv[0, 1] * (v[1] - x[n0, 1]) + Dinv[0, 2] * (v[2] - x[n0, 2])
    b2 = Dinv[1, 0] * (v[0] - x[n0, 0]) + Dinv[1, 1] * (v[1] - x[n0, 1]) + Dinv[1, 2] * (v[2] - x[n0, 2])
    b3 = Dinv[2, 0] * (v[0] - x[n0, 0]) + Dinv[2, 1] * (v[1] - x[n0, 1]) + Dinv[2, 2] * (v[2] - x[n0, 2])
    b0 = 1.0 - b1 - b2 - b3
    for i in range(3):
        p[i] = aff_rest[a, 0, i] + Dr[i, 0] * b1 + Dr[i, 1] * b2 + Dr[i, 2] * b3
    R0 = aff_rest_rot[a]
    for i in range(3):
        q[i] = (
            R0[0, i] * (p[0] - aff_rest_center[a, 0])
            + R0[1, i] * (p[1] - aff_rest_center[a, 1])
            + R0[2, i] * (p[2] - aff_rest_center[a, 2])
        )
    d = shape_signed_distance(SHAPE_BOX, aff_half[a], q, n)
    # rest-frame normal n_r = R0 n; g = D^-T Dr^T n_r
    for i in range(3):
        p[i] = R0[i, 0] * n[0] + R0[i, 1] * n[1] + R0[i, 2] * n[2]
    for j in range(3):
        q[j] = Dr[0, j] * p[0] + Dr[1, j] * p[1] + Dr[2, j] * p[2]
    for i in range(3):
        g[i] = Dinv[0, i] * q[0] + Dinv[1, i] * q[1] + Dinv[2, i] * q[2]
    for k in range(4):
        coef[k] = el_weights[e, k] if el_nodes[e, k] >= 0 else 0.0
    coef[4] = -b0
    coef[5] = -b1
    coef[6] = -b2
    coef[7] = -b3
    return d


@njit_kernel
def _element_point(e, x, el_nodes, el_weights, first, out):
    """``out = sum_k w_k x_k`` over the 4 element slots starting at ``first`` (-1 padded)."""
    for i in range(3):
        out[i] = 0.0
    for k in range(first, first + 4):
        node = el_nodes[e, k]
        if node < 0:
            continue
        for i in range(3):
            out[i] += el_weights[e, k] * x[node, i]


@njit_kernel
def closest_point_on_triangle(p, a, b, c, bary):
    """Barycentric coordinates ``bary`` (3,) of the point of triangle ``abc`` closest to ``p`` (Voronoi
    regions of the vertices, edges and face; all arrays (3,))."""
    ab0, ab1, ab2 = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    ac0, ac1, ac2 = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    ap0, ap1, ap2 = p[0] - a[0], p[1] - a[1], p[2] - a[2]
    d1 = ab0 * ap0 + ab1 * ap1 + ab2 * ap2
    d2 = ac0 * ap0 + ac1 * ap1 + ac2 * ap2
    if d1 <= 0.0 and d2 <= 0.0:
        bary[0], bary[1], bary[2] = 1.0, 0.0, 0.0
        return
    bp0, bp1, bp2 = p[0] - b[0], p[1] - b[1], p[2] - b[2]
    d3 = ab0 * bp0 + ab1 * bp1 + ab2 * bp2
    d4 = ac0 * bp0 + ac1 * bp1 + ac2 * bp2
    if d3 >= 0.0 and d4 <= d3:
        bary[0], bary[1], bary[2] = 0.0, 1.0, 0.0
        return
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        bary[0], bary[1], bary[2] = 1.0 - v, v, 0.0
        return
    cp0, cp1, cp2 = p[0] - c[0], p[1] - c[1], p[2] - c[2]
    d5 = ab0 * cp0 + ab1 * cp1 + ab2 * cp2
    d6 = ac0 * cp0 + ac1 * cp1 + ac2 * cp2
    if d6 >= 0.0 and d5 <= d6:
        bary[0], bary[1], bary[2] = 0.0, 0.0, 1.0
        return
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        bary[0], bary[1], bary[2] = 1.0 - w, 0.0, w
        return
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        bary[0], bary[1], bary[2] = 0.0, 1.0 - w, w
        return
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    bary[0], bary[1], bary[2] = 1.0 - v - w, v, w


@njit_kernel
def _point_triangle_distance(e, x, el_nodes, el_weights, coef, g, scratch):
    """Distance of a soft contact point (slots 0..3) to an outward-oriented soft surface triangle whose
    corners are contact points (slots 4..7, 8..11, 12..15): signed along the face normal when the closest
    point ``q = sum beta_j t_j`` is inside the face, unsigned (``|p - q|``) in the edge and vertex regions.
    With ``n`` the face normal or ``(p - q) / |p - q|``, the exact gradient is ``n`` on the point and
    ``-beta_j n`` on corner ``j`` (moving the triangle within its own plane, or along an edge, does not
    change the distance)."""
    p = scratch[1, 0]
    a = scratch[1, 1]
    b = scratch[1, 2]
    c = scratch[2, 0]
    bary = scratch[2, 1]
    _element_point(e, x, el_nodes, el_weights, 0, p)
    _element_point(e, x, el_nodes, el_weights, 4, a)
    _element_point(e, x, el_nodes, el_weights, 8, b)
    _element_point(e, x, el_nodes, el_weights, 12, c)
    closest_point_on_triangle(p, a, b, c, bary)
    if bary[0] > 0.0 and bary[1] > 0.0 and bary[2] > 0.0:
        # Face region: the signed distance along the outward face normal (negative once the point is
        # through the surface, so the penalty still pushes it out and penetration is detectable).
        n0 = (b[1] - a[1]) * (c[2] - a[2]) - (b[2] - a[2]) * (c[1] - a[1])
        n1 = (b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2])
        n2 = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        nn = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        g[0], g[1], g[2] = n0 / nn, n1 / nn, n2 / nn
        d = (p[0] - a[0]) * g[0] + (p[1] - a[1]) * g[1] + (p[2] - a[2]) * g[2]
    else:
        # Edge or vertex region: the unsigned distance (equal to the face value on the region border).
        d2 = 0.0
        for i in range(3):
            g[i] = p[i] - (bary[0] * a[i] + bary[1] * b[i] + bary[2] * c[i])
            d2 += g[i] * g[i]
        d = math.sqrt(d2)
        for i in range(3):
            g[i] = g[i] / d if d > 0.0 else 0.0
    for k in range(4):
        coef[k] = el_weights[e, k] if el_nodes[e, k] >= 0 else 0.0
        for j in range(3):
            slot = 4 + 4 * j + k
            coef[slot] = -bary[j] * el_weights[e, slot] if el_nodes[e, slot] >= 0 else 0.0
    return d


@njit_kernel
def contact_energy(x, el_count, el_kind, el_nodes, el_weights, el_target, geometry, kappa, delta):
    """``kappa sum_e b(d_e)`` [J] over the first ``el_count`` elements (``geometry``: see
    :func:`contact_gradient`)."""
    col_shape, col_params, col_pos, col_rot, aff_nodes, aff_rest, aff_center, aff_rot, aff_half = geometry
    coef = np.empty(ELEMENT_NODES)
    g = np.empty(3)
    scratch = np.empty((4, 3, 3))
    total = 0.0
    for e in range(el_count):
        d = element_distance(e, x, el_kind, el_nodes, el_weights, el_target, col_shape, col_params, col_pos, col_rot,
                             aff_nodes, aff_rest, aff_center, aff_rot, aff_half, coef, g, scratch)  # fmt: skip
        if d < delta:
            s = delta - d
            total += kappa * s * s * s / delta
    return total


@njit_kernel
def contact_gradient(x, el_count, el_kind, el_nodes, el_weights, el_target, geometry, kappa, delta, node_free,
                     out_grad, el_coef, el_g, el_stiff):  # fmt: skip
    """Add the penalty gradient [N] to ``out_grad`` (N, 3); store per element the masked coefficients
    ``el_coef`` (E, 5), ``el_g`` (E, 3) and ``el_stiff = kappa b''(d)`` (E,) [N/m] for the operator.

    ``geometry = (col_shape, col_params, col_pos, col_rot, aff_nodes, aff_rest, aff_rest_center,
    aff_rest_rot, aff_half)``. Returns the largest penetration ``max(0, -d)`` [m].
    """
    col_shape, col_params, col_pos, col_rot, aff_nodes, aff_rest, aff_center, aff_rot, aff_half = geometry
    coef = np.empty(ELEMENT_NODES)
    g = np.empty(3)
    scratch = np.empty((4, 3, 3))
    worst = 0.0
    for e in range(el_count):
        d = element_distance(e, x, el_kind, el_nodes, el_weights, el_target, col_shape, col_params, col_pos, col_rot,
                             aff_nodes, aff_rest, aff_center, aff_rot, aff_half, coef, g, scratch)  # fmt: skip
        if -d > worst:
            worst = -d
        for i in range(3):
            el_g[e, i] = g[i]
        if d >= delta:
            el_stiff[e] = 0.0
            for k in range(ELEMENT_NODES):
                el_coef[e, k] = 0.0
            continue
        s = delta - d
        db = -3.0 * kappa * s * s / delta
        el_stiff[e] = 6.0 * kappa * s / delta
        for k in range(ELEMENT_NODES):
            node = el_nodes[e, k]
            if node < 0 or not node_free[node]:
                el_coef[e, k] = 0.0
                continue
            el_coef[e, k] = coef[k]
            for i in range(3):
                out_grad[node, i] += db * coef[k] * g[i]
    return worst


@njit_kernel
def friction_setup(x_start, el_count, el_kind, el_nodes, el_weights, el_target, geometry, col_pos0, col_rot0,
                   col_aniso, kappa, delta, el_mu, node_free, el_lambda, el_tangent, el_fcoef, el_slip, el_normal,
                   el_gap):  # fmt: skip
    """Freeze the contact frame and the lagged friction data of every element at ``x^n`` (module
    docstring).

    ``geometry`` holds the end-of-step collider poses; ``col_pos0``/``col_rot0`` the start poses.
    Outputs: ``el_lambda`` (E,) [N] (0 when mu = 0 or out of contact), ``el_tangent`` (E, 3, 2),
    ``el_fcoef`` (E, 8) (pinned nodes masked), ``el_slip`` (E, 3) [m] the collider's own displacement
    over the step, ``el_normal`` (E, 3) unit normal and ``el_gap`` (E,) signed distance [m] at ``x^n``.

    Anisotropic colliders (``col_aniso`` (C, 6) = ``(mu_along, mu_across, flag, axis_local)``): the
    first tangent is the collider axis projected on the contact plane and the tangents are scaled by
    ``mu_along / mu_bar`` and ``mu_across / mu_bar`` with ``mu_bar = el_mu = sqrt(mu_along mu_across)``:
    the friction potential ``mu_bar lambda f0(|T^T du|)`` then has the elliptic Coulomb force (maximal
    dissipation on the ellipse), and the DUAL solvers' disk ``|r_T| <= mu_bar r_n`` on the scaled rows is
    the ellipse ``(r_along / mu_along)^2 + (r_across / mu_across)^2 <= r_n^2``.
    """
    col_shape, col_params, col_pos, col_rot, aff_nodes, aff_rest, aff_center, aff_rot, aff_half = geometry
    coef = np.empty(ELEMENT_NODES)
    g = np.empty(3)
    scratch = np.empty((4, 3, 3))
    p = np.empty(3)
    q = np.empty(3)
    for e in range(el_count):
        # Distance and normal at the start pose of the collider (the state of x^n).
        if el_kind[e] == KIND_POINT_COLLIDER:
            d = element_distance(e, x_start, el_kind, el_nodes, el_weights, el_target, col_shape, col_params,
                                 col_pos0, col_rot0, aff_nodes, aff_rest, aff_center, aff_rot, aff_half, coef, g,
                                 scratch)  # fmt: skip
        else:
            d = element_distance(e, x_start, el_kind, el_nodes, el_weights, el_target, col_shape, col_params,
                                 col_pos, col_rot, aff_nodes, aff_rest, aff_center, aff_rot, aff_half, coef, g,
                                 scratch)  # fmt: skip
        gn = math.sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2])
        el_lambda[e] = 0.0
        el_gap[e] = d
        for k in range(ELEMENT_NODES):
            node = el_nodes[e, k]
            el_fcoef[e, k] = coef[k] if node >= 0 and node_free[node] else 0.0
        for i in range(3):
            el_slip[e, i] = 0.0
        if gn == 0.0:
            gn = 1.0
            g[2] = 1.0
        if d < delta and el_mu[e] > 0.0:
            s = delta - d
            el_lambda[e] = 3.0 * kappa * s * s / delta * gn
        nx, ny, nz = g[0] / gn, g[1] / gn, g[2] / gn
        el_normal[e, 0] = nx
        el_normal[e, 1] = ny
        el_normal[e, 2] = nz
        # Tangent basis: t1 orthogonal to n built from the least aligned axis, t2 = n x t1.
        if abs(nx) < 0.57735:
            ax, ay, az = 1.0, 0.0, 0.0
        elif abs(ny) < 0.57735:
            ax, ay, az = 0.0, 1.0, 0.0
        else:
            ax, ay, az = 0.0, 0.0, 1.0
        dot = ax * nx + ay * ny + az * nz
        t1x, t1y, t1z = ax - dot * nx, ay - dot * ny, az - dot * nz
        t1n = math.sqrt(t1x * t1x + t1y * t1y + t1z * t1z)
        t1x, t1y, t1z = t1x / t1n, t1y / t1n, t1z / t1n
        el_tangent[e, 0, 0] = t1x
        el_tangent[e, 1, 0] = t1y
        el_tangent[e, 2, 0] = t1z
        el_tangent[e, 0, 1] = ny * t1z - nz * t1y
        el_tangent[e, 1, 1] = nz * t1x - nx * t1z
        el_tangent[e, 2, 1] = nx * t1y - ny * t1x
        if el_kind[e] == KIND_POINT_COLLIDER and col_aniso[el_target[e], 2] > 0.0:
            c = el_target[e]
            R0 = col_rot0[c]
            ax = R0[0, 0] * col_aniso[c, 3] + R0[0, 1] * col_aniso[c, 4] + R0[0, 2] * col_aniso[c, 5]
            ay = R0[1, 0] * col_aniso[c, 3] + R0[1, 1] * col_aniso[c, 4] + R0[1, 2] * col_aniso[c, 5]
            az = R0[2, 0] * col_aniso[c, 3] + R0[2, 1] * col_aniso[c, 4] + R0[2, 2] * col_aniso[c, 5]
            dot = ax * nx + ay * ny + az * nz
            t1x, t1y, t1z = ax - dot * nx, ay - dot * ny, az - dot * nz
            t1n = math.sqrt(t1x * t1x + t1y * t1y + t1z * t1z)
            if t1n > 1.0e-9:  # else the axis is normal to the surface: keep the default frame
                t1x, t1y, t1z = t1x / t1n, t1y / t1n, t1z / t1n
                el_tangent[e, 0, 0] = t1x
                el_tangent[e, 1, 0] = t1y
                el_tangent[e, 2, 0] = t1z
                el_tangent[e, 0, 1] = ny * t1z - nz * t1y
                el_tangent[e, 1, 1] = nz * t1x - nx * t1z
                el_tangent[e, 2, 1] = nx * t1y - ny * t1x
            if el_mu[e] > 0.0:
                for i in range(3):
                    el_tangent[e, i, 0] *= col_aniso[c, 0] / el_mu[e]
                    el_tangent[e, i, 1] *= col_aniso[c, 1] / el_mu[e]
        if el_kind[e] == KIND_POINT_COLLIDER:
            # Displacement over the step of the collider's material point under the contact point.
            c = el_target[e]
            _element_point(e, x_start, el_nodes, el_weights, 0, p)
            R0 = col_rot0[c]
            for i in range(3):
                q[i] = (
                    R0[0, i] * (p[0] - col_pos0[c, 0])
                    + R0[1, i] * (p[1] - col_pos0[c, 1])
                    + R0[2, i] * (p[2] - col_pos0[c, 2])
                )
            R1 = col_rot[c]
            for i in range(3):
                el_slip[e, i] = col_pos[c, i] + R1[i, 0] * q[0] + R1[i, 1] * q[1] + R1[i, 2] * q[2] - p[i]


@njit_kernel
def _tangential_displacement(e, x, x_start, el_nodes, el_tangent, el_fcoef, el_slip, u):
    """``u = T^T (sum_k f_k (x_k - x_k^n) - s)`` (2,); returns |u|."""
    dx0 = -el_slip[e, 0]
    dx1 = -el_slip[e, 1]
    dx2 = -el_slip[e, 2]
    for k in range(ELEMENT_NODES):
        node = el_nodes[e, k]
        if node < 0:
            continue
        f = el_fcoef[e, k]
        dx0 += f * (x[node, 0] - x_start[node, 0])
        dx1 += f * (x[node, 1] - x_start[node, 1])
        dx2 += f * (x[node, 2] - x_start[node, 2])
    for j in range(2):
        u[j] = el_tangent[e, 0, j] * dx0 + el_tangent[e, 1, j] * dx1 + el_tangent[e, 2, j] * dx2
    return math.sqrt(u[0] * u[0] + u[1] * u[1])


@njit_kernel
def friction_energy(x, x_start, el_count, el_nodes, el_lambda, el_mu, el_tangent, el_fcoef, el_slip, eps_h):
    """Lagged friction potential ``sum_e mu_e lambda_e^n f0(|u_e|)`` [J]; ``eps_h = eps_v h`` [m]."""
    u = np.empty(2)
    total = 0.0
    for e in range(el_count):
        lam = el_lambda[e]
        if lam <= 0.0:
            continue
        y = _tangential_displacement(e, x, x_start, el_nodes, el_tangent, el_fcoef, el_slip, u)
        if y < eps_h:
            f0 = -y * y * y / (3.0 * eps_h * eps_h) + y * y / eps_h + eps_h / 3.0
        else:
            f0 = y
        total += el_mu[e] * lam * f0
    return total


@njit_kernel
def friction_gradient(x, x_start, el_count, el_nodes, el_lambda, el_mu, el_tangent, el_fcoef, el_slip, eps_h,
                      out_grad, el_h2):  # fmt: skip
    """Add the friction gradient [N] to ``out_grad``; store the PSD 2x2 tangent Hessians ``el_h2``
    (E, 2, 2) [N/m] for the operator."""
    u = np.empty(2)
    for e in range(el_count):
        lam = el_lambda[e]
        el_h2[e, :, :] = 0.0
        if lam <= 0.0:
            continue
        y = _tangential_displacement(e, x, x_start, el_nodes, el_tangent, el_fcoef, el_slip, u)
        scale = el_mu[e] * lam
        f1_over_y, c_uu = smoothed_friction_factors(y, eps_h)
        inv_y = 1.0 / y if y > 0.0 else 0.0
        for a in range(2):
            for b in range(2):
                el_h2[e, a, b] = scale * ((f1_over_y if a == b else 0.0) + c_uu * u[a] * inv_y * u[b] * inv_y)
        f0 = scale * f1_over_y * u[0]
        f1 = scale * f1_over_y * u[1]
        w0 = el_tangent[e, 0, 0] * f0 + el_tangent[e, 0, 1] * f1
        w1 = el_tangent[e, 1, 0] * f0 + el_tangent[e, 1, 1] * f1
        w2 = el_tangent[e, 2, 0] * f0 + el_tangent[e, 2, 1] * f1
        for k in range(ELEMENT_NODES):
            node = el_nodes[e, k]
            if node < 0:
                continue
            f = el_fcoef[e, k]
            out_grad[node, 0] += f * w0
            out_grad[node, 1] += f * w1
            out_grad[node, 2] += f * w2


# --------------------------------------------------------------------------------------------
# Inertia of the dynamic boxes (consistent mass)
# --------------------------------------------------------------------------------------------


@njit_kernel
def affine_inertia(aff_nodes, aff_mass, v, v_start, gravity, h, out_r):
    """Add ``M_a (v - v^n - h g)`` [N s] of every dynamic box to the flat residual ``out_r``; return
    the inertia energy ``1/2 (v - v^n - h g)^T M_a (v - v^n - h g)`` [J]."""
    total = 0.0
    for a in range(aff_nodes.shape[0]):
        for k in range(4):
            nk = aff_nodes[a, k]
            for j in range(4):
                nl = aff_nodes[a, j]
                m = aff_mass[a, k, j]
                for i in range(3):
                    wl = v[nl, i] - v_start[nl, i] - h * gravity[i]
                    wk = v[nk, i] - v_start[nk, i] - h * gravity[i]
                    total += 0.5 * m * wk * wl
                    out_r[3 * nk + i] += m * wl
    return total


# --------------------------------------------------------------------------------------------
# Operator, preconditioner, PCG
# --------------------------------------------------------------------------------------------


PARALLEL_MATVEC_ROWS = 30000
"""Below this many rows the operator's CSR product runs serially: a parallel region costs more than it
saves on small systems (and much more when the cores are busy)."""


@njit_kernel
def operator_apply(csr, terms, h2, p, out):
    """``out = A p`` with ``csr = (indptr, indices, data)`` and ``terms = (el_count (1,), el_nodes,
    el_coef, el_g, el_stiff, el_fcoef, el_tangent, el_h2, node_free, node_body, vol_grad, vol_curv)``.

    ``vol_grad`` (N, 3) is the gradient of each body's enclosed volume at its nodes and ``vol_curv``
    (B,) the penalty's ``W''(V)`` (0 without penalty): the rank-one term ``W'' g g^T``.
    """
    indptr, indices, data = csr
    el_count_arr, el_nodes, el_coef, el_g, el_stiff, el_fcoef, el_tangent, el_h2, node_free, node_body, vg, vc = terms
    if indptr.shape[0] > PARALLEL_MATVEC_ROWS:
        csr_matvec(indptr, indices, data, p, out)
    else:
        csr_matvec_serial(indptr, indices, data, p, out)
    for e in range(el_count_arr[0]):
        s = el_stiff[e]
        if s > 0.0:
            acc = 0.0
            for k in range(ELEMENT_NODES):
                node = el_nodes[e, k]
                if node >= 0:
                    acc += el_coef[e, k] * (el_g[e, 0] * p[3 * node] + el_g[e, 1] * p[3 * node + 1]
                                            + el_g[e, 2] * p[3 * node + 2])  # fmt: skip
            acc *= h2 * s
            for k in range(ELEMENT_NODES):
                node = el_nodes[e, k]
                if node >= 0 and el_coef[e, k] != 0.0:
                    for i in range(3):
                        out[3 * node + i] += acc * el_coef[e, k] * el_g[e, i]
        if el_h2[e, 0, 0] > 0.0 or el_h2[e, 1, 1] > 0.0:
            t0 = 0.0
            t1 = 0.0
            for k in range(ELEMENT_NODES):
                node = el_nodes[e, k]
                if node >= 0:
                    f = el_fcoef[e, k]
                    for i in range(3):
                        t0 += f * el_tangent[e, i, 0] * p[3 * node + i]
                        t1 += f * el_tangent[e, i, 1] * p[3 * node + i]
            w0 = h2 * (el_h2[e, 0, 0] * t0 + el_h2[e, 0, 1] * t1)
            w1 = h2 * (el_h2[e, 1, 0] * t0 + el_h2[e, 1, 1] * t1)
            for k in range(ELEMENT_NODES):
                node = el_nodes[e, k]
                if node >= 0 and el_fcoef[e, k] != 0.0:
                    f = el_fcoef[e, k]
                    for i in range(3):
                        out[3 * node + i] += f * (el_tangent[e, i, 0] * w0 + el_tangent[e, i, 1] * w1)
    if vc.shape[0] > 0:
        dots = np.zeros(vc.shape[0])
        for n in range(vg.shape[0]):
            b = node_body[n]
            if b >= 0 and vc[b] > 0.0 and node_free[n]:
                dots[b] += vg[n, 0] * p[3 * n] + vg[n, 1] * p[3 * n + 1] + vg[n, 2] * p[3 * n + 2]
        for n in range(vg.shape[0]):
            b = node_body[n]
            if b >= 0 and vc[b] > 0.0 and node_free[n]:
                for i in range(3):
                    out[3 * n + i] += h2 * vc[b] * dots[b] * vg[n, i]


@njit_kernel
def _invert_spd_block(B, size, out):
    """Gauss–Jordan inverse of the leading ``size x size`` block of ``B`` into ``out``; falls back to
    the inverse diagonal when a pivot is not positive. ``B`` is destroyed."""
    for i in range(size):
        for j in range(size):
            out[i, j] = 1.0 if i == j else 0.0
    diag = np.empty(size)
    for i in range(size):
        diag[i] = B[i, i]
    for col in range(size):
        piv = B[col, col]
        if not piv > 0.0:
            for i in range(size):
                for j in range(size):
                    out[i, j] = (1.0 / diag[i] if diag[i] > 0.0 else 1.0) if i == j else 0.0
            return
        inv = 1.0 / piv
        for j in range(size):
            B[col, j] *= inv
            out[col, j] *= inv
        for r in range(size):
            if r != col:
                f = B[r, col]
                if f != 0.0:
                    for j in range(size):
                        B[r, j] -= f * B[col, j]
                        out[r, j] -= f * out[col, j]


@njit_kernel
def build_group_preconditioner(csr, terms, h2, node_group, group_nodes, group_size, out_inv):
    """Inverse of each group's diagonal block of ``A`` into ``out_inv`` (G, 12, 12).

    A group is one soft node (3x3) or the four nodes of a dynamic box (12x12). The block gathers the
    CSR entries and the contact/friction/volume terms whose two nodes are in the same group.
    """
    indptr, indices, data = csr
    el_count_arr, el_nodes, el_coef, el_g, el_stiff, el_fcoef, el_tangent, el_h2, node_free, node_body, vg, vc = terms
    G = group_nodes.shape[0]
    blocks = np.zeros((G, 12, 12))
    local = np.full(node_group.shape[0], -1, dtype=np.int64)
    for grp in range(G):
        for k in range(group_size[grp]):
            local[group_nodes[grp, k]] = k
    for row in range(indptr.shape[0] - 1):
        n = row // 3
        grp = node_group[n]
        for q in range(indptr[row], indptr[row + 1]):
            m = indices[q] // 3
            if node_group[m] == grp:
                blocks[grp, 3 * local[n] + row % 3, 3 * local[m] + indices[q] % 3] += data[q]
    for e in range(el_count_arr[0]):
        for k in range(ELEMENT_NODES):
            nk = el_nodes[e, k]
            if nk < 0:
                continue
            for j in range(ELEMENT_NODES):
                nl = el_nodes[e, j]
                if nl < 0 or node_group[nl] != node_group[nk]:
                    continue
                grp = node_group[nk]
                ck = el_coef[e, k] * el_coef[e, j] * el_stiff[e] * h2
                fk = el_fcoef[e, k] * el_fcoef[e, j] * h2
                for i in range(3):
                    for j in range(3):
                        val = ck * el_g[e, i] * el_g[e, j]
                        for a in range(2):
                            for b in range(2):
                                val += fk * el_tangent[e, i, a] * el_h2[e, a, b] * el_tangent[e, j, b]
                        blocks[grp, 3 * local[nk] + i, 3 * local[nl] + j] += val
    if vc.shape[0] > 0:
        for n in range(vg.shape[0]):
            b = node_body[n]
            if b >= 0 and vc[b] > 0.0 and node_free[n]:
                grp = node_group[n]
                for i in range(3):
                    for j in range(3):
                        blocks[grp, 3 * local[n] + i, 3 * local[n] + j] += h2 * vc[b] * vg[n, i] * vg[n, j]
    for grp in range(G):
        _invert_spd_block(blocks[grp], 3 * group_size[grp], out_inv[grp])


@njit_kernel
def apply_group_preconditioner(node_group, group_nodes, group_size, inv, r, out):
    """``out = P^-1 r`` with the group inverses of :func:`build_group_preconditioner`."""
    for grp in range(group_nodes.shape[0]):
        size = 3 * group_size[grp]
        for i in range(size):
            acc = 0.0
            for j in range(size):
                acc += inv[grp, i, j] * r[3 * group_nodes[grp, j // 3] + j % 3]
            out[3 * group_nodes[grp, i // 3] + i % 3] = acc


@njit_kernel
def world_pcg(csr, terms, h2, precond, rhs, x, tolerance, max_iterations, work):
    """Preconditioned CG for ``A x = rhs`` (``x`` holds the start and the result; ``work`` (4, n)).

    ``precond = (node_group, group_nodes, group_size, inv)``. Returns ``(iterations, relative residual,
    indefinite)``; stops at ``||rhs - A x|| <= tolerance ||rhs||`` or when ``p^T A p <= 0`` (then
    ``indefinite`` is True and ``x`` holds the last iterate, still a descent direction if A is SPD on
    the explored subspace).
    """
    node_group, group_nodes, group_size, inv = precond
    r = work[0]
    z = work[1]
    p = work[2]
    q = work[3]
    operator_apply(csr, terms, h2, x, q)
    for i in range(r.shape[0]):
        r[i] = rhs[i] - q[i]
    b_norm = math.sqrt(flat_dot(rhs, rhs))
    if b_norm == 0.0:
        x[:] = 0.0
        return 0, 0.0, False
    apply_group_preconditioner(node_group, group_nodes, group_size, inv, r, z)
    p[:] = z
    rz = flat_dot(r, z)
    res = math.sqrt(flat_dot(r, r)) / b_norm
    it = 0
    while it < max_iterations and res > tolerance:
        operator_apply(csr, terms, h2, p, q)
        pq = flat_dot(p, q)
        if not pq > 0.0:
            return it, res, True
        alpha = rz / pq
        for i in range(x.shape[0]):
            x[i] += alpha * p[i]
            r[i] -= alpha * q[i]
        it += 1
        res = math.sqrt(flat_dot(r, r)) / b_norm
        apply_group_preconditioner(node_group, group_nodes, group_size, inv, r, z)
        rz_new = flat_dot(r, z)
        beta = rz_new / rz
        rz = rz_new
        for i in range(x.shape[0]):
            p[i] = z[i] + beta * p[i]
    return it, res, False


# --------------------------------------------------------------------------------------------
# Candidate contact elements
# --------------------------------------------------------------------------------------------


@njit_kernel
def collect_contacts(x_a, x_b, margin, delta, point_nodes, point_weights, point_friction, col_kind, col_friction,
                     col_aniso, geometry_a, geometry_b, aff_collider, aff_corner_weights, point_body, tri_points,
                     el_kind, el_nodes, el_weights, el_target, el_mu):  # fmt: skip
    """Fill the element arrays with every (point, collider) pair closer than ``delta + margin`` at either
    ``x_a``/``geometry_a`` (start of step) or ``x_b``/``geometry_b`` (end of step).

    Points: the soft bodies' contact points ``sum_k point_weights[p, k] x[point_nodes[p, k]]`` ((P, 4),
    -1 padded; ``margin`` (N,) [m] per node, of the point's first node) against static/kinematic
    colliders (``col_kind`` 0/1) and dynamic boxes; box corners against static/kinematic colliders.
    Soft–soft: every contact point against every surface triangle ``tri_points`` (K, 3) (corners are
    contact points) of another body (``point_body`` (P,)) within ``2 delta`` at either state, found through a
    uniform grid over the points.
    ``el_mu`` gets the geometric mean of the two friction coefficients. Returns the number of pairs found;
    when it exceeds the capacity (``el_kind.shape[0]``) only the first ones are stored and the caller
    must grow the arrays and call again.
    """
    capacity = el_kind.shape[0]
    coef = np.empty(ELEMENT_NODES)
    g = np.empty(3)
    scratch = np.empty((4, 3, 3))
    one_kind = np.zeros(1, dtype=np.int64)
    one_nodes = np.full((1, ELEMENT_NODES), -1, dtype=np.int64)
    one_weights = np.zeros((1, ELEMENT_NODES))
    one_target = np.zeros(1, dtype=np.int64)
    aff_nodes = geometry_a[4]
    count = 0
    C = col_kind.shape[0]
    A = aff_collider.shape[0]
    P = point_nodes.shape[0]
    for target in range(C + A):
        is_box = target >= C
        if not is_box and col_kind[target] == 2:
            continue
        for p in range(P + (0 if is_box else 8 * A)):
            one_nodes[0, :] = -1
            one_weights[0, :] = 0.0
            if p < P:
                for k in range(4):
                    one_nodes[0, k] = point_nodes[p, k]
                    one_weights[0, k] = point_weights[p, k]
                mu_point = point_friction[p]
            else:  # a corner of a dynamic box
                a = (p - P) // 8
                for k in range(4):
                    one_nodes[0, k] = aff_nodes[a, k]
                    one_weights[0, k] = aff_corner_weights[a, (p - P) % 8, k]
                mu_point = col_friction[aff_collider[a]]
            if is_box:
                one_kind[0] = KIND_POINT_BOX
                one_target[0] = target - C
                for k in range(4):
                    one_nodes[0, 4 + k] = aff_nodes[target - C, k]
                mu_other = col_friction[aff_collider[target - C]]
            else:
                one_kind[0] = KIND_POINT_COLLIDER
                one_target[0] = target
                mu_other = col_friction[target]
            d = _pair_distance(x_a, x_b, geometry_a, geometry_b, one_kind, one_nodes, one_weights, one_target,
                               coef, g, scratch)  # fmt: skip
            if d < delta + margin[one_nodes[0, 0]]:
                if count < capacity:
                    el_kind[count] = one_kind[0]
                    el_target[count] = one_target[0]
                    for k in range(ELEMENT_NODES):
                        el_nodes[count, k] = one_nodes[0, k]
                        el_weights[count, k] = one_weights[0, k]
                    el_mu[count] = math.sqrt(mu_point * mu_other)
                    if not is_box and col_aniso[target, 2] > 0.0:  # a structured surface keeps its ellipse
                        el_mu[count] = math.sqrt(col_aniso[target, 0] * col_aniso[target, 1])
                count += 1
    K = tri_points.shape[0]
    if K == 0:
        return count
    # Soft-soft: point positions at both states, then triangle boxes against points.
    pos = np.empty((2, P, 3))
    for p in range(P):
        for state in range(2):
            xs = x_a if state == 0 else x_b
            for i in range(3):
                acc = 0.0
                for k in range(4):
                    node = point_nodes[p, k]
                    if node >= 0:
                        acc += point_weights[p, k] * xs[node, i]
                pos[state, p, i] = acc
    # Uniform grid over the points' start positions: a triangle only visits the cells its box (grown by
    # the contact reach, the largest point margin and the largest point travel) overlaps.
    # Soft-soft pairs use a reach of two contact layers, without the velocity margin: two bodies moving
    # together would otherwise pair every point with every nearby triangle. Pairs that close in during the
    # step are found by the solver's re-collection at the end-of-step positions.
    reach = 2.0 * delta
    travel = 0.0
    glo = np.full(3, 1.0e300)
    ghi = np.full(3, -1.0e300)
    for p in range(P):
        d2 = 0.0
        for i in range(3):
            d2 += (pos[1, p, i] - pos[0, p, i]) ** 2
            glo[i] = min(glo[i], pos[0, p, i])
            ghi[i] = max(ghi[i], pos[0, p, i])
        travel = max(travel, math.sqrt(d2))
    extents = np.empty(K)
    for t in range(K):
        e_max = 0.0
        for i in range(3):
            a = pos[0, tri_points[t, 0], i]
            b = pos[0, tri_points[t, 1], i]
            c = pos[0, tri_points[t, 2], i]
            e_max = max(e_max, max(a, b, c) - min(a, b, c))
        extents[t] = e_max
    grow = reach + 2.0 * travel
    cell = max(float(np.median(extents)), grow, 1.0e-9)
    dims = np.empty(3, dtype=np.int64)
    for i in range(3):
        dims[i] = int((ghi[i] - glo[i]) / cell) + 1
    keys = np.empty(P, dtype=np.int64)
    for p in range(P):
        ix = int((pos[0, p, 0] - glo[0]) / cell)
        iy = int((pos[0, p, 1] - glo[1]) / cell)
        iz = int((pos[0, p, 2] - glo[2]) / cell)
        keys[p] = (ix * dims[1] + iy) * dims[2] + iz
    order = np.argsort(keys, kind="mergesort")
    sorted_keys = keys[order]
    lo = np.empty(3)
    hi = np.empty(3)
    cmin = np.empty(3, dtype=np.int64)
    cmax = np.empty(3, dtype=np.int64)
    for t in range(K):
        body = point_body[tri_points[t, 0]]
        for i in range(3):
            lo[i] = 1.0e300
            hi[i] = -1.0e300
            for j in range(3):
                for state in range(2):
                    v = pos[state, tri_points[t, j], i]
                    lo[i] = min(lo[i], v)
                    hi[i] = max(hi[i], v)
            cmin[i] = max(int(math.floor((lo[i] - grow - glo[i]) / cell)), 0)
            cmax[i] = min(int(math.floor((hi[i] + grow - glo[i]) / cell)), dims[i] - 1)
        for ix in range(cmin[0], cmax[0] + 1):
            for iy in range(cmin[1], cmax[1] + 1):
                for iz in range(cmin[2], cmax[2] + 1):
                    key = (ix * dims[1] + iy) * dims[2] + iz
                    first = np.searchsorted(sorted_keys, key)
                    for slot in range(first, P):
                        if sorted_keys[slot] != key:
                            break
                        p = order[slot]
                        count = _add_point_triangle(
                            p, t, body, reach, lo, hi, pos, point_nodes, point_weights, point_friction, point_body,
                            tri_points, x_a, x_b, geometry_a, geometry_b, one_kind, one_nodes, one_weights,
                            one_target, coef, g, scratch, el_kind, el_nodes, el_weights, el_target, el_mu, count,
                        )  # fmt: skip
    return count


@njit_kernel
def _add_point_triangle(p, t, body, r, lo, hi, pos, point_nodes, point_weights, point_friction, point_body,
                        tri_points, x_a, x_b, geometry_a, geometry_b, one_kind, one_nodes, one_weights, one_target,
                        coef, g, scratch, el_kind, el_nodes, el_weights, el_target, el_mu, count):  # fmt: skip
    """Append the (point p, triangle t) element if p is another body's point within ``r`` of t (swept box
    ``lo``/``hi`` over both states) at either state; return the new count (elements beyond the capacity
    are counted, not stored)."""
    if point_body[p] == body:
        return count
    for i in range(3):
        if min(pos[0, p, i], pos[1, p, i]) > hi[i] + r or max(pos[0, p, i], pos[1, p, i]) < lo[i] - r:
            return count
    one_kind[0] = KIND_POINT_TRIANGLE
    one_target[0] = t
    for k in range(4):
        one_nodes[0, k] = point_nodes[p, k]
        one_weights[0, k] = point_weights[p, k]
        for j in range(3):
            one_nodes[0, 4 + 4 * j + k] = point_nodes[tri_points[t, j], k]
            one_weights[0, 4 + 4 * j + k] = point_weights[tri_points[t, j], k]
    d = _pair_distance(x_a, x_b, geometry_a, geometry_b, one_kind, one_nodes, one_weights, one_target, coef, g,
                       scratch)  # fmt: skip
    if d < r:
        if count < el_kind.shape[0]:
            el_kind[count] = KIND_POINT_TRIANGLE
            el_target[count] = t
            for k in range(ELEMENT_NODES):
                el_nodes[count, k] = one_nodes[0, k]
                el_weights[count, k] = one_weights[0, k]
            el_mu[count] = math.sqrt(point_friction[p] * point_friction[tri_points[t, 0]])
        count += 1
    return count


@njit_kernel
def _pair_distance(x_a, x_b, geometry_a, geometry_b, kind, nodes, weights, target, coef, g, scratch):
    """min over the two states of the element's signed distance (element 0 of the one-element arrays)."""
    cs, cp, pos, rot, an, ar, ac, arot, ah = geometry_a
    d_a = element_distance(0, x_a, kind, nodes, weights, target, cs, cp, pos, rot, an, ar, ac, arot, ah, coef, g,
                           scratch)  # fmt: skip
    cs, cp, pos, rot, an, ar, ac, arot, ah = geometry_b
    d_b = element_distance(0, x_b, kind, nodes, weights, target, cs, cp, pos, rot, an, ar, ac, arot, ah, coef, g,
                           scratch)  # fmt: skip
    return min(d_a, d_b)


@njit_kernel
def contact_normal_forces(x, el_count, el_kind, el_nodes, el_weights, el_target, geometry, kappa, delta, node_body,
                          aff_collider, out, out_pair):  # fmt: skip
    """Accumulate the penalty normal force [N] that soft body ``b`` exerts on collider ``c`` into
    ``out`` (B, C, 3): ``-lambda_e n_e`` summed over the body's contact points (box corners, which
    belong to no soft body, are skipped); and the force soft body ``a`` exerts on soft body ``b``
    through a's points on b's triangles into ``out_pair`` (B, B, 3)."""
    col_shape, col_params, col_pos, col_rot, aff_nodes, aff_rest, aff_center, aff_rot, aff_half = geometry
    coef = np.empty(ELEMENT_NODES)
    g = np.empty(3)
    scratch = np.empty((4, 3, 3))
    for e in range(el_count):
        body = node_body[el_nodes[e, 0]]
        if body < 0:
            continue
        d = element_distance(e, x, el_kind, el_nodes, el_weights, el_target, col_shape, col_params, col_pos, col_rot,
                             aff_nodes, aff_rest, aff_center, aff_rot, aff_half, coef, g, scratch)  # fmt: skip
        if d >= delta:
            continue
        s = delta - d
        lam = 3.0 * kappa * s * s / delta
        if el_kind[e] == KIND_POINT_TRIANGLE:
            other = node_body[el_nodes[e, 4]]
            for i in range(3):
                out_pair[body, other, i] -= lam * g[i]
            continue
        c = el_target[e] if el_kind[e] == KIND_POINT_COLLIDER else aff_collider[el_target[e]]
        for i in range(3):
            out[body, c, i] -= lam * g[i]


@njit_kernel
def project_blocks_psd(blocks):
    """Project every (n, n) block of ``blocks`` (K, n, n) to PSD in place (Jacobi, ``project_psd``)."""
    n = blocks.shape[1]
    evals = np.empty(n)
    evecs = np.empty((n, n))
    work = np.empty((n, n))
    for k in range(blocks.shape[0]):
        project_psd(blocks[k], evals, evecs, work, blocks[k])


@njit_kernel
def contact_jacobian_apply(u, el_count, el_nodes, el_fcoef, el_normal, el_tangent, out):
    """Contact-space velocities ``out`` (3E,) = ``J u``: per element ``[n, t1, t2] . sum_k f_k u_k`` with
    ``u`` flat (3N,) [m/s]."""
    for e in range(el_count):
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        for k in range(ELEMENT_NODES):
            node = el_nodes[e, k]
            if node < 0:
                continue
            f = el_fcoef[e, k]
            a0 += f * u[3 * node]
            a1 += f * u[3 * node + 1]
            a2 += f * u[3 * node + 2]
        out[3 * e] = el_normal[e, 0] * a0 + el_normal[e, 1] * a1 + el_normal[e, 2] * a2
        for j in range(2):
            out[3 * e + 1 + j] = el_tangent[e, 0, j] * a0 + el_tangent[e, 1, j] * a1 + el_tangent[e, 2, j] * a2


@njit_kernel
def contact_jacobian_transpose_apply(r, el_count, el_nodes, el_fcoef, el_normal, el_tangent, out):
    """Add ``J^T r`` (node impulses [N s]) to ``out`` (3N,) for contact impulses ``r`` (3E,)."""
    for e in range(el_count):
        w0 = el_normal[e, 0] * r[3 * e] + el_tangent[e, 0, 0] * r[3 * e + 1] + el_tangent[e, 0, 1] * r[3 * e + 2]
        w1 = el_normal[e, 1] * r[3 * e] + el_tangent[e, 1, 0] * r[3 * e + 1] + el_tangent[e, 1, 1] * r[3 * e + 2]
        w2 = el_normal[e, 2] * r[3 * e] + el_tangent[e, 2, 0] * r[3 * e + 1] + el_tangent[e, 2, 1] * r[3 * e + 2]
        for k in range(ELEMENT_NODES):
            node = el_nodes[e, k]
            if node < 0:
                continue
            f = el_fcoef[e, k]
            out[3 * node] += f * w0
            out[3 * node + 1] += f * w1
            out[3 * node + 2] += f * w2
