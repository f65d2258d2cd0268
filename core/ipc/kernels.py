"""IPC kernels over the surface map: barrier and friction terms, inertia and pins, the Newton operator.

Notation (module :mod:`.ipc_world`): N unknown nodes ``x`` (N, 3); S surface vertices
``x_s = offset_s + sum_j w_sj x[n_sj]``; a **pair** is four surface vertices in the 12-dof layout of
:mod:`.distance` — ``[p, t0, t1, t2]`` (kind ``PAIR_PT``) or ``[ea0, ea1, eb0, eb1]`` (``PAIR_EE``).

Objective of one backward-Euler step (course eq. 291 with the lagged friction of eq. 298, in the
IPC paper's scaling, i.e. everything multiplied by h^2):

    f(x) = 1/2 ||x - x~||_M^2 + h^2 Psi(x) + 1/2 sum_i k_i |x_i - x^_i|^2
           + kappa sum_k m_k b(d_k^2, dhat^2) + sum_k mu_k N~_k f0(|T_k^T dx_k|)

``kappa`` is the barrier stiffness in objective units (``h^2`` times the physical one), ``m_k`` the
edge–edge mollifier (1 for point–triangle), ``N~_k = h^2 N_k`` the lagged normal force scaled like
the objective and ``k_i`` the stiff springs that hold pinned and kinematic nodes on their targets.
Gradients and Hessians of pair terms live in surface-vertex space (12 entries / 12x12 blocks per
pair) and reach the nodes through the surface weights (``scatter``/``gather``); :mod:`.newton_system`
applies them matrix-free on top of the node-block matrix holding mass, elasticity and springs.
"""

import math

import numpy as np

from ..fem.materials import project_psd
from ..jit import njit_kernel
from .barrier import barrier, barrier_first_derivative, barrier_second_derivative
from .distance import (
    edge_edge_distance2,
    edge_edge_distance2_derivatives,
    edge_edge_mollifier,
    edge_edge_mollifier_threshold,
    edge_edge_mollifier_value,
    point_triangle_distance2,
    point_triangle_distance2_derivatives,
)
from .friction import (
    edge_edge_closest_weights,
    edge_edge_tangent_basis,
    friction_potential,
    friction_potential_value,
    point_triangle_closest_weights,
    point_triangle_tangent_basis,
    set_tangent_columns,
)

PAIR_PT = 0
"""Pair kind: point–triangle, vertices ``[p, t0, t1, t2]``."""
PAIR_EE = 1
"""Pair kind: edge–edge, vertices ``[ea0, ea1, eb0, eb1]``."""


# --------------------------------------------------------------------------------------------
# Surface map
# --------------------------------------------------------------------------------------------


@njit_kernel
def surface_positions(x, surface_nodes, surface_weights, surface_offset, out):
    """``out[s] = offset_s + sum_j w_sj x[n_sj]`` [m]; x (N, 3), out (S, 3)."""
    for s in range(out.shape[0]):
        for i in range(3):
            out[s, i] = surface_offset[s, i]
        for j in range(4):
            n = surface_nodes[s, j]
            if n >= 0:
                w = surface_weights[s, j]
                for i in range(3):
                    out[s, i] += w * x[n, i]


@njit_kernel
def scatter_surface(values, surface_nodes, surface_weights, out):
    """Add the transpose map: ``out[n_sj] += w_sj values[s]``; values (S, 3), out (N, 3)."""
    for s in range(values.shape[0]):
        for j in range(4):
            n = surface_nodes[s, j]
            if n >= 0:
                w = surface_weights[s, j]
                for i in range(3):
                    out[n, i] += w * values[s, i]


@njit_kernel
def pair_quads(vf_pairs, ee_pairs, faces, edges, out_quads, out_kind):
    """Candidate pairs as vertex quadruples: vertex–face rows (v, f) then edge–edge rows (a, b).

    ``out_quads`` (K + L, 4) int64 and ``out_kind`` (K + L,) int64 (``PAIR_PT`` / ``PAIR_EE``).
    """
    k = 0
    for r in range(vf_pairs.shape[0]):
        f = vf_pairs[r, 1]
        out_quads[k, 0] = vf_pairs[r, 0]
        out_quads[k, 1] = faces[f, 0]
        out_quads[k, 2] = faces[f, 1]
        out_quads[k, 3] = faces[f, 2]
        out_kind[k] = PAIR_PT
        k += 1
    for r in range(ee_pairs.shape[0]):
        a = ee_pairs[r, 0]
        b = ee_pairs[r, 1]
        out_quads[k, 0] = edges[a, 0]
        out_quads[k, 1] = edges[a, 1]
        out_quads[k, 2] = edges[b, 0]
        out_quads[k, 3] = edges[b, 1]
        out_kind[k] = PAIR_EE
        k += 1


