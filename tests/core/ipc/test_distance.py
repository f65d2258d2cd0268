"""IPC squared distances (point–triangle, edge–edge), their exact derivatives and the EE mollifier.

References: the spec's check values (D.3.2), central finite differences of the values (gradients)
and of the analytic gradients (Hessians) per closest-feature case, and the IPC Toolkit (ipctk 1.6.1)
on 10 000 seeded random configurations per primitive pair mixing generic, region-targeted and
near-degenerate (nearly parallel, nearly touching, sliver) cases.
"""

from fractions import Fraction

import numba
import numpy as np
import pytest
from contact_lab.core.ipc import distance as dist

# Test-only batch loops: compiled per session (a cached test module would be keyed on pytest's
# importlib module name and break when imported differently); the kernels they call are cached.
njit_batch = numba.njit(cache=False, error_model="numpy")

N_IPCTK = 10_000
PT_CASES = (dist.PP_T0, dist.PP_T1, dist.PP_T2, dist.PE_T0T1, dist.PE_T1T2, dist.PE_T2T0, dist.PT_FACE)
EE_CASES = tuple(range(9))


# --------------------------------------------------------------------------- configuration generators


def _unit(v):
    return v / np.sqrt(np.sum(v * v, axis=-1, keepdims=True))


def pt_configs(rng, n):
    """(n, 4, 3) point–triangle configurations ``[p, t0, t1, t2]``: a third generic, a third placed in
    every Voronoi region of the triangle (barycentrics in [-0.6, 1.6]², normal offsets 1e-4..1), a third
    near-degenerate (points within 1e-9 of region boundaries, tiny gaps, sliver triangles)."""
    x = rng.normal(size=(n, 4, 3))
    k = n // 3
    # region-targeted: p = t0 + u e0 + v e1 + h nhat
    t = x[k : 2 * k, 1:]
    e0 = t[:, 1] - t[:, 0]
    e1 = t[:, 2] - t[:, 0]
    nhat = _unit(np.cross(e0, e1))
    uv = rng.uniform(-0.6, 1.6, size=(k, 2))
    h = 10.0 ** rng.uniform(-4, 0, size=(k, 1)) * rng.choice([-1.0, 1.0], size=(k, 1))
    x[k : 2 * k, 0] = t[:, 0] + uv[:, :1] * e0 + uv[:, 1:] * e1 + h * nhat
    # near-degenerate
    m = n - 2 * k
    t = x[2 * k :, 1:]
    sliver = rng.random(m) < 0.3
    t[sliver, 2] = t[sliver, 0] + 0.5 * (t[sliver, 1] - t[sliver, 0]) + 1e-3 * rng.normal(size=(sliver.sum(), 3))
    e0 = t[:, 1] - t[:, 0]
    e1 = t[:, 2] - t[:, 0]
    nhat = _unit(np.cross(e0, e1))
    # barycentrics on a region boundary (edge line, vertex, u+v=1) plus 1e-9 noise
    uv = rng.uniform(-0.5, 1.5, size=(m, 2))
    which = rng.integers(0, 4, size=m)
    uv[which == 0, 0] = 0.0
    uv[which == 1, 1] = 0.0
    uv[which == 2, 1] = 1.0 - uv[which == 2, 0]
    uv[which == 3] = rng.integers(0, 2, size=(np.sum(which == 3), 2))
    uv += 1e-9 * rng.normal(size=(m, 2))
    h = 10.0 ** rng.uniform(-6, -1, size=(m, 1)) * rng.choice([-1.0, 1.0], size=(m, 1))
    x[2 * k :, 0] = t[:, 0] + uv[:, :1] * e0 + uv[:, 1:] * e1 + h * nhat
    return x


