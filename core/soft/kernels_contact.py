"""Kernels of the implicit soft-body step: the cubic penalty and smoothed friction as scalar functions (shared
with the soft world's contact elements), penalty contact with kinematic planes, lagged and fully implicit
smoothed friction, and the small vector/CSR helpers of the Newton loops.

**Penalty contact** (seed 003, eq. 3). A plane is a point ``p`` and a unit outward normal ``n``;
vertex ``i`` has signed distance ``d_i = n . (x_i - p)``. With thickness ``delta`` [m] and
stiffness ``kappa`` [N/m]:

    b(d) = (delta - d)^3 / delta   for d < delta, else 0                    [m^2]
    E_c = kappa sum_i b(d_i)                                                 [J]
    dE_c/dx_i = kappa b'(d) n = -lambda_i n,   lambda_i = 3 kappa (delta - d)^2 / delta   [N]
    d2E_c/dx_i^2 = kappa b''(d) n n^T,        b''(d) = 6 (delta - d) / delta >= 0

so each vertex contributes a PSD 3x3 diagonal block. ``b`` is C^2 at ``d = delta`` and defined
for ``d < 0`` (an initially intersecting state is fine).

**Lagged smoothed friction** (IPC, Li et al. 2020; seed 003 eqs. 14 and 25-26). At the start of
the step the normal force ``lambda_i^n`` and the tangent projector ``P = I - n n^T`` are frozen.
With ``u_i = P (x_i - x_i^n)`` (tangential displacement over the step, planes are static) and
``y = |u_i|``, the friction potential is ``D = mu sum_i lambda_i^n f0(y_i)`` with

    f1(y) = s_a(y / h) = 2 y / (eps h) - y^2 / (eps h)^2  (y < eps h), else 1
    f0(y) = -y^3 / (3 (eps h)^2) + y^2 / (eps h) + eps h / 3  (y < eps h), else y

(``f0' = f1``, C^1 at ``y = eps h``; ``eps`` is the stick-slip velocity [m/s]). The force is
``-mu lambda f1(y) u / y`` (Coulomb ``mu lambda`` at sliding speeds ``y/h >= eps``). The Hessian
in the tangent plane is ``mu lambda [(f1/y) P + (f1' y - f1)/y^3 u u^T]``; its eigenvalues are
``f1/y > 0`` (across ``u``) and ``f1' >= 0`` (along ``u``), so it is PSD without projection. For
``y < eps h`` it is written as ``(2/(eps h) - y/(eps h)^2) P - (y/(eps h)^2) u_hat u_hat^T``,
finite at ``y = 0``.

Lagged vs fully implicit: here ``lambda`` and ``P`` come from ``x^n`` (so friction has a
potential and the step stays a minimisation with an SPD Newton matrix). Seed 003's fully implicit
mode evaluates them at ``x^{n+1}`` (root finding, non-symmetric Jacobian); the lagged mode is
first-order accurate in ``lambda`` and shows larger h-dependence near the stick-slip threshold.
:func:`implicit_friction_gradient_jacobian` implements the fully implicit force and Jacobian.
"""

import math

import numpy as np

from ..jit import njit_kernel

# --------------------------------------------------------------------------------------------
# Cubic penalty (shared with the soft world's contact elements, ``kernels_penalty``)
# --------------------------------------------------------------------------------------------


@njit_kernel
def penalty_energy(d, kappa, delta):
    """``kappa b(d) = kappa (delta - d)^3 / delta`` [J] of one contact at signed distance ``d < delta`` [m]."""
    s = delta - d
    return kappa * s * s * s / delta


@njit_kernel
def penalty_force(d, kappa, delta):
    """Normal force ``lambda = -kappa b'(d) = 3 kappa (delta - d)^2 / delta`` [N] at ``d < delta`` [m]."""
    s = delta - d
    return 3.0 * kappa * s * s / delta


@njit_kernel
def penalty_stiffness(d, kappa, delta):
    """``kappa b''(d) = 6 kappa (delta - d) / delta`` [N/m] at ``d < delta`` [m] (>= 0: the contact is PSD)."""
    s = delta - d
    return 6.0 * kappa * s / delta


# --------------------------------------------------------------------------------------------
# Penalty contact with planes
# --------------------------------------------------------------------------------------------