@njit_kernel
def _relative_motion_bound(xs0, xs1, q, edge_edge):
    """How much the distance of the pair ``q`` can shrink along ``xs0 -> xs1`` [m]: the additive-CCD bound (course
    §5.3.3 / :mod:`.ccd`), each side's fastest vertex relative to the four vertices' mean displacement."""
    m0 = 0.0
    m1 = 0.0
    m2 = 0.0
    for a in range(4):
        m0 += 0.25 * (xs1[q[a], 0] - xs0[q[a], 0])
        m1 += 0.25 * (xs1[q[a], 1] - xs0[q[a], 1])
        m2 += 0.25 * (xs1[q[a], 2] - xs0[q[a], 2])
    first = 0.0
    second = 0.0
    for a in range(4):
        d0 = xs1[q[a], 0] - xs0[q[a], 0] - m0
        d1 = xs1[q[a], 1] - xs0[q[a], 1] - m1
        d2 = xs1[q[a], 2] - xs0[q[a], 2] - m2
        n = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if a == 0 or (edge_edge and a == 1):
            first = max(first, n)
        else:
            second = max(second, n)
    return first + second


@njit_kernel
def near_pairs(xs0, xs1, vf_pairs, ee_pairs, faces, edges, dhat):
    """The candidate pairs that can come closer than ``dhat`` [m] on the straight motion ``xs0 -> xs1`` (S, 3).

    A pair at distance ``d0`` at ``xs0`` stays farther than ``d0 - L`` all along, ``L`` the relative motion bound
    of :func:`_relative_motion_bound`; pairs with ``d0 - L >= dhat`` carry no barrier anywhere on the segment and
    are dropped (with ``xs1 = xs0``: exactly the pairs closer than dhat). Broad-phase boxes cannot see that two
    neighbouring triangles of one surface are a cell apart, and most candidates of a resting body are such pairs.
    Returns ``(vf_pairs, ee_pairs)`` kept, in their order.
    """
    keep_vf = np.empty(vf_pairs.shape[0], np.bool_)
    keep_ee = np.empty(ee_pairs.shape[0], np.bool_)
    q = np.empty(4, np.int64)
    for r in range(vf_pairs.shape[0]):
        f = vf_pairs[r, 1]
        q[0] = vf_pairs[r, 0]
        q[1] = faces[f, 0]
        q[2] = faces[f, 1]
        q[3] = faces[f, 2]
        d0 = math.sqrt(_pair_distance2(xs0, q, np.int64(PAIR_PT)))
        keep_vf[r] = d0 - _relative_motion_bound(xs0, xs1, q, np.bool_(False)) < dhat
    for r in range(ee_pairs.shape[0]):
        a = ee_pairs[r, 0]
        b = ee_pairs[r, 1]
        q[0] = edges[a, 0]
        q[1] = edges[a, 1]
        q[2] = edges[b, 0]
        q[3] = edges[b, 1]
        d0 = math.sqrt(_pair_distance2(xs0, q, np.int64(PAIR_EE)))
        keep_ee[r] = d0 - _relative_motion_bound(xs0, xs1, q, np.bool_(True)) < dhat
    return vf_pairs[keep_vf], ee_pairs[keep_ee]


@njit_kernel
def _pair_distance2(xs, q, kind):
    if kind == PAIR_PT:
        return point_triangle_distance2(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]])
    return edge_edge_distance2(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]])


@njit_kernel
def _mollifier_threshold(rest, q):
    return edge_edge_mollifier_threshold(rest[q[0]], rest[q[1]], rest[q[2]], rest[q[3]])


# --------------------------------------------------------------------------------------------
# Barrier
# --------------------------------------------------------------------------------------------


@njit_kernel
def barrier_energy(xs, quads, kinds, rest, dhat2):
    """``(sum_k m_k b(d_k^2, dhat^2), min_k d_k^2)`` over the pairs [m^4, m^2]; +inf on contact (d = 0).

    xs (S, 3) surface positions, quads (P, 4), kinds (P,), rest (S, 3) rest positions (mollifier).
    """
    total = 0.0
    dmin = np.inf
    for k in range(quads.shape[0]):
        q = quads[k]
        d2 = _pair_distance2(xs, q, kinds[k])
        if d2 < dmin:
            dmin = d2
        if d2 >= dhat2:
            continue
        if d2 <= 0.0:
            return np.inf, 0.0
        b = barrier(d2, dhat2)
        if kinds[k] == PAIR_EE:
            b *= edge_edge_mollifier_value(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]], _mollifier_threshold(rest, q))
        total += b
    return total, dmin


