"""Lagged, mollified IPC friction: the smooth Coulomb mollifier, the lagged contact frame and the
friction potential of one contact with its gradient and Hessian (spec D.3.5, [Li et al. 2020] Sec. 5).

**Mollifier** (Eq.296-298), written for the slip DISPLACEMENT ``s = |u|`` over the step and the
displacement threshold ``eps_h = eps_v h`` [m] (ipctk's ``smooth_friction_*`` take the same ``eps_h``)::

    f1(s) = m(s) = 2 s/eps_h - s²/eps_h²            (s < eps_h),   1  otherwise   (force profile)
    f0(s) = -s³/(3 eps_h²) + s²/eps_h + eps_h/3      (s < eps_h),   s  otherwise   (f0' = f1, C1 at eps_h)
    f1(s)/s = 2/eps_h - s/eps_h²                     (s < eps_h),   1/s otherwise   (finite at s = 0)
    (f1'(s) s - f1(s))/s³ = -1/(s eps_h²)            (s < eps_h),  -1/s³ otherwise

**Lagged contact frame.** At the start of the step (or outer lag iteration) each contact freezes:
the normal force magnitude ``N`` [N-equivalent, see below], the tangent basis ``T`` (3, 2) and the
closest-point weights ``w`` (4,) with ``r = sum_k w_k x_k`` = (closest point on the first primitive)
- (closest point on the second) (PT ``[1, -(1-u-v), -u, -v]``, EE ``[1-a, a, -(1-b), -b]``).
The tangential slip of the step is ``u = T^T sum_k w_k dx_k`` (2,), ``dx_k = x_k - x_k^start``.

**Potential** ``D = mu N f0(|u|)`` (Eq.298) with, for the 12 dofs ``dx``::

    grad D = mu N J^T (f1(s)/s) u,                       J = T^T (w^T (x) I3)   (2, 12)
    hess D = mu N J^T [ (f1/s) I2 + ((f1' s - f1)/s³) u u^T ] J

The 2x2 inner matrix has eigenvalues ``f1/s`` (perpendicular to u) and ``f1'`` (along u), both >= 0
for this mollifier (``2/eps_h - s/eps_h²`` and ``2/eps_h (1 - s/eps_h)`` below eps_h; ``1/s`` and 0
above), so the Hessian is PSD without projection. At ``s = 0`` the inner matrix is ``(2/eps_h) I2``.
``T`` need not be orthonormal: an anisotropic ellipse is passed as scaled columns with ``mu = 1``.

Scaling with the IPC objective (spec D.3.5): with the barrier on squared distances the per-contact
``mu N`` of the objective is ``mu kappa |b'(d²)| 2 d`` (the time step cancels).
"""

import math

from ..jit import njit_kernel
from .distance import (
    EA0_EB,
    EA0_EB0,
    EA0_EB1,
    EA1_EB,
    EA1_EB0,
    EA1_EB1,
    EA_EB,
    EA_EB0,
    EA_EB1,
    PE_T0T1,
    PE_T1T2,
    PE_T2T0,
    PP_T0,
    PP_T1,
    PP_T2,
    PT_FACE,
    edge_edge_case,
    point_triangle_case,
)

# --------------------------------------------------------------------------- mollifier


@njit_kernel
def friction_f0(s, eps_h):
    """Mollified slip norm ``f0(s)`` [m] (``M_epsv`` of Eq.298): ``f0(0) = eps_h/3``, ``f0 = s`` beyond eps_h."""
    if s >= eps_h:
        return s
    return s * s * (1.0 / eps_h - s / (3.0 * eps_h * eps_h)) + eps_h / 3.0


@njit_kernel
def friction_f1(s, eps_h):
    """Force profile ``f1(s) = f0'(s)`` [1] (Eq.296): ``2 s/eps_h - s²/eps_h²`` below eps_h, 1 beyond."""
    if s >= eps_h:
        return 1.0
    x = s / eps_h
    return x * (2.0 - x)


@njit_kernel
def friction_f1_over_s(s, eps_h):
    """``f1(s)/s`` [1/m], finite at ``s = 0`` (``2/eps_h``); ``1/s`` beyond eps_h."""
    if s >= eps_h:
        return 1.0 / s
    return (2.0 - s / eps_h) / eps_h