@njit_kernel
def plane_distance(x, i, point, normal):
    """Signed distance ``n . (x_i - p)`` [m] of vertex ``i`` of ``x`` (V, 3) to the plane ``(p, n)`` ((3,) each)."""
    d = 0.0
    for c in range(3):
        d += normal[c] * (x[i, c] - point[c])
    return d


@njit_kernel
def free_plane_distance(x, vertex_free, i, point, normal):
    """:func:`plane_distance`, or ``+inf`` for a pinned vertex (``vertex_free[i]`` False): pinned vertices never
    touch a plane (their rows are Dirichlet rows of the Newton system)."""
    if not vertex_free[i]:
        return math.inf
    return plane_distance(x, i, point, normal)


@njit_kernel
def plane_penalty_energy(x, vertex_free, plane_points, plane_normals, kappa, delta):
    """Contact energy ``kappa sum_{i, planes} b(d_i)`` [J] of the free vertices.

    Args:
        x: (V, 3) positions [m]. vertex_free: (V,) bool, False for pinned vertices (skipped).
        plane_points, plane_normals: (P, 3) [m] and unit outward normals.
        kappa: stiffness [N/m]. delta: thickness [m].
    """
    total = 0.0
    for k in range(plane_points.shape[0]):
        for i in range(x.shape[0]):
            d = free_plane_distance(x, vertex_free, i, plane_points[k], plane_normals[k])
            if d < delta:
                total += penalty_energy(d, kappa, delta)
    return total


@njit_kernel
def plane_penalty_gradient_hessian(x, vertex_free, plane_points, plane_normals, kappa, delta, out_grad, out_hess):
    """Accumulate ``dE_c/dx`` [N] into ``out_grad`` (V, 3) and the 3x3 blocks ``d2E_c/dx_i^2``
    [N/m] into ``out_hess`` (V, 3, 3). Both are added to, not overwritten."""
    for k in range(plane_points.shape[0]):
        for i in range(x.shape[0]):
            d = free_plane_distance(x, vertex_free, i, plane_points[k], plane_normals[k])
            if d < delta:
                lam = penalty_force(d, kappa, delta)
                stiff = penalty_stiffness(d, kappa, delta)
                for a in range(3):
                    out_grad[i, a] -= lam * plane_normals[k, a]
                    for b in range(3):
                        out_hess[i, a, b] += stiff * plane_normals[k, a] * plane_normals[k, b]


@njit_kernel
def plane_normal_forces(x, vertex_free, plane_points, plane_normals, kappa, delta, out_lambda):
    """Penalty normal force ``lambda = 3 kappa (delta - d)^2 / delta`` [N] per (plane, vertex);
    ``out_lambda`` (P, V), 0 outside the contact layer or for pinned vertices."""
    for k in range(plane_points.shape[0]):
        for i in range(x.shape[0]):
            out_lambda[k, i] = 0.0
            d = free_plane_distance(x, vertex_free, i, plane_points[k], plane_normals[k])
            if d < delta:
                out_lambda[k, i] = penalty_force(d, kappa, delta)


# --------------------------------------------------------------------------------------------
# Lagged smoothed friction
# --------------------------------------------------------------------------------------------


@njit_kernel
def _tangent_displacement(x, x_start, normal, i, u):
    """``u = (I - n n^T)(x_i - x_start_i)``; returns |u|."""
    dn = 0.0
    for c in range(3):
        dn += normal[c] * (x[i, c] - x_start[i, c])
    s = 0.0
    for c in range(3):
        u[c] = x[i, c] - x_start[i, c] - dn * normal[c]
        s += u[c] * u[c]
    return math.sqrt(s)


@njit_kernel
def smoothed_friction_f0(y, eps_h):
    """The smoothed friction potential per unit ``mu lambda``: ``f0(y)`` [m] of the module docstring
    (``y`` the tangential displacement over the step [m], ``eps_h = eps_v h`` [m])."""
    if y < eps_h:
        return -y * y * y / (3.0 * eps_h * eps_h) + y * y / eps_h + eps_h / 3.0
    return y