@njit_kernel
def _project_stencil(blk, q, free, scratch, evals, evecs, work):
    """Clamp the 12x12 pair block ``blk`` to PSD on its stencil: the rows of the vertices that move (``free``)
    and take part in the distance (a non-zero row); the other rows and columns are set to 0.

    Rows of fixed vertices (static colliders) never reach the Newton matrix, and zero rows stay zero under the
    projection, so this is the projection of the Hessian with respect to what can move: a point against a
    static plane is a 3x3 eigenproblem instead of 12x12 (~40 us of cyclic Jacobi per pair otherwise).
    ``scratch``, ``evecs``, ``work``: four (3m, 3m) buffers each (m = 1..4 vertices), ``evals`` four (3m,).
    """
    slots = np.empty(4, np.int64)
    m = 0
    for a in range(4):
        keep = False
        if free[q[a]]:
            for r in range(3 * a, 3 * a + 3):
                for c in range(12):
                    if blk[r, c] != 0.0:
                        keep = True
        if keep:
            slots[m] = a
            m += 1
        else:
            for r in range(3 * a, 3 * a + 3):
                for c in range(12):
                    blk[r, c] = 0.0
                    blk[c, r] = 0.0
    if m == 0:
        return
    sub = scratch[m - 1]
    for i in range(3 * m):
        ri = 3 * slots[i // 3] + i % 3
        for j in range(3 * m):
            sub[i, j] = blk[ri, 3 * slots[j // 3] + j % 3]
    project_psd(sub, evals[m - 1], evecs[m - 1], work[m - 1], sub)
    for i in range(3 * m):
        ri = 3 * slots[i // 3] + i % 3
        for j in range(3 * m):
            blk[ri, 3 * slots[j // 3] + j % 3] = sub[i, j]


@njit_kernel
def stencil_scratch():
    """Buffers of :func:`_project_stencil`: ``(scratch, evals, evecs, work)``, each a tuple over m = 1..4."""
    return (
        (np.empty((3, 3)), np.empty((6, 6)), np.empty((9, 9)), np.empty((12, 12))),
        (np.empty(3), np.empty(6), np.empty(9), np.empty(12)),
        (np.empty((3, 3)), np.empty((6, 6)), np.empty((9, 9)), np.empty((12, 12))),
        (np.empty((3, 3)), np.empty((6, 6)), np.empty((9, 9)), np.empty((12, 12))),
    )


@njit_kernel
def barrier_assemble(xs, quads, kinds, rest, free, dhat2, kappa, out_grad, out_quads, out_blocks):
    """Barrier gradient (added to ``out_grad`` (S, 3)) and PSD-projected 12x12 Hessians of the active pairs.

    Active pairs (``d^2 < dhat^2``) are compacted into ``out_quads`` (P, 4) / ``out_blocks`` (P, 12, 12)
    (capacity ``quads.shape[0]``). Per pair, with ``B = m b``:
    ``grad B = m b' grad d^2 + b grad m``,
    ``hess B = m (b'' g g^T + b' H_d) + b' (g gm^T + gm g^T) + b H_m`` (g = grad d^2, gm = grad m),
    times ``kappa``, then clamped to PSD (course §5.3.2: per-contact local projection) on the pair's stencil of
    moving vertices (``free`` (S,) bool: the vertex depends on an unknown; :func:`_project_stencil`).
    Returns ``(active count, energy kappa sum B)``.
    """
    g = np.empty(12)
    H = np.empty((12, 12))
    gm = np.empty(12)
    Hm = np.empty((12, 12))
    scratch, evals, evecs, work = stencil_scratch()
    count = 0
    energy = 0.0
    for k in range(quads.shape[0]):
        q = quads[k]
        d2 = _pair_distance2(xs, q, kinds[k])
        if d2 >= dhat2:
            continue
        if kinds[k] == PAIR_PT:
            point_triangle_distance2_derivatives(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]], g, H)
            m = 1.0
        else:
            edge_edge_distance2_derivatives(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]], g, H)
            m = edge_edge_mollifier(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]], _mollifier_threshold(rest, q), gm, Hm)
        b = barrier(d2, dhat2)
        b1 = barrier_first_derivative(d2, dhat2)
        b2 = barrier_second_derivative(d2, dhat2)
        energy += kappa * m * b
        blk = out_blocks[count]
        for i in range(12):
            for j in range(12):
                blk[i, j] = kappa * m * (b2 * g[i] * g[j] + b1 * H[i, j])
        if kinds[k] == PAIR_EE and m < 1.0:
            for i in range(12):
                for j in range(12):
                    blk[i, j] += kappa * (b1 * (g[i] * gm[j] + gm[i] * g[j]) + b * Hm[i, j])
        for a in range(4):
            for i in range(3):
                r = 3 * a + i
                val = kappa * m * b1 * g[r]
                if kinds[k] == PAIR_EE and m < 1.0:
                    val += kappa * b * gm[r]
                out_grad[q[a], i] += val
        _project_stencil(blk, q, free, scratch, evals, evecs, work)
        for a in range(4):
            out_quads[count, a] = q[a]
        count += 1
    return count, energy