def ee_configs(rng, n):
    """(n, 4, 3) edge–edge configurations ``[ea0, ea1, eb0, eb1]``: a third generic, a third with the
    closest points placed at line parameters (a, b) in [-0.6, 1.6]² (every case), a third nearly
    parallel (angles 0, 1e-9 .. 1e-1 rad, straddling the 2.5e-16 sin² parallel threshold)."""
    x = rng.normal(size=(n, 4, 3))
    k = n // 3
    # targeted: eb(b) - ea(a) = h n, n the common normal
    ea = x[k : 2 * k, 1] - x[k : 2 * k, 0]
    eb = rng.normal(size=(k, 3))
    nrm = _unit(np.cross(ea, eb))
    ab = rng.uniform(-0.6, 1.6, size=(k, 2))
    h = 10.0 ** rng.uniform(-4, 0, size=(k, 1))
    pa = x[k : 2 * k, 0] + ab[:, :1] * ea
    x[k : 2 * k, 2] = pa + h * nrm - ab[:, 1:] * eb
    x[k : 2 * k, 3] = x[k : 2 * k, 2] + eb
    # nearly parallel: eb = ea rotated by theta about a perpendicular axis (and rescaled)
    m = n - 2 * k
    ea = x[2 * k :, 1] - x[2 * k :, 0]
    theta = rng.choice([0.0, 1e-9, 5e-9, 1e-8, 2e-8, 1e-7, 1e-5, 1e-3, 1e-1], size=(m, 1))
    perp = _unit(np.cross(ea, rng.normal(size=(m, 3))))
    length = np.sqrt(np.sum(ea * ea, axis=1, keepdims=True))
    eb = np.cos(theta) * ea + np.sin(theta) * length * perp
    eb *= rng.uniform(0.3, 2.0, size=(m, 1)) * rng.choice([-1.0, 1.0], size=(m, 1))
    # eb0: anywhere along edge a (and beyond), offset in the edges' plane (half of them by ~theta, so the
    # projected edges cross inside both segments) and off that plane by a gap 1e-4..1
    shift = (
        rng.uniform(-1.5, 1.5, size=(m, 1)) * ea
        + rng.uniform(-1.0, 1.0, size=(m, 1)) * length * np.where(rng.random((m, 1)) < 0.5, 1.0, theta) * perp
        + 10.0 ** rng.uniform(-4, 0, size=(m, 1)) * _unit(np.cross(ea, perp))
    )
    x[2 * k :, 2] = x[2 * k :, 0] + shift
    x[2 * k :, 3] = x[2 * k :, 2] + eb
    return x


# --------------------------------------------------------------------------- batch wrappers (numba)


@njit_batch
def _pt_batch(X, cases, d2, d2_value, grads, hessians):
    for i in range(X.shape[0]):
        cases[i] = dist.point_triangle_case(X[i, 0], X[i, 1], X[i, 2], X[i, 3])
        d2_value[i] = dist.point_triangle_distance2(X[i, 0], X[i, 1], X[i, 2], X[i, 3])
        d2[i] = dist.point_triangle_distance2_derivatives(X[i, 0], X[i, 1], X[i, 2], X[i, 3], grads[i], hessians[i])


@njit_batch
def _ee_batch(X, cases, d2, d2_value, grads, hessians):
    for i in range(X.shape[0]):
        cases[i] = dist.edge_edge_case(X[i, 0], X[i, 1], X[i, 2], X[i, 3])
        d2_value[i] = dist.edge_edge_distance2(X[i, 0], X[i, 1], X[i, 2], X[i, 3])
        d2[i] = dist.edge_edge_distance2_derivatives(X[i, 0], X[i, 1], X[i, 2], X[i, 3], grads[i], hessians[i])


@njit_batch
def _mollifier_batch(X, eps_scale, eps_x, m, m_value, c, grads, hessians, cgrads, chessians):
    for i in range(X.shape[0]):
        eps_x[i] = eps_scale[i] * dist.edge_edge_mollifier_threshold(X[i, 0], X[i, 1], X[i, 2], X[i, 3])
        c[i] = dist.edge_edge_cross2(X[i, 0], X[i, 1], X[i, 2], X[i, 3], cgrads[i], chessians[i])
        m_value[i] = dist.edge_edge_mollifier_value(X[i, 0], X[i, 1], X[i, 2], X[i, 3], eps_x[i])
        m[i] = dist.edge_edge_mollifier(X[i, 0], X[i, 1], X[i, 2], X[i, 3], eps_x[i], grads[i], hessians[i])


def pt_batch(X):
    n = len(X)
    out = (np.zeros(n, np.int64), np.zeros(n), np.zeros(n), np.zeros((n, 12)), np.zeros((n, 12, 12)))
    _pt_batch(np.ascontiguousarray(X), *out)
    return out


def ee_batch(X):
    n = len(X)
    out = (np.zeros(n, np.int64), np.zeros(n), np.zeros(n), np.zeros((n, 12)), np.zeros((n, 12, 12)))
    _ee_batch(np.ascontiguousarray(X), *out)
    return out


# --------------------------------------------------------------------------- finite differences


