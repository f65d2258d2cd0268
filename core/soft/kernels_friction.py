"""Lagged smoothed friction on the soft world's contact elements (IPC style, as :mod:`.kernels_contact`), and
the contact Jacobian of the DUAL formulation.

Frozen at ``x^n`` per element (:func:`friction_setup`): normal force ``lambda^n`` [N], tangent basis ``T``
(3x2), displacement coefficients ``f_k`` (``w_k``, or ``1, -beta^n``) and the collider's own displacement
``s`` [m] of the touched material point over the step. The relative tangential displacement is
``u = T^T (sum_k f_k (x_k - x_k^n) - s)`` [m] and the potential ``mu lambda^n f0(|u|)`` [J]. Its 2x2 Hessian
``H2`` in the tangent plane is PSD.
"""

import math

import numpy as np

from ..jit import njit_kernel
from .contact_elements import ELEMENT_NODES, KIND_POINT_COLLIDER, distance_scratch, element_distance, element_point
from .kernels_contact import penalty_force, smoothed_friction_f0, smoothed_friction_factors


@njit_kernel
def friction_setup(x_start, el_count, el_kind, el_nodes, el_weights, el_target, geometry, col_pos0, col_rot0,
                   col_aniso, kappa, delta, el_mu, node_free, el_lambda, el_tangent, el_fcoef, el_slip, el_normal,
                   el_gap):  # fmt: skip
    """Freeze the contact frame and the lagged friction data of every element at ``x^n`` (module
    docstring).

    ``geometry`` holds the end-of-step collider poses; ``col_pos0``/``col_rot0`` the start poses.
    Outputs: ``el_lambda`` (E,) [N] (0 when mu = 0 or out of contact), ``el_tangent`` (E, 3, 2),
    ``el_fcoef`` (E, 16) (pinned nodes masked), ``el_slip`` (E, 3) [m] the collider's own displacement
    over the step, ``el_normal`` (E, 3) unit normal and ``el_gap`` (E,) signed distance [m] at ``x^n``.

    Anisotropic colliders (``col_aniso`` (C, 6) = ``(mu_along, mu_across, flag, axis_local)``): the
    first tangent is the collider axis projected on the contact plane and the tangents are scaled by
    ``mu_along / mu_bar`` and ``mu_across / mu_bar`` with ``mu_bar = el_mu = sqrt(mu_along mu_across)``:
    the friction potential ``mu_bar lambda f0(|T^T du|)`` then has the elliptic Coulomb force (maximal
    dissipation on the ellipse), and the DUAL solvers' disk ``|r_T| <= mu_bar r_n`` on the scaled rows is
    the ellipse ``(r_along / mu_along)^2 + (r_across / mu_across)^2 <= r_n^2``.
    """
    # The state of x^n: static/kinematic colliders at their start pose (dynamic boxes are nodes of x^n).
    geometry_start = (geometry[0], geometry[1], col_pos0, col_rot0, geometry[4], geometry[5], geometry[6],
                      geometry[7], geometry[8])  # fmt: skip
    coef, g, scratch = distance_scratch()
    p = np.empty(3)
    q = np.empty(3)
    for e in range(el_count):
        if el_kind[e] == KIND_POINT_COLLIDER:
            d = element_distance(e, x_start, el_kind, el_nodes, el_weights, el_target, geometry_start, coef, g,
                                 scratch)  # fmt: skip
        else:
            d = element_distance(e, x_start, el_kind, el_nodes, el_weights, el_target, geometry, coef, g, scratch)
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
            el_lambda[e] = penalty_force(d, kappa, delta) * gn
        nx, ny, nz = g[0] / gn, g[1] / gn, g[2] / gn
        el_normal[e, 0] = nx
        el_normal[e, 1] = ny
        el_normal[e, 2] = nz
        # Tangent basis: t1 orthogonal to n built from the least aligned axis, t2 = n x t1.
        if abs(nx) < 0.57735:
            _store_tangent_frame(e, 1.0, 0.0, 0.0, nx, ny, nz, np.bool_(True), el_tangent)
        elif abs(ny) < 0.57735:
            _store_tangent_frame(e, 0.0, 1.0, 0.0, nx, ny, nz, np.bool_(True), el_tangent)
        else:
            _store_tangent_frame(e, 0.0, 0.0, 1.0, nx, ny, nz, np.bool_(True), el_tangent)
        if el_kind[e] == KIND_POINT_COLLIDER and col_aniso[el_target[e], 2] > 0.0:
            _anisotropic_tangents(e, el_target[e], col_rot0, col_aniso, nx, ny, nz, el_mu, el_tangent)
        if el_kind[e] == KIND_POINT_COLLIDER:
            _collider_slip(e, x_start, el_nodes, el_weights, el_target[e], col_pos0, col_rot0, geometry[2],
                           geometry[3], p, q, el_slip)  # fmt: skip