@njit_kernel
def friction_f2_term(s, eps_h):
    """``(f1'(s) s - f1(s)) / s³`` [1/m³]: ``-1/(s eps_h²)`` below eps_h (``-inf`` at ``s = 0``, as
    ipctk's ``smooth_friction_f2_x_minus_f1_over_x3``), ``-1/s³`` beyond.

    It always multiplies ``u u^T`` with ``|u| = s``; :func:`friction_potential` uses the finite product
    ``-s/eps_h² û û^T`` (0 at s = 0) instead.
    """
    if s >= eps_h:
        return -1.0 / (s * s * s)
    if s == 0.0:
        return -math.inf  # explicit: pure-Python runs (NUMBA_DISABLE_JIT) would raise ZeroDivisionError
    return -1.0 / (s * eps_h * eps_h)


# --------------------------------------------------------------------------- lagged contact frame


@njit_kernel
def _clamp01(t):
    return min(max(t, 0.0), 1.0)


@njit_kernel
def _segment_param(p, a, b):
    """Clamped parameter t of the point of segment a-b closest to p (0 for a zero-length segment)."""
    e0 = b[0] - a[0]
    e1 = b[1] - a[1]
    e2 = b[2] - a[2]
    ee = e0 * e0 + e1 * e1 + e2 * e2
    if ee == 0.0:
        return 0.0
    return _clamp01((e0 * (p[0] - a[0]) + e1 * (p[1] - a[1]) + e2 * (p[2] - a[2])) / ee)


@njit_kernel
def _plane_params(q0, q1, q2, a0, a1, a2, b0, b1, b2):
    """(c0, c1) minimising ``|q + c0 a + c1 b|``: Cramer's rule with ``det = |a x b|²`` and numerators
    ``((n x b) . q, -(n x a) . q)``, ``n = a x b`` (cancellation-free); (0, 0) if a, b are parallel."""
    n0 = a1 * b2 - a2 * b1
    n1 = a2 * b0 - a0 * b2
    n2 = a0 * b1 - a1 * b0
    det = n0 * n0 + n1 * n1 + n2 * n2
    if det == 0.0:
        return 0.0, 0.0
    c0 = (n1 * b2 - n2 * b1) * q0 + (n2 * b0 - n0 * b2) * q1 + (n0 * b1 - n1 * b0) * q2
    c1 = (n1 * a2 - n2 * a1) * q0 + (n2 * a0 - n0 * a2) * q1 + (n0 * a1 - n1 * a0) * q2
    return c0 / det, -c1 / det


@njit_kernel
def _set4(weights, w0, w1, w2, w3):
    weights[0] = w0
    weights[1] = w1
    weights[2] = w2
    weights[3] = w3


@njit_kernel
def point_triangle_closest_weights(p, t0, t1, t2, weights):
    """Weights (4,) of ``r = p - (closest point of the triangle)`` over ``[p, t0, t1, t2]``.

    ``[1, -(1-u-v), -u, -v]`` with the closest point of the active case of
    :func:`~.distance.point_triangle_case` (vertex, clamped edge parameter, or face barycentrics).
    """
    case = point_triangle_case(p, t0, t1, t2)
    if case == PP_T0:
        _set4(weights, 1.0, -1.0, 0.0, 0.0)
    elif case == PP_T1:
        _set4(weights, 1.0, 0.0, -1.0, 0.0)
    elif case == PP_T2:
        _set4(weights, 1.0, 0.0, 0.0, -1.0)
    elif case == PE_T0T1:
        t = _segment_param(p, t0, t1)
        _set4(weights, 1.0, -(1.0 - t), -t, 0.0)
    elif case == PE_T1T2:
        t = _segment_param(p, t1, t2)
        _set4(weights, 1.0, 0.0, -(1.0 - t), -t)
    elif case == PE_T2T0:
        t = _segment_param(p, t2, t0)
        _set4(weights, 1.0, -t, 0.0, -(1.0 - t))
    else:
        # r = (p - t0) + u (t0 - t1) + v (t0 - t2)
        u, v = _plane_params(
            p[0] - t0[0], p[1] - t0[1], p[2] - t0[2],
            t0[0] - t1[0], t0[1] - t1[1], t0[2] - t1[2],
            t0[0] - t2[0], t0[1] - t2[1], t0[2] - t2[2],
        )  # fmt: skip
        _set4(weights, 1.0, -(1.0 - u - v), -u, -v)