# --------------------------------------------------------------------------------------------
# Lagged friction (course eq. 295-298)
# --------------------------------------------------------------------------------------------


@njit_kernel
def friction_lag(xs, quads, kinds, rest, dhat2, kappa, surface_friction, surface_axis, surface_mu_ab,
                 out_quads, out_weights, out_basis, out_coef, out_eps):  # fmt: skip
    """Freeze the friction data of every pair closer than dhat at the positions ``xs`` (the lag point).

    Per active pair: ``out_weights`` (P, 4) closest-point weights (relative vector ``sum w_k x_k``),
    ``out_basis`` (P, 3, 2) tangent basis, ``out_coef`` (P,) = ``mu N~`` with the lagged normal force in
    objective units ``N~ = kappa m |b'(d^2)| 2 d`` (``h^2`` times the force [N]) and ``out_eps`` (P,) the
    factor on ``eps_v h``. mu is the geometric mean of the two primitives' coefficients. If a primitive
    belongs to an anisotropic collider (``surface_axis`` non-zero), the basis is its structure axis
    projected on the tangent plane and the normal x axis, scaled by the (geometric-mean) coefficients
    along and across (the collider's ellipse as is, not combined with the other surface's mu), so that
    ``f0(|T^T u|)`` is the elliptic Coulomb potential (course §6, eq. 308);
    then mu = 1 and ``out_eps`` is their mean (keeps ``eps_v`` a slip velocity). Returns the count.
    """
    gm = np.empty(12)
    Hm = np.empty((12, 12))
    count = 0
    for k in range(quads.shape[0]):
        q = quads[k]
        d2 = _pair_distance2(xs, q, kinds[k])
        if d2 >= dhat2 or d2 <= 0.0:
            continue
        w = out_weights[count]
        T = out_basis[count]
        if kinds[k] == PAIR_PT:
            point_triangle_closest_weights(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]], w)
            point_triangle_tangent_basis(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]], T)
            m = 1.0
            second = q[1]
        else:
            edge_edge_closest_weights(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]], w)
            edge_edge_tangent_basis(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]], T)
            m = edge_edge_mollifier(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]], _mollifier_threshold(rest, q), gm, Hm)
            second = q[2]
        first = q[0]
        normal = kappa * m * abs(barrier_first_derivative(d2, dhat2)) * 2.0 * math.sqrt(d2)
        mu_a = surface_friction[first]
        mu_b = surface_friction[second]
        aniso = -1
        if surface_axis[second, 0] != 0.0 or surface_axis[second, 1] != 0.0 or surface_axis[second, 2] != 0.0:
            aniso = second
        elif surface_axis[first, 0] != 0.0 or surface_axis[first, 1] != 0.0 or surface_axis[first, 2] != 0.0:
            aniso = first
        if aniso < 0:
            out_coef[count] = math.sqrt(mu_a * mu_b) * normal
            out_eps[count] = 1.0
        else:
            # Tangent-plane normal n = t0 x t1; along = axis minus its normal part.
            n0 = T[1, 0] * T[2, 1] - T[2, 0] * T[1, 1]
            n1 = T[2, 0] * T[0, 1] - T[0, 0] * T[2, 1]
            n2 = T[0, 0] * T[1, 1] - T[1, 0] * T[0, 1]
            ax = surface_axis[aniso]
            an = ax[0] * n0 + ax[1] * n1 + ax[2] * n2
            a0 = ax[0] - an * n0
            a1 = ax[1] - an * n1
            a2 = ax[2] - an * n2
            norm = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
            mu_along = surface_mu_ab[aniso, 0]  # the collider's ellipse as is (like the soft engine)
            mu_across = surface_mu_ab[aniso, 1]
            if norm > 1e-12:  # axis along the normal: no preferred tangent direction, keep the basis
                a0 /= norm
                a1 /= norm
                a2 /= norm
                set_tangent_columns(n0, n1, n2, a0, a1, a2, T)
            for i in range(3):
                T[i, 0] *= mu_along
                T[i, 1] *= mu_across
            out_coef[count] = normal
            out_eps[count] = 0.5 * (mu_along + mu_across)
        for a in range(4):
            out_quads[count, a] = q[a]
        count += 1
    return count