@njit_kernel
def smoothed_friction_factors(y, eps_h):
    """``(f1(y) / y, (f1'(y) y - f1(y)) / y^2)`` of the smoothed friction (module docstring): the force
    is ``-mu lambda (f1/y) u`` and the Hessian in the tangent plane ``mu lambda [(f1/y) I + c_uu u_hat
    u_hat^T]`` with ``c_uu`` the second value; both finite at ``y = 0``."""
    if y < eps_h:
        return 2.0 / eps_h - y / (eps_h * eps_h), -y / (eps_h * eps_h)
    return 1.0 / y, -1.0 / y


@njit_kernel
def lagged_friction_energy(x, x_start, plane_normals, lambda_lag, mu, eps_h):
    """Friction potential ``mu sum lambda^n f0(|u|)`` [J]; ``eps_h = eps_v h`` [m].

    Args:
        x, x_start: (V, 3) current and start-of-step positions [m].
        plane_normals: (P, 3). lambda_lag: (P, V) frozen normal forces [N] (0 = no contact).
        mu: friction coefficient.
    """
    u = np.empty(3)
    total = 0.0
    for k in range(plane_normals.shape[0]):
        for i in range(x.shape[0]):
            lam = lambda_lag[k, i]
            if lam <= 0.0:
                continue
            y = _tangent_displacement(x, x_start, plane_normals[k], i, u)
            total += mu * lam * smoothed_friction_f0(y, eps_h)
    return total


@njit_kernel
def lagged_friction_gradient_hessian(x, x_start, plane_normals, lambda_lag, mu, eps_h, out_grad, out_hess):
    """Accumulate the friction gradient [N] into ``out_grad`` (V, 3) and its PSD 3x3 Hessian
    blocks [N/m] into ``out_hess`` (V, 3, 3) (see module docstring)."""
    u = np.empty(3)
    for k in range(plane_normals.shape[0]):
        n = plane_normals[k]
        for i in range(x.shape[0]):
            lam = lambda_lag[k, i]
            if lam <= 0.0:
                continue
            y = _tangent_displacement(x, x_start, n, i, u)
            scale = mu * lam
            f1_over_y, c_uu = smoothed_friction_factors(y, eps_h)
            inv_y = 1.0 / y if y > 0.0 else 0.0
            for a in range(3):
                out_grad[i, a] += scale * f1_over_y * u[a]
                for b in range(3):
                    p_ab = (1.0 if a == b else 0.0) - n[a] * n[b]
                    out_hess[i, a, b] += scale * (f1_over_y * p_ab + c_uu * u[a] * inv_y * u[b] * inv_y)


# --------------------------------------------------------------------------------------------
# Fully implicit smoothed friction (seed 003 eqs. 8, 14, 16)
# --------------------------------------------------------------------------------------------


@njit_kernel
def implicit_friction_gradient_jacobian(
    x, v, vertex_free, plane_points, plane_normals, kappa, delta, mu, eps_v, beta, out_grad, out_jac
):
    """Fully implicit friction at the end-of-step state: accumulate ``-f_f`` [N] into ``out_grad``
    (V, 3) and its **non-symmetric** 3x3 Jacobian blocks into ``out_jac`` (V, 3, 3).

    Per free vertex ``i`` and plane ``(p, n)`` (static, so ``v_plane = 0`` and ``P = I - n n^T``
    is constant): ``d = n . (x_i - p)``, ``lambda(x) = 3 kappa (delta - d)^2 / delta`` (0 for
    ``d >= delta``), ``w = P v_i``, ``y = |w|``, ``eta(w) = (s_a(y)/y) w`` with
    ``s_a(y)/y = 2/eps - y/eps^2`` (``y < eps``) else ``1/y``, and

        -f_f,i = mu lambda(x) eta(P v_i)

    The unknown is ``v`` with ``x = x_base + beta v`` (``beta = h`` for BE, ``h/2`` for TR). The
    blocks are scaled like position Hessians so that the Newton matrix is ``M + c beta H``:

        out_jac_i += mu [ eta (dlambda/dd) n^T + (lambda / beta) d eta/d w ]
        d eta/d w = (s/y) P + c_uu w_hat w_hat^T,  c_uu = -y/eps^2 (y < eps) else -1/y

    with ``dlambda/dd = -6 kappa (delta - d)/delta``. The first term (normal-force coupling) makes
    the block non-symmetric. ``eps_v`` is the stick-slip velocity [m/s].
    """
    for k in range(plane_points.shape[0]):
        n = plane_normals[k]
        for i in range(x.shape[0]):
            if not vertex_free[i]:
                continue
            d = plane_distance(x, i, plane_points[k], n)
            vn = 0.0
            for c in range(3):
                vn += n[c] * v[i, c]
            if d >= delta:
                continue
            lam = penalty_force(d, kappa, delta)
            dlam_dd = -penalty_stiffness(d, kappa, delta)
            w0 = v[i, 0] - vn * n[0]
            w1 = v[i, 1] - vn * n[1]
            w2 = v[i, 2] - vn * n[2]
            y = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
            s_over_y, c_uu = smoothed_friction_factors(y, eps_v)
            inv_y = 1.0 / y if y > 0.0 else 0.0
            for a in range(3):
                wa = w0 if a == 0 else (w1 if a == 1 else w2)
                eta_a = s_over_y * wa
                out_grad[i, a] += mu * lam * eta_a
                for b in range(3):
                    wb = w0 if b == 0 else (w1 if b == 1 else w2)
                    p_ab = (1.0 if a == b else 0.0) - n[a] * n[b]
                    deta = s_over_y * p_ab + c_uu * wa * inv_y * wb * inv_y
                    out_jac[i, a, b] += mu * (eta_a * dlam_dd * n[b] + lam / beta * deta)


