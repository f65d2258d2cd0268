"""IPC barrier (on squared distances), adaptive barrier stiffness and lagged mollified friction.

References: the spec's check values (D.3.1 barrier numbers, D.3.5 mollifier numbers), central finite
differences (barrier derivatives, the chain rule ``kappa b(d²(x))`` over PT/EE configurations, the
friction potential), the IPC Toolkit (ipctk 1.6.1: barrier and its derivatives, adaptive stiffness,
``smooth_friction_*``) and analytic Coulomb physics (sliding force magnitude ``mu N``, the linear
regime ``mu N (2/eps_h) u`` of the mollifier, action = reaction).
"""

import numpy as np
import pytest
from contact_lab.core.ipc import barrier as bar
from contact_lab.core.ipc import distance as dist
from contact_lab.core.ipc import friction as fric

# --------------------------------------------------------------------------- barrier


@pytest.mark.parametrize(
    ("d", "b", "b1", "b2"),
    [
        (0.5, 0.1732868, -1.1931472, 6.3862944),
        (0.1, 1.8650939, -12.244653, 121.60517),
        (0.9, 0.0010536, -0.0321832, 0.6675112),
    ],
)
def test_barrier_spec_values(d, b, b1, b2):
    """Reproduce the D.3.1 check values (dhat = 1; the argument is d² here, dhat² = 1)."""
    # the spec prints 7 decimals or 8 significant digits: allow half a unit of the last one
    assert bar.barrier(d, 1.0) == pytest.approx(b, rel=5e-8, abs=5e-8)
    assert bar.barrier_first_derivative(d, 1.0) == pytest.approx(b1, rel=5e-8, abs=5e-8)
    assert bar.barrier_second_derivative(d, 1.0) == pytest.approx(b2, rel=5e-8, abs=5e-8)


def test_barrier_clamping_scaling_and_sign():
    """Check C2 clamping at dhat², +inf at 0, the scaling law b(s d, s dhat) = s² b and b > 0, b' < 0, b'' > 0."""
    for f in (bar.barrier, bar.barrier_first_derivative, bar.barrier_second_derivative):
        assert f(1.0, 1.0) == 0.0 and f(2.0, 1.0) == 0.0
    assert bar.barrier(0.0, 1.0) == np.inf and bar.barrier(-1.0, 1.0) == np.inf
    assert bar.barrier(0.005, 0.01) == pytest.approx(1.7328680e-5, rel=5e-8)
    assert bar.barrier(0.005, 0.01) == pytest.approx(1e-4 * bar.barrier(0.5, 1.0), rel=1e-14)
    x = np.linspace(1e-6, 1 - 1e-6, 1001)
    assert all(bar.barrier(v, 1.0) > 0 and bar.barrier_first_derivative(v, 1.0) < 0 for v in x)
    assert all(bar.barrier_second_derivative(v, 1.0) > 0 for v in x)
    # C2 at dhat: the one-sided limits vanish
    eps = 1e-7
    assert abs(bar.barrier(1 - eps, 1.0)) < 1e-20
    assert abs(bar.barrier_first_derivative(1 - eps, 1.0)) < 1e-13
    assert abs(bar.barrier_second_derivative(1 - eps, 1.0)) < 1e-6


def test_barrier_derivatives_match_finite_differences():
    """Compare b' and b'' with central differences of b and b' over the active range."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(200):
        dhat2 = 10.0 ** rng.uniform(-8, 0)
        d2 = dhat2 * rng.uniform(0.02, 0.98)
        h = 1e-6 * d2
        fd1 = (bar.barrier(d2 + h, dhat2) - bar.barrier(d2 - h, dhat2)) / (2 * h)
        fd2 = (bar.barrier_first_derivative(d2 + h, dhat2) - bar.barrier_first_derivative(d2 - h, dhat2)) / (2 * h)
        worst = max(worst, abs(fd1 / bar.barrier_first_derivative(d2, dhat2) - 1))
        worst = max(worst, abs(fd2 / bar.barrier_second_derivative(d2, dhat2) - 1))
    assert worst < 1e-6, worst


def test_barrier_matches_ipctk():
    """Agree with ipctk's barrier and derivatives (1e-10 relative) on 10 000 (d², dhat²) pairs."""
    ipctk = pytest.importorskip("ipctk")
    rng = np.random.default_rng(1)
    dhat2 = 10.0 ** rng.uniform(-10, 1, size=10_000)
    d2 = dhat2 * rng.uniform(-0.1, 1.2, size=10_000)
    d2[:50] = 0.0
    d2[50:100] = dhat2[50:100]
    for ours, theirs in (
        (bar.barrier, ipctk.barrier),
        (bar.barrier_first_derivative, ipctk.barrier_first_derivative),
        (bar.barrier_second_derivative, ipctk.barrier_second_derivative),
    ):
        a = np.array([ours(x, y) for x, y in zip(d2, dhat2, strict=True)])
        b = np.array([theirs(x, y) for x, y in zip(d2, dhat2, strict=True)])
        assert np.array_equal(np.isinf(a), np.isinf(b)) and np.array_equal(a == 0, b == 0)
        finite = np.isfinite(b) & (b != 0)
        assert finite.sum() > 7000
        np.testing.assert_allclose(a[finite], b[finite], rtol=1e-10, atol=0)