@njit_kernel
def edge_edge_closest_weights(ea0, ea1, eb0, eb1, weights):
    """Weights (4,) ``[(1-a), a, -(1-b), -b]`` of ``r = (closest on edge a) - (closest on edge b)``.

    Parameters are those of the active case of :func:`~.distance.edge_edge_case` (parallel edges are
    classified into point cases there), clamped to ``[0, 1]``.
    """
    case = edge_edge_case(ea0, ea1, eb0, eb1)
    if case == EA0_EB0:
        _set4(weights, 1.0, 0.0, -1.0, 0.0)
    elif case == EA0_EB1:
        _set4(weights, 1.0, 0.0, 0.0, -1.0)
    elif case == EA1_EB0:
        _set4(weights, 0.0, 1.0, -1.0, 0.0)
    elif case == EA1_EB1:
        _set4(weights, 0.0, 1.0, 0.0, -1.0)
    elif case == EA_EB0:
        a = _segment_param(eb0, ea0, ea1)
        _set4(weights, 1.0 - a, a, -1.0, 0.0)
    elif case == EA_EB1:
        a = _segment_param(eb1, ea0, ea1)
        _set4(weights, 1.0 - a, a, 0.0, -1.0)
    elif case == EA0_EB:
        b = _segment_param(ea0, eb0, eb1)
        _set4(weights, 1.0, 0.0, -(1.0 - b), -b)
    elif case == EA1_EB:
        b = _segment_param(ea1, eb0, eb1)
        _set4(weights, 0.0, 1.0, -(1.0 - b), -b)
    else:
        # r = (ea0 - eb0) + a (ea1 - ea0) + b (eb0 - eb1)
        a, b = _plane_params(
            ea0[0] - eb0[0], ea0[1] - eb0[1], ea0[2] - eb0[2],
            ea1[0] - ea0[0], ea1[1] - ea0[1], ea1[2] - ea0[2],
            eb0[0] - eb1[0], eb0[1] - eb1[1], eb0[2] - eb1[2],
        )  # fmt: skip
        a = _clamp01(a)
        b = _clamp01(b)
        _set4(weights, 1.0 - a, a, -(1.0 - b), -b)


@njit_kernel
def set_tangent_columns(n0, n1, n2, t0, t1, t2, basis):
    """``basis`` (3, 2) = ``(t, n x t)`` for the unit normal n and a unit tangent t orthogonal to it."""
    basis[0, 0] = t0
    basis[1, 0] = t1
    basis[2, 0] = t2
    basis[0, 1] = n1 * t2 - n2 * t1
    basis[1, 1] = n2 * t0 - n0 * t2
    basis[2, 1] = n0 * t1 - n1 * t0


@njit_kernel
def _basis_from_normal(n0, n1, n2, h0, h1, h2, basis):
    """Write orthonormal tangent columns ``(t, n x t)`` for the unit normal n, t along the hint h
    projected onto the tangent plane (a coordinate axis if h is (nearly) parallel to n or zero)."""
    hn = h0 * n0 + h1 * n1 + h2 * n2
    c0 = h0 - hn * n0
    c1 = h1 - hn * n1
    c2 = h2 - hn * n2
    cc = c0 * c0 + c1 * c1 + c2 * c2
    if not cc > 1e-12 * (h0 * h0 + h1 * h1 + h2 * h2) or cc == 0.0:
        # axis least aligned with n
        a0 = abs(n0)
        a1 = abs(n1)
        a2 = abs(n2)
        h0 = 1.0 if (a0 <= a1 and a0 <= a2) else 0.0
        h1 = 1.0 if (h0 == 0.0 and a1 <= a2) else 0.0
        h2 = 1.0 if (h0 == 0.0 and h1 == 0.0) else 0.0
        hn = h0 * n0 + h1 * n1 + h2 * n2
        c0 = h0 - hn * n0
        c1 = h1 - hn * n1
        c2 = h2 - hn * n2
        cc = c0 * c0 + c1 * c1 + c2 * c2
    inv = 1.0 / math.sqrt(cc)
    c0 *= inv
    c1 *= inv
    c2 *= inv
    set_tangent_columns(n0, n1, n2, c0, c1, c2, basis)


@njit_kernel
def _unit_or_zero(x0, x1, x2):
    nn = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
    if nn == 0.0:
        return 0.0, 0.0, 0.0, False
    return x0 / nn, x1 / nn, x2 / nn, True


@njit_kernel
def _any_normal(h0, h1, h2):
    """A unit vector orthogonal to h ((0, 0, 1) if h = 0)."""
    a0 = abs(h0)
    a1 = abs(h1)
    a2 = abs(h2)
    # cross h with the axis least aligned with it
    if a0 <= a1 and a0 <= a2:
        c0, c1, c2 = 0.0, h2, -h1
    elif a1 <= a2:
        c0, c1, c2 = -h2, 0.0, h0
    else:
        c0, c1, c2 = h1, -h0, 0.0
    n0, n1, n2, ok = _unit_or_zero(c0, c1, c2)
    if not ok:
        return 0.0, 0.0, 1.0
    return n0, n1, n2