def _fd_check(value, gradient, x0, h, cases_stable):
    """Max relative errors (gradient vs FD of value, Hessian vs FD of gradient) at x0 (12,).

    Returns None when a perturbation changes the closest-feature case (FD would straddle a kink).
    """
    x0 = x0.ravel()
    g0, H0 = gradient(x0)
    fd_g = np.zeros(12)
    fd_H = np.zeros((12, 12))
    for i in range(12):
        xp = x0.copy()
        xm = x0.copy()
        xp[i] += h
        xm[i] -= h
        if not (cases_stable(xp) and cases_stable(xm)):
            return None
        fd_g[i] = (value(xp) - value(xm)) / (2 * h)
        fd_H[:, i] = (gradient(xp)[0] - gradient(xm)[0]) / (2 * h)
    err_g = np.max(np.abs(g0 - fd_g)) / max(np.max(np.abs(fd_g)), 1e-300)
    err_H = np.max(np.abs(H0 - fd_H)) / max(np.max(np.abs(fd_H)), 1e-300)
    return err_g, err_H


def _pt_grad(x):
    g = np.zeros(12)
    H = np.zeros((12, 12))
    P = x.reshape(4, 3)
    dist.point_triangle_distance2_derivatives(P[0], P[1], P[2], P[3], g, H)
    return g, H


def _ee_grad(x):
    g = np.zeros(12)
    H = np.zeros((12, 12))
    P = x.reshape(4, 3)
    dist.edge_edge_distance2_derivatives(P[0], P[1], P[2], P[3], g, H)
    return g, H


def _pick_per_case(X, cases, case_values, per_case):
    picked = []
    for c in case_values:
        idx = np.flatnonzero(cases == c)[:per_case]
        assert len(idx) > 0, f"generator never produced case {c}"
        picked.extend((c, X[i]) for i in idx)
    return picked


# --------------------------------------------------------------------------- spec check values


def test_spec_point_triangle_check_values():
    """Reproduce the D.3.2 point-triangle check values (face, vertex and edge regions)."""
    t0, t1, t2 = np.array([0.0, 0, 0]), np.array([1.0, 0, 0]), np.array([0.0, 1, 0])
    for p, d, case in (
        ([0.25, 0.25, 1.0], 1.0, dist.PT_FACE),
        ([2.0, 0.0, 0.0], 1.0, dist.PP_T1),
        ([1.0, 1.0, 0.0], np.sqrt(0.5), dist.PE_T1T2),
    ):
        p = np.array(p)
        assert dist.point_triangle_case(p, t0, t1, t2) == case
        assert np.sqrt(dist.point_triangle_distance2(p, t0, t1, t2)) == pytest.approx(d, rel=1e-15)


def test_spec_edge_edge_check_values():
    """Reproduce the D.3.2 edge-edge check values (crossing edges, parallel edges)."""
    ea0, ea1 = np.array([0.0, 0, 0]), np.array([1.0, 0, 0])
    eb0, eb1 = np.array([0.5, -1, 1]), np.array([0.5, 1, 1])
    assert dist.edge_edge_case(ea0, ea1, eb0, eb1) == dist.EA_EB
    assert dist.edge_edge_distance2(ea0, ea1, eb0, eb1) == pytest.approx(1.0, rel=1e-15)
    eb0, eb1 = np.array([0.0, 1, 0]), np.array([1.0, 1, 0])
    case = dist.edge_edge_case(ea0, ea1, eb0, eb1)
    assert case != dist.EA_EB  # parallel: routed to the point cases
    assert dist.edge_edge_distance2(ea0, ea1, eb0, eb1) == pytest.approx(1.0, rel=1e-15)


def test_point_helpers_match_brute_force():
    """Check point-edge and point-plane helpers against dense sampling / projection."""
    rng = np.random.default_rng(3)
    ts = np.linspace(0.0, 1.0, 20001)
    for _ in range(50):
        p, e0, e1 = rng.normal(size=(3, 3))
        brute = np.min(np.sum((e0 + ts[:, None] * (e1 - e0) - p) ** 2, axis=1))
        assert dist.point_edge_distance2(p, e0, e1) == pytest.approx(brute, rel=1e-6, abs=1e-12)
        o, n = rng.normal(size=(2, 3))
        proj = np.sum((p - o) * n) / np.sqrt(np.sum(n * n))
        assert dist.point_plane_distance2(p, o, n) == pytest.approx(proj**2, rel=1e-13)
        g = np.zeros(3)
        H = np.zeros((3, 3))
        dist.point_plane_distance2_derivatives(p, o, n, g, H)
        fd = [
            (dist.point_plane_distance2(p + h, o, n) - dist.point_plane_distance2(p - h, o, n)) / 2e-6
            for h in 1e-6 * np.eye(3)
        ]
        np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(H, 2 * np.outer(n, n) / np.sum(n * n), rtol=1e-14)