def _contact_energy(kind, x, dhat2, kappa):
    P = x.reshape(4, 3)
    d2 = (dist.point_triangle_distance2 if kind == "pt" else dist.edge_edge_distance2)(P[0], P[1], P[2], P[3])
    return kappa * bar.barrier(d2, dhat2)


def _contact_derivatives(kind, x, dhat2, kappa):
    """Chain rule of spec D.3.1 on squared distances: grad = k b' grad d², hess = k (b'' g g^T + b' H)."""
    P = x.reshape(4, 3)
    g = np.zeros(12)
    H = np.zeros((12, 12))
    f = dist.point_triangle_distance2_derivatives if kind == "pt" else dist.edge_edge_distance2_derivatives
    d2 = f(P[0], P[1], P[2], P[3], g, H)
    b1 = bar.barrier_first_derivative(d2, dhat2)
    b2 = bar.barrier_second_derivative(d2, dhat2)
    return kappa * b1 * g, kappa * (b2 * np.outer(g, g) + b1 * H)


@pytest.mark.parametrize("kind", ["pt", "ee"])
def test_barrier_chain_rule_matches_finite_differences(kind):
    """Check grad/hess of kappa b(d²(x)) by central differences on random PT/EE configurations of every case."""
    rng = np.random.default_rng(2 if kind == "pt" else 3)
    case_fn = dist.point_triangle_case if kind == "pt" else dist.edge_edge_case
    seen = set()
    worst_g = worst_H = 0.0
    for _ in range(400):
        x = rng.normal(size=(4, 3))
        P = x
        case = case_fn(P[0], P[1], P[2], P[3])
        if case in seen and len(seen) < (7 if kind == "pt" else 9):
            continue
        seen.add(case)
        d2 = (dist.point_triangle_distance2 if kind == "pt" else dist.edge_edge_distance2)(*x)
        dhat2 = d2 / rng.uniform(0.1, 0.9)
        kappa = 10.0 ** rng.uniform(-2, 4)
        x0 = x.ravel()
        g0, H0 = _contact_derivatives(kind, x0, dhat2, kappa)
        h = 1e-6
        fd_g = np.zeros(12)
        fd_H = np.zeros((12, 12))
        stable = True
        for i in range(12):
            xp, xm = x0.copy(), x0.copy()
            xp[i] += h
            xm[i] -= h
            stable &= case_fn(*xp.reshape(4, 3)) == case and case_fn(*xm.reshape(4, 3)) == case
            fd_g[i] = (_contact_energy(kind, xp, dhat2, kappa) - _contact_energy(kind, xm, dhat2, kappa)) / (2 * h)
            fd_H[:, i] = (
                _contact_derivatives(kind, xp, dhat2, kappa)[0] - _contact_derivatives(kind, xm, dhat2, kappa)[0]
            ) / (2 * h)
        if not stable:
            continue
        worst_g = max(worst_g, np.max(np.abs(g0 - fd_g)) / np.max(np.abs(fd_g)))
        worst_H = max(worst_H, np.max(np.abs(H0 - fd_H)) / np.max(np.abs(fd_H)))
    assert len(seen) == (7 if kind == "pt" else 9), seen
    assert worst_g < 1e-6 and worst_H < 1e-6, (worst_g, worst_H)


# --------------------------------------------------------------------------- adaptive stiffness