@njit_kernel
def _store_tangent_frame(e, ax, ay, az, nx, ny, nz, always, el_tangent):
    """Store ``t1`` = the unit projection of the axis ``a`` on the plane normal to the unit ``n`` and
    ``t2 = n x t1`` as the columns of ``el_tangent[e]`` (3, 2). Unless ``always``, nothing is stored when
    ``a`` is (within 1e-9) normal to the plane."""
    dot = ax * nx + ay * ny + az * nz
    t1x, t1y, t1z = ax - dot * nx, ay - dot * ny, az - dot * nz
    t1n = math.sqrt(t1x * t1x + t1y * t1y + t1z * t1z)
    if not always and not t1n > 1.0e-9:
        return
    t1x, t1y, t1z = t1x / t1n, t1y / t1n, t1z / t1n
    el_tangent[e, 0, 0] = t1x
    el_tangent[e, 1, 0] = t1y
    el_tangent[e, 2, 0] = t1z
    el_tangent[e, 0, 1] = ny * t1z - nz * t1y
    el_tangent[e, 1, 1] = nz * t1x - nx * t1z
    el_tangent[e, 2, 1] = nx * t1y - ny * t1x


@njit_kernel
def _anisotropic_tangents(e, c, col_rot0, col_aniso, nx, ny, nz, el_mu, el_tangent):
    """Tangents of element ``e`` on anisotropic collider ``c``: ``t1`` along the collider axis (at its start
    pose) projected on the contact plane (the default frame stays when the axis is normal to it), both
    scaled by ``mu_along / mu_bar`` and ``mu_across / mu_bar`` (see :func:`friction_setup`)."""
    R0 = col_rot0[c]
    ax = R0[0, 0] * col_aniso[c, 3] + R0[0, 1] * col_aniso[c, 4] + R0[0, 2] * col_aniso[c, 5]
    ay = R0[1, 0] * col_aniso[c, 3] + R0[1, 1] * col_aniso[c, 4] + R0[1, 2] * col_aniso[c, 5]
    az = R0[2, 0] * col_aniso[c, 3] + R0[2, 1] * col_aniso[c, 4] + R0[2, 2] * col_aniso[c, 5]
    _store_tangent_frame(e, ax, ay, az, nx, ny, nz, np.bool_(False), el_tangent)
    if el_mu[e] > 0.0:
        for i in range(3):
            el_tangent[e, i, 0] *= col_aniso[c, 0] / el_mu[e]
            el_tangent[e, i, 1] *= col_aniso[c, 1] / el_mu[e]


@njit_kernel
def _collider_slip(e, x_start, el_nodes, el_weights, c, col_pos0, col_rot0, col_pos, col_rot, p, q, el_slip):
    """``el_slip[e]`` (3,) [m]: displacement over the step of collider ``c``'s material point under the contact
    point at ``x^n`` (start pose ``col_pos0``/``col_rot0`` to end pose ``col_pos``/``col_rot``); ``p``, ``q``
    (3,) scratch."""
    element_point(e, x_start, el_nodes, el_weights, np.int64(0), p)
    R0 = col_rot0[c]
    for i in range(3):
        q[i] = (
            R0[0, i] * (p[0] - col_pos0[c, 0]) + R0[1, i] * (p[1] - col_pos0[c, 1]) + R0[2, i] * (p[2] - col_pos0[c, 2])
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
        total += el_mu[e] * lam * smoothed_friction_f0(y, eps_h)
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
# Contact Jacobian (DUAL formulation)
# --------------------------------------------------------------------------------------------


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