def test_point_triangle_matches_brute_force_minimisation():
    """Check d_PT against a dense barycentric grid (upper bound) and a projected-gradient refinement."""
    rng = np.random.default_rng(4)
    X = pt_configs(rng, 300)
    g = np.linspace(0.0, 1.0, 201)
    U, V = np.meshgrid(g, g)
    mask = U + V <= 1.0
    U, V = U[mask], V[mask]
    for x in X:
        p, t0, t1, t2 = x
        pts = t0 + U[:, None] * (t1 - t0) + V[:, None] * (t2 - t0)
        brute = np.min(np.sum((pts - p) ** 2, axis=1))
        d = np.sqrt(dist.point_triangle_distance2(p, t0, t1, t2))
        spacing = (np.sqrt(np.sum((t1 - t0) ** 2)) + np.sqrt(np.sum((t2 - t0) ** 2))) / 200
        assert d <= np.sqrt(brute) * (1 + 1e-12)  # the exact minimum is never above a sample
        assert d >= np.sqrt(brute) - spacing  # and every triangle point is within `spacing` of a sample


# --------------------------------------------------------------------------- finite differences


def _check_derivatives_per_case(X, case_values, batch, case_of, distance2, gradient):
    """Central-difference check of ``gradient`` against ``distance2`` at up to 12 configurations per
    closest-feature case (``batch``'s first output) from the first two thirds of ``X`` (N, 4, 3): at least 5 per
    case where ``case_of`` is stable under the steps, relative errors below 1e-6."""
    k = 2 * (len(X) // 3)
    cases = batch(X)[0][:k]
    worst = np.zeros(2)
    tested = dict.fromkeys(case_values, 0)
    for case, x in _pick_per_case(X[:k], cases, case_values, 12):

        def stable(y, case=case):
            return case_of(*y.reshape(4, 3)) == case

        def value(y):
            return distance2(*y.reshape(4, 3))

        res = _fd_check(value, gradient, x, 1e-6, stable)
        if res is None:
            continue
        tested[case] += 1
        worst = np.maximum(worst, res)
    assert min(tested.values()) >= 5, tested
    assert worst[0] < 1e-6 and worst[1] < 1e-6, worst


def test_point_triangle_derivatives_match_finite_differences():
    """Compare PT gradients/Hessians with central differences for every closest-feature case."""
    X = pt_configs(np.random.default_rng(10), 3000)
    _check_derivatives_per_case(
        X, PT_CASES, pt_batch, dist.point_triangle_case, dist.point_triangle_distance2, _pt_grad
    )


def test_edge_edge_derivatives_match_finite_differences():
    """Compare EE gradients/Hessians with central differences for every closest-feature case."""
    X = ee_configs(np.random.default_rng(11), 3000)
    _check_derivatives_per_case(X, EE_CASES, ee_batch, dist.edge_edge_case, dist.edge_edge_distance2, _ee_grad)


def test_near_parallel_edge_edge_derivatives_match_finite_differences():
    """Check the derivatives of the active case for (nearly) parallel edges against central differences
    of that case's distance (the min over cases has a kink exactly at parallel overlap)."""
    rng = np.random.default_rng(12)
    X = ee_configs(rng, 3000)[2000:]
    cases = ee_batch(X)[0]
    ea = X[:, 1] - X[:, 0]
    eb = X[:, 3] - X[:, 2]
    sin2 = np.sum(np.cross(ea, eb) ** 2, axis=1) / (np.sum(ea * ea, axis=1) * np.sum(eb * eb, axis=1))
    parallel = np.flatnonzero(sin2 < dist.EDGE_EDGE_PARALLEL_THRESHOLD)
    near = np.flatnonzero((sin2 > 1e-12) & (sin2 < 1e-8))
    assert len(parallel) > 20 and len(near) > 20
    worst = np.zeros(2)
    for i in np.concatenate([parallel[:20], near[:20]]):
        case = cases[i]

        def value(y, case=case):
            P = y.reshape(4, 3)
            return dist._edge_edge_value(P[0], P[1], P[2], P[3], case)

        def grad_fixed(y, case=case):
            g = np.zeros(12)
            H = np.zeros((12, 12))
            P = y.reshape(4, 3)
            w, d0, d1, e0, e1, r, m = dist._edge_edge_setup(P[0], P[1], P[2], P[3], case)
            dist._write_envelope_derivatives(4, w, d0, d1, e0, e1, r, m, g, H)
            return g, H

        if case == dist.EA_EB:
            continue  # line-line with sin² ~ 1e-10: ill-conditioned, checked by the ipctk test
        g, H = grad_fixed(X[i].ravel())
        g_full, H_full = _ee_grad(X[i].ravel())
        np.testing.assert_array_equal(g, g_full)  # the public function uses this case's formula
        res = _fd_check(value, grad_fixed, X[i], 1e-6, lambda y: True)
        worst = np.maximum(worst, res)
    assert worst[0] < 1e-6 and worst[1] < 1e-6, worst


def test_mollifier_derivatives_match_finite_differences():
    """Compare the EE cross-norm and mollifier gradients/Hessians with central differences."""
    rng = np.random.default_rng(13)
    X = ee_configs(rng, 600)[:40]
    worst = np.zeros(4)
    active = 0
    for x in X:
        cross = np.cross(x[1] - x[0], x[3] - x[2])
        # c / eps_x in [0.05, 0.95]: the mollified branch, away from its C1 switch at c = eps_x
        eps_x = np.sum(cross * cross) / rng.uniform(0.05, 0.95)

        def c_value(y):
            P = y.reshape(4, 3)
            return dist.edge_edge_cross2(P[0], P[1], P[2], P[3], np.zeros(12), np.zeros((12, 12)))

        def c_grad(y):
            g = np.zeros(12)
            H = np.zeros((12, 12))
            P = y.reshape(4, 3)
            dist.edge_edge_cross2(P[0], P[1], P[2], P[3], g, H)
            return g, H

        def m_value(y, eps_x=eps_x):
            P = y.reshape(4, 3)
            return dist.edge_edge_mollifier_value(P[0], P[1], P[2], P[3], eps_x)

        def m_grad(y, eps_x=eps_x):
            g = np.zeros(12)
            H = np.zeros((12, 12))
            P = y.reshape(4, 3)
            dist.edge_edge_mollifier(P[0], P[1], P[2], P[3], eps_x, g, H)
            return g, H

        active += m_value(x.ravel()) < 1.0
        h = 1e-6 * np.sqrt(np.max(np.abs(x)))
        worst[:2] = np.maximum(worst[:2], _fd_check(c_value, c_grad, x, h, lambda y: True))
        worst[2:] = np.maximum(worst[2:], _fd_check(m_value, m_grad, x, h, lambda y: True))
    assert active == len(X), active
    assert np.all(worst < 1e-6), worst


# --------------------------------------------------------------------------- ipctk comparison


def _q(v):
    return [Fraction(float(c)) for c in v]


def _qsub(a, b):
    return [a[i] - b[i] for i in range(3)]


def _qdot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _qcross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _qpoint_segment(p, a, b):
    e = _qsub(b, a)
    t = min(max(_qdot(_qsub(p, a), e) / _qdot(e, e), Fraction(0)), Fraction(1))
    r = [p[i] - a[i] - t * e[i] for i in range(3)]
    return _qdot(r, r)


def exact_pt_d2(x):
    """Exact (rational arithmetic) point–triangle d² of the float64 input (4, 3): the minimum over the face
    (if p projects inside) and the three clamped point–segment distances. Independent of any case logic."""
    p, t0, t1, t2 = (_q(v) for v in x)
    e0, e1, w = _qsub(t1, t0), _qsub(t2, t0), _qsub(p, t0)
    a00, a01, a11 = _qdot(e0, e0), _qdot(e0, e1), _qdot(e1, e1)
    b0, b1 = _qdot(e0, w), _qdot(e1, w)
    det = a00 * a11 - a01 * a01
    best = min(_qpoint_segment(p, t0, t1), _qpoint_segment(p, t1, t2), _qpoint_segment(p, t2, t0))
    if det != 0:
        u = (a11 * b0 - a01 * b1) / det
        v = (a00 * b1 - a01 * b0) / det
        if u >= 0 and v >= 0 and u + v <= 1:
            r = [w[i] - u * e0[i] - v * e1[i] for i in range(3)]
            best = min(best, _qdot(r, r))
    return float(best)


def exact_ee_d2(x):
    """Exact (rational arithmetic) edge–edge d²: the line–line distance if the lines' closest points lie
    inside both segments, else the minimum of the four clamped point–segment distances."""
    a0, a1, b0, b1 = (_q(v) for v in x)
    u, v, w = _qsub(a1, a0), _qsub(b1, b0), _qsub(a0, b0)
    best = min(
        _qpoint_segment(a0, b0, b1),
        _qpoint_segment(a1, b0, b1),
        _qpoint_segment(b0, a0, a1),
        _qpoint_segment(b1, a0, a1),
    )
    a, b, c, d, e = _qdot(u, u), _qdot(u, v), _qdot(v, v), _qdot(u, w), _qdot(v, w)
    det = a * c - b * b
    if det != 0:
        s = (b * e - c * d) / det
        t = (a * e - b * d) / det
        if 0 <= s <= 1 and 0 <= t <= 1:
            r = [w[i] + s * u[i] - t * v[i] for i in range(3)]
            best = min(best, _qdot(r, r))
    return float(best)


def _norm(v):
    return float(np.sqrt(np.sum(v * v)))


def _condition(points, kind, d):
    """Relative condition estimate of a case formula in float64 (forward error ~ eps * this)."""
    if kind == "pp":
        return 1.0
    if kind == "pl":  # |(a - p) x (b - p)|² / |b - a|²
        p, a, b = points
        return 1.0 + _norm(a - p) * _norm(b - p) / (d * _norm(b - a))
    if kind == "plane":  # ((p - t0) . n)² / |n|², n = (t1 - t0) x (t2 - t0)
        p, t0, t1, t2 = points
        e0, e1 = t1 - t0, t2 - t0
        return 1.0 + _norm(p - t0) * _norm(e0) * _norm(e1) / (d * _norm(np.cross(e0, e1)))
    a0, a1, b0, b1 = points  # ((ea0 - eb0) . n)² / |n|², n = ea x eb
    u, v = a1 - a0, b1 - b0
    return 1.0 + _norm(a0 - b0) * _norm(u) * _norm(v) / (d * _norm(np.cross(u, v)))


PT_FORMULA = {
    dist.PP_T0: ("pp", (0, 1)),
    dist.PP_T1: ("pp", (0, 2)),
    dist.PP_T2: ("pp", (0, 3)),
    dist.PE_T0T1: ("pl", (0, 1, 2)),
    dist.PE_T1T2: ("pl", (0, 2, 3)),
    dist.PE_T2T0: ("pl", (0, 3, 1)),
    dist.PT_FACE: ("plane", (0, 1, 2, 3)),
}
EE_FORMULA = {
    dist.EA0_EB0: ("pp", (0, 2)),
    dist.EA0_EB1: ("pp", (0, 3)),
    dist.EA1_EB0: ("pp", (1, 2)),
    dist.EA1_EB1: ("pp", (1, 3)),
    dist.EA_EB0: ("pl", (2, 0, 1)),
    dist.EA_EB1: ("pl", (3, 0, 1)),
    dist.EA0_EB: ("pl", (0, 2, 3)),
    dist.EA1_EB: ("pl", (1, 2, 3)),
    dist.EA_EB: ("ll", (0, 1, 2, 3)),
}

ROUNDING_BOUND = 64 * np.finfo(float).eps
"""Forward error allowed per unit of condition number (d² is a few products and one quotient)."""


def _check_against_ipctk_and_exact(
    X, cases, d2, ref_case, ref_d2, exact, formula, degenerate_start, rng, heuristic=None
):
    """Compare with ipctk (case and d² to 1e-10 relative) and judge every disagreement with exact arithmetic.

    Disagreements are allowed only among the near-degenerate configurations and only where double
    precision cannot decide: there our d² must equal the exact distance of the float input up to the
    rounding bound of its formula (``ROUNDING_BOUND * condition``, at least 1e-10). A random sample of
    agreeing configurations is checked the same way (validates the exact reference). ``heuristic`` (mask)
    marks configurations decided by ipctk's parallel-edge rule, which is an approximation by design
    (its pick can be 1e-8 relatively above the true minimum): those must agree with ipctk instead.
    Returns a mask of the agreeing configurations.
    """
    rel = _rel(d2, ref_d2)
    if heuristic is None:
        heuristic = np.zeros(len(X), dtype=bool)
    bad = np.flatnonzero((rel > 1e-10) | (cases != ref_case))
    assert np.all(bad >= degenerate_start), bad[bad < degenerate_start]  # generic and region-targeted: all agree
    assert not np.any(heuristic[bad]), bad[heuristic[bad]]
    assert len(bad) <= 0.02 * len(X), len(bad)
    sample = rng.choice(np.flatnonzero(~heuristic & (rel <= 1e-10) & (cases == ref_case)), size=100, replace=False)
    for i in np.concatenate([bad, sample]):
        kind, idx = formula[int(cases[i])]
        ex = exact(X[i])
        err = abs(d2[i] - ex) / ex
        cond = _condition(X[i][list(idx)], kind, np.sqrt(ex))
        assert err <= max(1e-10, ROUNDING_BOUND * cond), (i, cases[i], ref_case[i], err, cond)
    agree = np.ones(len(X), dtype=bool)
    agree[bad] = False
    return agree


def _rel(a, b):
    return np.abs(a - b) / np.maximum(np.abs(b), 1e-300)


def _block_rel(a, b):
    """Per-configuration ``max|a - b| / max|b|`` over the trailing axes."""
    axes = tuple(range(1, a.ndim))
    return np.max(np.abs(a - b), axis=axes) / np.maximum(np.max(np.abs(b), axis=axes), 1e-300)


def _batch_and_ipctk(ipctk, X, batch, kind):
    """The batch kernel's case (N,), d² (N,), gradients (N, 12) and Hessians (N, 12, 12) of ``X`` (N, 4, 3), checked
    self-consistent and exactly symmetric, followed by ipctk's four for ``kind`` ("point_triangle", "edge_edge")."""
    cases, d2, d2_value, grads, hessians = batch(X)
    np.testing.assert_array_equal(d2, d2_value)
    np.testing.assert_array_equal(hessians, hessians.transpose(0, 2, 1))  # exactly symmetric
    distance_type, distance = getattr(ipctk, f"{kind}_distance_type"), getattr(ipctk, f"{kind}_distance")
    gradient, hessian = getattr(ipctk, f"{kind}_distance_gradient"), getattr(ipctk, f"{kind}_distance_hessian")
    ref_case = np.array([int(distance_type(*x)) for x in X])
    ref = [np.array([f(*x) for x in X]) for f in (distance, gradient, hessian)]
    return cases, d2, grads, hessians, ref_case, *ref


def test_point_triangle_matches_ipctk():
    """Agree with ipctk on 10 000 PT configurations: case, d² (1e-10 relative), gradient and Hessian."""
    ipctk = pytest.importorskip("ipctk")
    X = pt_configs(np.random.default_rng(20), N_IPCTK)
    cases, d2, grads, hessians, ref_case, ref_d2, ref_g, ref_H = _batch_and_ipctk(ipctk, X, pt_batch, "point_triangle")
    assert set(np.unique(cases)) == set(PT_CASES)
    generic = slice(0, 2 * (N_IPCTK // 3))
    agree = _check_against_ipctk_and_exact(
        X, cases, d2, ref_case, ref_d2, exact_pt_d2, PT_FORMULA, generic.stop, np.random.default_rng(30)
    )
    err_g = _block_rel(grads, ref_g)
    err_H = _block_rel(hessians, ref_H)
    assert np.max(err_g[generic]) < 1e-9 and np.max(err_H[generic]) < 1e-9, (err_g.max(), err_H.max())
    # near-degenerate configurations (slivers, gaps down to 1e-6): both sides lose digits to cancellation
    assert np.max(err_g[agree]) < 1e-6 and np.max(err_H[agree]) < 1e-6, (err_g.max(), err_H.max())


def test_edge_edge_matches_ipctk():
    """Agree with ipctk on 10 000 EE configurations: case (incl. the parallel fallback), d², gradient, Hessian."""
    ipctk = pytest.importorskip("ipctk")
    X = ee_configs(np.random.default_rng(21), N_IPCTK)
    cases, d2, grads, hessians, ref_case, ref_d2, ref_g, ref_H = _batch_and_ipctk(ipctk, X, ee_batch, "edge_edge")
    assert set(np.unique(cases)) == set(EE_CASES)
    ea = X[:, 1] - X[:, 0]
    eb = X[:, 3] - X[:, 2]
    sin2 = np.sum(np.cross(ea, eb) ** 2, axis=1) / (np.sum(ea * ea, axis=1) * np.sum(eb * eb, axis=1))
    assert np.sum(sin2 < dist.EDGE_EDGE_PARALLEL_THRESHOLD) > 100  # the parallel fallback is exercised
    agree = _check_against_ipctk_and_exact(
        X,
        cases,
        d2,
        ref_case,
        ref_d2,
        exact_ee_d2,
        EE_FORMULA,
        2 * (N_IPCTK // 3),
        np.random.default_rng(31),
        heuristic=sin2 < dist.EDGE_EDGE_PARALLEL_THRESHOLD,
    )
    err_g = _block_rel(grads, ref_g)
    err_H = _block_rel(hessians, ref_H)
    # line-line with sin² near the parallel threshold is ill-conditioned (1/sin²): compare those loosely
    well = agree & ((cases != dist.EA_EB) | (sin2 > 1e-8))
    assert np.max(err_g[well]) < 1e-9 and np.max(err_H[well]) < 1e-9, (err_g[well].max(), err_H[well].max())


def test_mollifier_matches_ipctk():
    """Agree with ipctk on the EE mollifier threshold, cross norm and mollifier (values and derivatives)."""
    ipctk = pytest.importorskip("ipctk")
    X = ee_configs(np.random.default_rng(22), N_IPCTK)
    # scale the threshold so that both branches (c < eps_x, c >= eps_x) occur often
    n = len(X)
    eps_scale = 10.0 ** np.random.default_rng(23).uniform(0.0, 3.0, size=n)
    eps_x = np.zeros(n)
    m = np.zeros(n)
    m_value = np.zeros(n)
    c = np.zeros(n)
    g = np.zeros((n, 12))
    H = np.zeros((n, 12, 12))
    cg = np.zeros((n, 12))
    cH = np.zeros((n, 12, 12))
    _mollifier_batch(np.ascontiguousarray(X), eps_scale, eps_x, m, m_value, c, g, H, cg, cH)
    np.testing.assert_array_equal(m, m_value)
    np.testing.assert_array_equal(H, H.transpose(0, 2, 1))
    np.testing.assert_array_equal(cH, cH.transpose(0, 2, 1))
    ref_eps = np.array([ipctk.edge_edge_mollifier_threshold(*x) for x in X]) * eps_scale
    ref_m = np.array([ipctk.edge_edge_mollifier(*x, e) for x, e in zip(X, ref_eps, strict=True)])
    ref_c = np.array([ipctk.edge_edge_cross_squarednorm(*x) for x in X])
    ref_g = np.array([ipctk.edge_edge_mollifier_gradient(*x, e) for x, e in zip(X, ref_eps, strict=True)])
    ref_H = np.array([ipctk.edge_edge_mollifier_hessian(*x, e) for x, e in zip(X, ref_eps, strict=True)])
    assert 0.2 < np.mean(m < 1.0) < 0.8  # both branches
    assert np.max(_rel(eps_x, ref_eps)) < 1e-13
    # c = |ea x eb|² of nearly parallel edges is rounding noise on both sides (sin² < 1e-10): there m is
    # compared in absolute terms (m is in [0, 1]), elsewhere relatively
    sig = ref_c > 1e-10 * np.sum((X[:, 1] - X[:, 0]) ** 2, axis=1) * np.sum((X[:, 3] - X[:, 2]) ** 2, axis=1)
    assert np.sum(~sig) > 1000
    assert np.max(np.abs(m - ref_m)) < 1e-12
    assert np.max(_rel(m[sig], ref_m[sig])) < 1e-10
    assert np.max(_rel(c[sig], ref_c[sig])) < 1e-10
    active = m < 1.0
    assert np.all(g[~active] == 0.0) and np.all(H[~active] == 0.0)
    err_g = _block_rel(g[active & sig], ref_g[active & sig])
    err_H = _block_rel(H[active & sig], ref_H[active & sig])
    assert np.max(err_g) < 1e-9 and np.max(err_H) < 1e-9, (err_g.max(), err_H.max())
    ref_cg = np.array([ipctk.edge_edge_cross_squarednorm_gradient(*x) for x in X[:2000]])
    ref_cH = np.array([ipctk.edge_edge_cross_squarednorm_hessian(*x) for x in X[:2000]])
    assert np.max(_block_rel(cg[:2000], ref_cg)) < 1e-12
    assert np.max(_block_rel(cH[:2000], ref_cH)) < 1e-12