def test_initial_barrier_stiffness_matches_ipctk():
    """Agree with ipctk.initial_barrier_stiffness (clamped-log barrier, dhat a distance) inside and at the clamps."""
    ipctk = pytest.importorskip("ipctk")
    rng = np.random.default_rng(4)
    barrier = ipctk.ClampedLogBarrier()
    regimes = {"inside": 0, "low": 0, "high": 0, "zero": 0}
    for trial in range(400):
        bbox = 10.0 ** rng.uniform(-2, 2)
        dhat = bbox * 10.0 ** rng.uniform(-5, -1)
        if trial % 50 == 0:
            dhat = 1e-9 * bbox  # d0 = (1e-8 bbox)² >= dhat²: ipctk's fallback d0 = dhat²/2
        mass = 10.0 ** rng.uniform(-4, 2)
        gb = rng.normal(size=30)
        # target kappa on a log scale around [kappa_min, kappa_max] of this configuration
        k_min = bar.initial_barrier_stiffness(bbox, dhat, mass, -gb, gb)[1] / 100
        target = k_min * 10.0 ** rng.uniform(-1, 3)
        ge = -target * gb + 1e-3 * rng.normal(size=30)
        if trial % 7 == 0:
            gb = np.zeros(30)
        ours = bar.initial_barrier_stiffness(bbox, dhat, mass, ge, gb)
        theirs = ipctk.initial_barrier_stiffness(bbox, barrier, dhat, mass, ge, gb)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
        k_min = ours[1] / 100
        if trial % 7 == 0:
            regimes["zero"] += 1
        elif ours[0] == k_min:
            regimes["low"] += 1
        elif ours[0] == ours[1]:
            regimes["high"] += 1
        else:
            regimes["inside"] += 1
    assert min(regimes.values()) > 10, regimes


def test_update_barrier_stiffness_matches_ipctk():
    """Agree with ipctk.update_barrier_stiffness (squared distances) on a grid around its thresholds."""
    ipctk = pytest.importorskip("ipctk")
    doubled = 0
    for bbox in (0.1, 1.0, 30.0):
        eps2 = (1e-9 * bbox) ** 2
        for prev in (0.5 * eps2, 0.99 * eps2, eps2, 2 * eps2):
            for cur in (0.1 * eps2, 0.6 * eps2, eps2, 3 * eps2):
                for kappa, kmax in ((1.0, 100.0), (60.0, 100.0), (100.0, 100.0)):
                    ours = bar.update_barrier_stiffness(prev, cur, kmax, kappa, bbox)
                    theirs = ipctk.update_barrier_stiffness(prev, cur, kmax, kappa, bbox)
                    assert ours == theirs
                    doubled += ours == 2 * kappa
    assert doubled > 0


# --------------------------------------------------------------------------- friction mollifier


def test_friction_mollifier_spec_values():
    """Reproduce the D.3.5 numbers (h = 0.01, eps_v = 0.1 -> eps_h = 1e-3)."""
    eps = 0.1 * 0.01
    assert fric.friction_f1(0.0, eps) == 0.0
    assert fric.friction_f1(5e-4, eps) == pytest.approx(0.75, rel=1e-14)
    assert fric.friction_f1(1e-3, eps) == 1.0
    assert fric.friction_f1_over_s(5e-4, eps) == pytest.approx(1500.0, rel=1e-14)
    assert fric.friction_f1_over_s(0.0, eps) == pytest.approx(2000.0, rel=1e-14)
    assert fric.friction_f0(0.0, eps) == pytest.approx(3.333333e-4, rel=1e-6)
    assert fric.friction_f0(5e-4, eps) == pytest.approx(5.41667e-4, rel=1e-6)
    assert fric.friction_f0(1e-3, eps) == pytest.approx(1e-3, rel=1e-14)
    assert fric.friction_f2_term(0.0, eps) == -np.inf
    # C1 continuity of f0 and continuity of f1 at eps_h
    assert fric.friction_f0(eps * (1 - 1e-9), eps) == pytest.approx(eps * (1 - 1e-9), rel=1e-15)  # f0' = 1
    assert fric.friction_f1(eps * (1 - 1e-9), eps) == pytest.approx(1.0, rel=1e-15)  # f1' = 0