# --------------------------------------------------------------------------------------------
# Newton-loop helpers
# --------------------------------------------------------------------------------------------


@njit_kernel
def positions_from_velocity(x_start, v, h, out_x):
    """``out_x = x_start + h v`` (all (V, 3))."""
    for i in range(x_start.shape[0]):
        for c in range(3):
            out_x[i, c] = x_start[i, c] + h * v[i, c]


@njit_kernel
def inertia_energy(vertex_mass, vertex_free, v, v_start, gravity, h):
    """``1/2 sum_i m_i |v_i - v_i^n - h g|^2`` over free vertices [J]."""
    total = 0.0
    for i in range(v.shape[0]):
        if not vertex_free[i]:
            continue
        s = 0.0
        for c in range(3):
            w = v[i, c] - v_start[i, c] - h * gravity[c]
            s += w * w
        total += 0.5 * vertex_mass[i] * s
    return total


@njit_kernel
def momentum_residual(vertex_mass, vertex_free, v, v_start, gravity, grad_x, h, out_r):
    """BE residual ``r = M (v - v^n - h g) + h dE/dx`` (= gradient of the incremental potential in
    v); rows of pinned vertices are 0. ``grad_x`` (V, 3) is ``d(Psi + E_c + D)/dx`` [N]; ``out_r``
    is flat (3V,) [N s]. Returns ``||r||_2``."""
    s = 0.0
    for i in range(v.shape[0]):
        for c in range(3):
            if vertex_free[i]:
                r = vertex_mass[i] * (v[i, c] - v_start[i, c] - h * gravity[c]) + h * grad_x[i, c]
            else:
                r = 0.0
            out_r[3 * i + c] = r
            s += r * r
    return math.sqrt(s)


@njit_kernel
def finish_newton_matrix(data, diag_index, vertex_mass, h2, row_fixed, indptr, indices):
    """``A = h^2 H + M`` in place (``data`` holds H), then Dirichlet rows/columns for pinned dofs:
    zero the row and column, 1 on the diagonal (the matching rhs entry is 0, so ``dv = 0``)."""
    for p in range(data.shape[0]):
        data[p] *= h2
    for i in range(diag_index.shape[0]):
        data[diag_index[i]] += vertex_mass[i // 3]
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if row_fixed[i] or row_fixed[j]:
                data[p] = 1.0 if i == j else 0.0


@njit_kernel
def axpy_velocity(v, dv_flat, alpha, out_v):
    """``out_v = v + alpha dv`` with ``dv`` flat (3V,); returns ``max |alpha dv|``."""
    m = 0.0
    for i in range(v.shape[0]):
        for c in range(3):
            step = alpha * dv_flat[3 * i + c]
            out_v[i, c] = v[i, c] + step
            if abs(step) > m:
                m = abs(step)
    return m