@njit_kernel
def _pair_displacement(xs, xs_start, q, dx):
    for a in range(4):
        for i in range(3):
            dx[3 * a + i] = xs[q[a], i] - xs_start[q[a], i]


@njit_kernel
def friction_energy(xs, xs_start, count, quads, weights, basis, coef, eps, eps_h):
    """Lagged friction potential ``sum_k coef_k f0(|T_k^T sum_a w_ka dx_a|)`` (objective units)."""
    dx = np.empty(12)
    total = 0.0
    for k in range(count):
        _pair_displacement(xs, xs_start, quads[k], dx)
        total += friction_potential_value(dx, basis[k], weights[k], coef[k], 1.0, eps[k] * eps_h)
    return total


@njit_kernel
def friction_assemble(xs, xs_start, count, quads, weights, basis, coef, eps, eps_h, out_grad, out_blocks):
    """Friction gradient (added to ``out_grad`` (S, 3)) and 12x12 Hessians (PSD by construction) per pair."""
    dx = np.empty(12)
    g = np.empty(12)
    total = 0.0
    for k in range(count):
        q = quads[k]
        _pair_displacement(xs, xs_start, q, dx)
        total += friction_potential(dx, basis[k], weights[k], coef[k], 1.0, eps[k] * eps_h, g, out_blocks[k])
        for a in range(4):
            for i in range(3):
                out_grad[q[a], i] += g[3 * a + i]
    return total


# --------------------------------------------------------------------------------------------
# Inertia and springs
# --------------------------------------------------------------------------------------------


@njit_kernel
def inertia_energy_gradient(x, x_tilde, node_mass, aff_nodes, aff_mass, spring, target, out_grad):
    """``1/2 ||x - x~||_M^2 + 1/2 sum_i k_i |x_i - x^_i|^2`` [kg m^2] and its gradient (written to out_grad).

    Lumped masses ``node_mass`` (N,) plus the consistent 4x4 mass ``aff_mass`` (A, 4, 4) of each dynamic
    box on its nodes ``aff_nodes`` (A, 4); ``spring`` (N,) [kg] holds pinned and kinematic nodes at ``target``.
    """
    e = 0.0
    for n in range(x.shape[0]):
        m = node_mass[n]
        k = spring[n]
        for i in range(3):
            r = x[n, i] - x_tilde[n, i]
            s = x[n, i] - target[n, i]
            e += 0.5 * (m * r * r + k * s * s)
            out_grad[n, i] = m * r + k * s
    for a in range(aff_nodes.shape[0]):
        for p in range(4):
            np_ = aff_nodes[a, p]
            for q in range(4):
                nq = aff_nodes[a, q]
                M = aff_mass[a, p, q]
                for i in range(3):
                    rp = x[np_, i] - x_tilde[np_, i]
                    rq = x[nq, i] - x_tilde[nq, i]
                    e += 0.5 * M * rp * rq
                    out_grad[np_, i] += M * rq
    return e


@njit_kernel
def inertia_energy(x, x_tilde, node_mass, aff_nodes, aff_mass, spring, target):
    """Value of :func:`inertia_energy_gradient` without the gradient."""
    e = 0.0
    for n in range(x.shape[0]):
        m = node_mass[n]
        k = spring[n]
        for i in range(3):
            r = x[n, i] - x_tilde[n, i]
            s = x[n, i] - target[n, i]
            e += 0.5 * (m * r * r + k * s * s)
    for a in range(aff_nodes.shape[0]):
        for p in range(4):
            for q in range(4):
                M = aff_mass[a, p, q]
                for i in range(3):
                    e += (
                        0.5
                        * M
                        * (x[aff_nodes[a, p], i] - x_tilde[aff_nodes[a, p], i])
                        * (x[aff_nodes[a, q], i] - x_tilde[aff_nodes[a, q], i])
                    )
    return e