def test_friction_mollifier_matches_ipctk():
    """Agree with ipctk's smooth_friction_f0/f1/f1_over_x/f2_x_minus_f1_over_x3 on 10 000 (s, eps_h) pairs."""
    ipctk = pytest.importorskip("ipctk")
    rng = np.random.default_rng(5)
    eps = 10.0 ** rng.uniform(-6, 0, size=10_000)
    s = eps * 10.0 ** rng.uniform(-4, 2, size=10_000)
    s[:20] = eps[:20]
    for ours, theirs in (
        (fric.friction_f0, ipctk.smooth_friction_f0),
        (fric.friction_f1, ipctk.smooth_friction_f1),
        (fric.friction_f1_over_s, ipctk.smooth_friction_f1_over_x),
        (fric.friction_f2_term, ipctk.smooth_friction_f2_x_minus_f1_over_x3),
    ):
        a = np.array([ours(x, e) for x, e in zip(s, eps, strict=True)])
        b = np.array([theirs(x, e) for x, e in zip(s, eps, strict=True)])
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=0)
    assert fric.friction_f2_term(0.0, 1e-3) == ipctk.smooth_friction_f2_x_minus_f1_over_x3(0.0, 1e-3)


def test_friction_mollifier_derivatives_match_finite_differences():
    """Check f0' = f1 and the f2 term (f1' s - f1)/s³ by central differences."""
    rng = np.random.default_rng(6)
    for _ in range(200):
        eps = 10.0 ** rng.uniform(-5, 0)
        s = eps * rng.choice([rng.uniform(0.01, 0.99), rng.uniform(1.01, 50.0)])
        h = 1e-6 * s
        f1 = (fric.friction_f0(s + h, eps) - fric.friction_f0(s - h, eps)) / (2 * h)
        assert f1 == pytest.approx(fric.friction_f1(s, eps), rel=1e-7)
        df1 = (fric.friction_f1(s + h, eps) - fric.friction_f1(s - h, eps)) / (2 * h)
        expected = (df1 * s - fric.friction_f1(s, eps)) / s**3
        assert fric.friction_f2_term(s, eps) == pytest.approx(expected, rel=1e-6, abs=1e-6 / s**3)


# --------------------------------------------------------------------------- lagged frame


def _pt_random_configs(rng, n):
    """Point–triangle configurations covering every case (point spread around the triangle)."""
    X = rng.normal(size=(n, 4, 3))
    t = X[:, 1:]
    uv = rng.uniform(-0.6, 1.6, size=(n, 2))
    nrm = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    X[:, 0] = (
        t[:, 0] + uv[:, :1] * (t[:, 1] - t[:, 0]) + uv[:, 1:] * (t[:, 2] - t[:, 0]) + rng.normal(size=(n, 1)) * nrm
    )
    return X


def _ee_random_configs(rng, n):
    """Edge–edge configurations: generic, plus exactly parallel and nearly parallel pairs."""
    X = rng.normal(size=(n, 4, 3))
    k = n // 4
    X[:k, 3] = X[:k, 2] + rng.uniform(-2, 2, size=(k, 1)) * (X[:k, 1] - X[:k, 0])  # exactly parallel
    X[k : 2 * k, 3] = (
        X[k : 2 * k, 2]
        + rng.uniform(0.3, 2, size=(k, 1)) * (X[k : 2 * k, 1] - X[k : 2 * k, 0])
        + 1e-9 * rng.normal(size=(k, 3))
    )
    return X


@pytest.mark.parametrize("kind", ["pt", "ee"])
def test_closest_weights_reproduce_the_distance(kind):
    """Check r = sum_k w_k x_k: |r|² equals d² for every case (incl. parallel edges) and sum(w) = 0."""
    rng = np.random.default_rng(7)
    X = _pt_random_configs(rng, 3000) if kind == "pt" else _ee_random_configs(rng, 3000)
    w = np.zeros(4)
    seen = set()
    worst = 0.0
    for x in X:
        if kind == "pt":
            fric.point_triangle_closest_weights(*x, w)
            d2 = dist.point_triangle_distance2(*x)
            seen.add(dist.point_triangle_case(*x))
            assert w[0] == 1.0 and np.all(w[1:] <= 1e-12)
        else:
            fric.edge_edge_closest_weights(*x, w)
            d2 = dist.edge_edge_distance2(*x)
            seen.add(dist.edge_edge_case(*x))
            assert w[0] + w[1] == pytest.approx(1.0, abs=1e-15) and np.all(w[:2] >= 0) and np.all(w[2:] <= 0)
        assert np.sum(w) == pytest.approx(0.0, abs=1e-15)
        r = w @ x
        scale = np.max(np.abs(x)) ** 2
        worst = max(worst, abs(np.sum(r * r) - d2) / max(d2, 1e-300) if d2 > 1e-8 * scale else 0.0)
    assert len(seen) == (7 if kind == "pt" else 9), seen
    assert worst < 1e-9, worst