@njit_kernel
def point_triangle_tangent_basis(p, t0, t1, t2, basis):
    """Orthonormal tangent basis (3, 2) of a point–triangle contact.

    Face case: the triangle plane (first column along ``t1 - t0``). Other cases: the plane
    orthogonal to ``r/|r|`` (r = p - closest point), first column along the closest edge / ``t1 - t0``
    projected. If ``r = 0`` the triangle normal is used; if the triangle is degenerate too, any
    orthonormal pair.
    """
    e0 = t1[0] - t0[0]
    e1 = t1[1] - t0[1]
    e2 = t1[2] - t0[2]
    f0 = t2[0] - t0[0]
    f1 = t2[1] - t0[1]
    f2 = t2[2] - t0[2]
    nt0, nt1, nt2, ok_t = _unit_or_zero(e1 * f2 - e2 * f1, e2 * f0 - e0 * f2, e0 * f1 - e1 * f0)
    case = point_triangle_case(p, t0, t1, t2)
    h0, h1, h2 = e0, e1, e2
    if case == PE_T1T2:
        h0, h1, h2 = t2[0] - t1[0], t2[1] - t1[1], t2[2] - t1[2]
    elif case == PE_T2T0:
        h0, h1, h2 = t0[0] - t2[0], t0[1] - t2[1], t0[2] - t2[2]
    ok = False
    n0 = n1 = n2 = 0.0
    if case != PT_FACE:
        # r = p - (clamped closest point), recomputed per case (no scratch weights)
        if case == PP_T0 or case == PP_T1 or case == PP_T2:
            q = t0 if case == PP_T0 else (t1 if case == PP_T1 else t2)
            n0, n1, n2, ok = _unit_or_zero(p[0] - q[0], p[1] - q[1], p[2] - q[2])
        else:
            a = t0 if case == PE_T0T1 else (t1 if case == PE_T1T2 else t2)
            b = t1 if case == PE_T0T1 else (t2 if case == PE_T1T2 else t0)
            t = _segment_param(p, a, b)
            n0, n1, n2, ok = _unit_or_zero(
                p[0] - (1.0 - t) * a[0] - t * b[0],
                p[1] - (1.0 - t) * a[1] - t * b[1],
                p[2] - (1.0 - t) * a[2] - t * b[2],
            )
    if not ok:
        n0, n1, n2, ok = nt0, nt1, nt2, ok_t
    if not ok:
        n0, n1, n2 = 0.0, 0.0, 1.0
    _basis_from_normal(n0, n1, n2, h0, h1, h2, basis)


@njit_kernel
def edge_edge_tangent_basis(ea0, ea1, eb0, eb1, basis):
    """Orthonormal tangent basis (3, 2) of an edge–edge contact.

    Line–line case: orthogonal to the common normal ``ea x eb`` (the plane of both edge directions,
    first column along edge a). Other cases: orthogonal to ``r/|r|`` (r = closest point on a - closest
    point on b). Fallbacks when ``r = 0`` or the edges are parallel: the cross product, then any plane
    containing edge a.
    """
    a0 = ea1[0] - ea0[0]
    a1 = ea1[1] - ea0[1]
    a2 = ea1[2] - ea0[2]
    b0 = eb1[0] - eb0[0]
    b1 = eb1[1] - eb0[1]
    b2 = eb1[2] - eb0[2]
    nc0, nc1, nc2, ok_c = _unit_or_zero(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)
    case = edge_edge_case(ea0, ea1, eb0, eb1)
    ok = False
    n0 = n1 = n2 = 0.0
    if case != EA_EB:
        # closest points of the point cases (clamped), as in edge_edge_closest_weights
        ta = 0.0
        tb = 0.0
        if case == EA1_EB0 or case == EA1_EB1 or case == EA1_EB:
            ta = 1.0
        if case == EA0_EB1 or case == EA1_EB1 or case == EA_EB1:
            tb = 1.0
        if case == EA_EB0:
            ta = _segment_param(eb0, ea0, ea1)
        elif case == EA_EB1:
            ta = _segment_param(eb1, ea0, ea1)
        elif case == EA0_EB:
            tb = _segment_param(ea0, eb0, eb1)
        elif case == EA1_EB:
            tb = _segment_param(ea1, eb0, eb1)
        n0, n1, n2, ok = _unit_or_zero(
            ea0[0] + ta * a0 - eb0[0] - tb * b0,
            ea0[1] + ta * a1 - eb0[1] - tb * b1,
            ea0[2] + ta * a2 - eb0[2] - tb * b2,
        )
    if not ok:
        n0, n1, n2, ok = nc0, nc1, nc2, ok_c
    h0, h1, h2 = a0, a1, a2
    if a0 == 0.0 and a1 == 0.0 and a2 == 0.0:
        h0, h1, h2 = b0, b1, b2
    if not ok:
        # parallel and touching: any normal orthogonal to the edge direction
        n0, n1, n2 = _any_normal(h0, h1, h2)
    _basis_from_normal(n0, n1, n2, h0, h1, h2, basis)