@pytest.mark.parametrize("kind", ["pt", "ee"])
def test_tangent_basis_is_orthonormal_and_tangent(kind):
    """Check T^T T = I and T ⟂ contact normal (triangle normal, r/|r|, or ea x eb), incl. degenerate input."""
    rng = np.random.default_rng(8)
    X = _pt_random_configs(rng, 2000) if kind == "pt" else _ee_random_configs(rng, 2000)
    # degenerate additions: touching (r = 0), collinear/zero-length edges, degenerate triangles
    extra = []
    for _ in range(30):
        x = rng.normal(size=(4, 3))
        if kind == "pt":
            x[0] = x[1] + 0.2 * (x[2] - x[1]) + 0.3 * (x[3] - x[1])  # point on the face
            extra.append(x.copy())
            x[0] = 0.5 * (x[1] + x[2])  # point on an edge
            extra.append(x.copy())
            x[3] = x[1] + 2.0 * (x[2] - x[1])  # collinear triangle
            extra.append(x.copy())
        else:
            x[2] = 0.5 * (x[0] + x[1])
            x[3] = x[2] + (x[1] - x[0])  # parallel and touching
            extra.append(x.copy())
            x[3] = x[2]  # zero-length edge b
            extra.append(x.copy())
            x = rng.normal(size=(4, 3))
            x[2] = 0.3 * x[0] + 0.7 * x[1]  # crossing: r = 0 in the line-line case
            x[3] = 2 * x[2] - x[3]
            extra.append(x.copy())
    X = np.concatenate([X, np.array(extra)])
    basis = np.zeros((3, 2))
    w = np.zeros(4)
    for x in X:
        if kind == "pt":
            fric.point_triangle_tangent_basis(*x, basis)
            fric.point_triangle_closest_weights(*x, w)
            case = dist.point_triangle_case(*x)
        else:
            fric.edge_edge_tangent_basis(*x, basis)
            fric.edge_edge_closest_weights(*x, w)
            case = dist.edge_edge_case(*x)
        assert np.all(np.isfinite(basis))
        np.testing.assert_allclose(basis.T @ basis, np.eye(2), atol=1e-12)
        r = w @ x
        rn = np.sqrt(np.sum(r * r))
        if kind == "pt" and case == dist.PT_FACE:
            n = np.cross(x[2] - x[1], x[3] - x[1])
        elif kind == "ee" and case == dist.EA_EB:
            n = np.cross(x[1] - x[0], x[3] - x[2])
        elif rn > 1e-9 * np.max(np.abs(x)):
            n = r
        else:
            continue
        n = n / np.sqrt(np.sum(n * n))
        assert np.max(np.abs(basis.T @ n)) < 1e-9


# --------------------------------------------------------------------------- friction potential


def _random_frame(rng, anisotropic):
    """Lagged frame of a random PT contact; an anisotropic ellipse scales the basis columns."""
    x = _pt_random_configs(rng, 1)[0]
    basis = np.zeros((3, 2))
    weights = np.zeros(4)
    fric.point_triangle_tangent_basis(*x, basis)
    fric.point_triangle_closest_weights(*x, weights)
    if anisotropic:
        basis = basis * rng.uniform(0.2, 1.5, size=2)
    return np.ascontiguousarray(basis), weights


def _dx_with_slip(rng, basis, weights, s_target):
    """Random (12,) displacement whose tangential slip |T^T sum w_k dx_k| equals s_target."""
    dx = rng.normal(size=12)
    u = basis.T @ (weights @ dx.reshape(4, 3))
    return dx * (s_target / np.sqrt(np.sum(u * u)))


@pytest.mark.parametrize("anisotropic", [False, True])
def test_friction_potential_matches_finite_differences_and_is_psd(anisotropic):
    """Check grad/hess of mu N f0(|u|) by central differences in every regime, and a PSD Hessian."""
    rng = np.random.default_rng(9 + anisotropic)
    eps = 1e-2
    g = np.zeros(12)
    H = np.zeros((12, 12))
    worst_g = worst_H = worst_eig = 0.0
    for ratio in (0.02, 0.3, 0.7, 0.97, 1.05, 3.0, 50.0):
        for _ in range(6):
            basis, weights = _random_frame(rng, anisotropic)
            mu, N = rng.uniform(0.1, 1.0), 10.0 ** rng.uniform(-2, 3)
            dx = _dx_with_slip(rng, basis, weights, ratio * eps)
            value = fric.friction_potential(dx, basis, weights, mu, N, eps, g, H)
            assert value == pytest.approx(fric.friction_potential_value(dx, basis, weights, mu, N, eps), rel=1e-15)
            g0, H0 = g.copy(), H.copy()
            h = 1e-5 * eps
            fd_g = np.zeros(12)
            fd_H = np.zeros((12, 12))
            for i in range(12):
                e = np.zeros(12)
                e[i] = h
                fd_g[i] = (
                    fric.friction_potential_value(dx + e, basis, weights, mu, N, eps)
                    - fric.friction_potential_value(dx - e, basis, weights, mu, N, eps)
                ) / (2 * h)
                fric.friction_potential(dx + e, basis, weights, mu, N, eps, g, H)
                gp = g.copy()
                fric.friction_potential(dx - e, basis, weights, mu, N, eps, g, H)
                fd_H[:, i] = (gp - g) / (2 * h)
            worst_g = max(worst_g, np.max(np.abs(g0 - fd_g)) / np.max(np.abs(fd_g)))
            worst_H = max(worst_H, np.max(np.abs(H0 - fd_H)) / np.max(np.abs(fd_H)))
            np.testing.assert_array_equal(H0, H0.T)
            lam = np.linalg.eigvalsh(H0)
            worst_eig = min(worst_eig, lam[0] / lam[-1])
    assert worst_g < 1e-6 and worst_H < 1e-5, (worst_g, worst_H)
    assert worst_eig >= -1e-12, worst_eig


def test_friction_hessian_psd_at_zero_slip_and_eps():
    """Check the Hessian at s = 0 ((2/eps_h) T^T T blocks) and at s = eps_h (PSD, finite)."""
    rng = np.random.default_rng(11)
    basis, weights = _random_frame(rng, False)
    g = np.zeros(12)
    H = np.zeros((12, 12))
    eps = 1e-3
    fric.friction_potential(np.zeros(12), basis, weights, 0.5, 2.0, eps, g, H)
    assert np.all(g == 0.0)
    J = np.kron(weights, np.eye(3))  # (3, 12): r = J dx
    np.testing.assert_allclose(H, 0.5 * 2.0 * (2 / eps) * J.T @ basis @ basis.T @ J, rtol=1e-14, atol=1e-12)
    dx = _dx_with_slip(rng, basis, weights, eps)
    fric.friction_potential(dx, basis, weights, 0.5, 2.0, eps, g, H)
    assert np.all(np.isfinite(H)) and np.linalg.eigvalsh(H)[0] >= -1e-12 * np.max(np.abs(H))


def test_friction_force_is_coulomb_when_sliding_and_linear_when_sticking():
    """Check |force on p| = mu N while sliding (s >> eps_h), mu N (2/eps_h) u when s << eps_h, and action = reaction."""
    rng = np.random.default_rng(12)
    eps = 1e-3
    g = np.zeros(12)
    H = np.zeros((12, 12))
    for _ in range(50):
        basis, weights = _random_frame(rng, False)
        mu, N = rng.uniform(0.1, 1.0), 10.0 ** rng.uniform(-1, 3)
        # sliding: s = 100 eps_h
        dx = _dx_with_slip(rng, basis, weights, 100 * eps)
        fric.friction_potential(dx, basis, weights, mu, N, eps, g, H)
        force_p = -g[:3]
        u = basis.T @ (weights @ dx.reshape(4, 3))
        assert np.sqrt(np.sum(force_p**2)) == pytest.approx(mu * N, rel=1e-12)  # w_p = 1
        # opposes the slip, lies in the tangent plane
        np.testing.assert_allclose(
            force_p, -mu * N * basis @ (u / np.sqrt(np.sum(u * u))), rtol=1e-12, atol=1e-12 * mu * N
        )
        np.testing.assert_allclose(g.reshape(4, 3).sum(axis=0), 0.0, atol=1e-12 * mu * N)  # action = reaction
        # sticking regime: s = 1e-4 eps_h, force = mu N (2/eps_h - s/eps_h²) u ≈ mu N (2/eps_h) u
        dx = _dx_with_slip(rng, basis, weights, 1e-4 * eps)
        fric.friction_potential(dx, basis, weights, mu, N, eps, g, H)
        u = basis.T @ (weights @ dx.reshape(4, 3))
        linear = mu * N * (2 / eps) * (basis @ u)
        np.testing.assert_allclose(-g[:3], -linear, rtol=1e-4)
        assert np.sqrt(np.sum(g[:3] ** 2)) < mu * N * 2e-4 + 1e-15