# --------------------------------------------------------------------------- friction potential


@njit_kernel
def _tangent_slip(dx, basis, weights):
    """``u = basis^T sum_k weights[k] dx_k`` (2,) as a tuple [m]."""
    r0 = weights[0] * dx[0] + weights[1] * dx[3] + weights[2] * dx[6] + weights[3] * dx[9]
    r1 = weights[0] * dx[1] + weights[1] * dx[4] + weights[2] * dx[7] + weights[3] * dx[10]
    r2 = weights[0] * dx[2] + weights[1] * dx[5] + weights[2] * dx[8] + weights[3] * dx[11]
    u0 = basis[0, 0] * r0 + basis[1, 0] * r1 + basis[2, 0] * r2
    u1 = basis[0, 1] * r0 + basis[1, 1] * r1 + basis[2, 1] * r2
    return u0, u1


@njit_kernel
def friction_potential_value(dx, basis, weights, mu, normal_force, eps_h):
    """``D = mu N f0(|u|)`` with ``u = basis^T sum_k weights[k] dx_k`` (see :func:`friction_potential`)."""
    u0, u1 = _tangent_slip(dx, basis, weights)
    return mu * normal_force * friction_f0(math.sqrt(u0 * u0 + u1 * u1), eps_h)


@njit_kernel
def friction_potential(dx, basis, weights, mu, normal_force, eps_h, grad, hess):
    """Lagged friction potential of one contact with gradient and Hessian (Eq.298, module docstring).

    Args:
        dx: (12,) float64, displacement of the 4 vertices over the step ``x - x_start`` [m].
        basis: (3, 2) float64, lagged tangent basis T (columns may be scaled for anisotropy).
        weights: (4,) float64, lagged closest-point weights.
        mu: friction coefficient [1].
        normal_force: lagged normal force magnitude N (in the objective's units).
        eps_h: slip displacement threshold ``eps_v h`` [m].
        grad: (12,) float64, output ``dD/ddx``.
        hess: (12, 12) float64, output ``d²D/ddx²`` (PSD).

    Returns:
        D = mu N f0(|u|).
    """
    u0, u1 = _tangent_slip(dx, basis, weights)
    s = math.sqrt(u0 * u0 + u1 * u1)
    scale = mu * normal_force
    f1s = friction_f1_over_s(s, eps_h)
    # inner 2x2 = f1s I + beta uh uh^T, beta = s² (f1' s - f1)/s³ written without dividing by s²
    beta = 0.0
    uh0 = 0.0
    uh1 = 0.0
    if s > 0.0:
        uh0 = u0 / s
        uh1 = u1 / s
        beta = -s / (eps_h * eps_h) if s < eps_h else -1.0 / s
    m00 = f1s + beta * uh0 * uh0
    m01 = beta * uh0 * uh1
    m11 = f1s + beta * uh1 * uh1
    # g3 = T (f1/s) u (3,), T3 = T M T^T (3, 3): the per-vertex blocks are w_k g3 and w_k w_l T3
    g30 = f1s * (basis[0, 0] * u0 + basis[0, 1] * u1)
    g31 = f1s * (basis[1, 0] * u0 + basis[1, 1] * u1)
    g32 = f1s * (basis[2, 0] * u0 + basis[2, 1] * u1)
    for k in range(4):
        wk = scale * weights[k]
        grad[3 * k] = wk * g30
        grad[3 * k + 1] = wk * g31
        grad[3 * k + 2] = wk * g32
    for a in range(3):
        ta0 = basis[a, 0] * m00 + basis[a, 1] * m01
        ta1 = basis[a, 0] * m01 + basis[a, 1] * m11
        for b in range(a, 3):
            # each T3 entry computed once and mirrored: the Hessian is exactly symmetric
            tab = ta0 * basis[b, 0] + ta1 * basis[b, 1]
            for k in range(4):
                for q in range(4):
                    h = scale * (weights[k] * weights[q]) * tab
                    hess[3 * k + a, 3 * q + b] = h
                    hess[3 * q + b, 3 * k + a] = h
    return scale * friction_f0(s, eps_h)
