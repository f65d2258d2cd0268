"""The single-body reference solver (tests/core/soft_reference.py) against closed-form references."""

import math

import numpy as np
import pytest
from contact_lab.core.fem.materials import MaterialModel
from contact_lab.core.fem.primitives import box_tet_mesh
from contact_lab.core.linalg.bicgstab import bicgstab_solve
from contact_lab.core.linalg.csr import dense_to_csr
from contact_lab.core.soft.kernels_contact import (
    implicit_friction_gradient_jacobian,
    lagged_friction_energy,
    lagged_friction_gradient_hessian,
    plane_penalty_energy,
    plane_penalty_gradient_hessian,
)
from soft_reference import SoftBody, SolverSoftImplicit

G = 9.81


def _block(cells=(2, 2, 2), size=0.1, z0=0.0, **kwargs):
    vertices, tets = box_tet_mesh(cells, (0.0, 0.0, z0), (size, size, z0 + size))
    return SoftBody(vertices, tets, **kwargs)


# ----------------------------------------------------------------------------------------------
# kernels: finite-difference checks of the contact / friction derivatives
# ----------------------------------------------------------------------------------------------


def test_penalty_and_friction_derivatives_match_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1e-3, 2e-3, size=(5, 3))
    x_start = x + rng.uniform(-2e-5, 2e-5, size=(5, 3))
    free = np.ones(5, dtype=bool)
    pts = np.zeros((2, 3))
    nrm = np.array([[0.0, 0.0, 1.0], [0.6, 0.0, 0.8]])
    kappa, delta, mu, eps_h = 1.0e3, 1.0e-3, 0.4, 1.0e-5
    lam = rng.uniform(0.5, 2.0, size=(2, 5))

    def energy(y):
        return plane_penalty_energy(y, free, pts, nrm, kappa, delta) + lagged_friction_energy(
            y, x_start, nrm, lam, mu, eps_h
        )

    grad = np.zeros((5, 3))
    hess = np.zeros((5, 3, 3))
    plane_penalty_gradient_hessian(x, free, pts, nrm, kappa, delta, grad, hess)
    lagged_friction_gradient_hessian(x, x_start, nrm, lam, mu, eps_h, grad, hess)
    step = 1.0e-8
    for i in range(5):
        for a in range(3):
            xp, xm = x.copy(), x.copy()
            xp[i, a] += step
            xm[i, a] -= step
            fd = (energy(xp) - energy(xm)) / (2 * step)
            assert fd == pytest.approx(grad[i, a], rel=1e-5, abs=1e-7)
            gp, gm = np.zeros((5, 3)), np.zeros((5, 3))
            plane_penalty_gradient_hessian(xp, free, pts, nrm, kappa, delta, gp, np.zeros((5, 3, 3)))
            lagged_friction_gradient_hessian(xp, x_start, nrm, lam, mu, eps_h, gp, np.zeros((5, 3, 3)))
            plane_penalty_gradient_hessian(xm, free, pts, nrm, kappa, delta, gm, np.zeros((5, 3, 3)))
            lagged_friction_gradient_hessian(xm, x_start, nrm, lam, mu, eps_h, gm, np.zeros((5, 3, 3)))
            fd_col = (gp[i] - gm[i]) / (2 * step)
            np.testing.assert_allclose(hess[i, :, a], fd_col, rtol=1e-4, atol=1e-2)
        assert np.linalg.eigvalsh(hess[i]).min() >= -1e-9 * np.abs(hess[i]).max()


# ----------------------------------------------------------------------------------------------
# 1. free fall
# ----------------------------------------------------------------------------------------------


def _free_fall(**solver_options):
    """A block thrown at v0 falls for ``steps`` steps of ``h``: (body, end state, v0, x0, h, steps, g)."""
    body = _block(youngs_modulus=1.0e5)
    solver = SolverSoftImplicit(body, **solver_options)
    state = body.state()
    v0 = np.array([0.3, -0.1, 2.0])
    state.v[:] = v0
    x0 = state.x.copy()
    h, steps = 0.01, 20
    for _ in range(steps):
        solver.step(state, state, h)
        assert solver.stats.converged
    return body, state, v0, x0, h, steps, np.array([0.0, 0.0, -G])


def test_free_fall_matches_discrete_backward_euler_exactly():
    body, state, v0, x0, h, steps, g = _free_fall()
    # BE: v_k = v0 + k h g, x_N = x0 + h sum_{k=1..N} v_k
    v_n = v0 + steps * h * g
    x_shift = h * sum(v0 + k * h * g for k in range(1, steps + 1))
    np.testing.assert_allclose(state.v, np.broadcast_to(v_n, state.v.shape), atol=1e-10)
    np.testing.assert_allclose(state.x, x0 + x_shift, atol=1e-10)
    assert abs(body.elastic_energy(state.x)) < 1e-14


# ----------------------------------------------------------------------------------------------
# 2. hanging bar
# ----------------------------------------------------------------------------------------------


def test_hanging_bar_static_equilibrium_and_tip_deflection():
    L, a, rho, E = 1.0, 0.1, 1000.0, 1.0e7  # strain rho g L / E ~ 1e-3
    vertices, tets = box_tet_mesh((2, 2, 20), (0.0, 0.0, -L), (a, a, 0.0))
    top = np.isclose(vertices[:, 2], 0.0)
    bottom = np.isclose(vertices[:, 2], -L)
    # nu = 0: the clamped top face then adds no lateral constraint and the 1D solution is exact.
    body = SoftBody(
        vertices,
        tets,
        density=rho,
        youngs_modulus=E,
        poisson_ratio=0.0,
        material=MaterialModel.STABLE_NEOHOOKEAN,
        pinned=top,
    )
    solver = SolverSoftImplicit(body, residual_tolerance=1e-12)
    state = body.state()
    for _ in range(40):
        solver.step(state, state, 0.05)
        assert solver.stats.converged
    assert np.abs(state.v).max() < 1e-7
    assert np.all(state.x[top] == vertices[top])
    grad = body.elastic_gradient(state.x)
    free_weight = body.vertex_mass[~top].sum() * G
    # Pinned vertices carry the reaction: sum of dPsi/dx over them = - (weight of the free part).
    reaction = -grad[top].sum(axis=0)
    assert reaction[2] == pytest.approx(-free_weight, rel=1e-6)
    assert abs(reaction[0]) < 1e-6 * free_weight and abs(reaction[1]) < 1e-6 * free_weight
    tip = -(state.x[bottom, 2] - vertices[bottom, 2]).mean()
    expected = rho * G * L**2 / (2.0 * E)
    assert tip == pytest.approx(expected, rel=0.05)


# ----------------------------------------------------------------------------------------------
# 3. resting block on a plane: penalty equilibrium
# ----------------------------------------------------------------------------------------------


def test_resting_block_contact_forces_balance_weight_and_penalty_equilibrium_gap():
    kappa, delta = 1.0e4, 1.0e-3
    body = _block(cells=(3, 3, 3), youngs_modulus=1.0e6, poisson_ratio=0.3)
    solver = SolverSoftImplicit(
        body, plane_points=[[0, 0, 0]], plane_normals=[[0, 0, 1]], contact_stiffness=kappa, contact_thickness=delta
    )
    state = body.state()
    state.x[:, 2] += 0.5 * delta
    for _ in range(60):
        solver.step(state, state, 0.01)
        assert solver.stats.converged
    assert np.abs(state.v).max() < 1e-6
    lam = solver.contact_forces(state.x)[0]
    weight = body.total_mass * G
    assert lam.sum() == pytest.approx(weight, rel=0.01)
    # Supported weight of each vertex from its own force balance: W_i = m_i g + dPsi/dz_i.
    grad = body.elastic_gradient(state.x)
    supported = body.vertex_mass * G + grad[:, 2]
    contact = lam > 0.0
    assert contact.sum() == 16  # the 4 x 4 bottom vertices
    d_expected = delta - np.sqrt(supported[contact] * delta / (3.0 * kappa))
    d = state.x[contact, 2]
    np.testing.assert_allclose(delta - d, delta - d_expected, rtol=0.02)
    assert np.all(d > 0.0)  # kappa >= W / (3 delta): no penetration


# ----------------------------------------------------------------------------------------------
# 4. Newton: monotone incremental potential, few iterations
# ----------------------------------------------------------------------------------------------


def test_newton_decreases_incremental_potential_and_converges_fast():
    body = _block(cells=(3, 3, 3), youngs_modulus=1.0e6, poisson_ratio=0.45, material=MaterialModel.COROTATED)
    solver = SolverSoftImplicit(body, plane_points=[[0, 0, 0]], plane_normals=[[0, 0, 1]], contact_stiffness=1.0e5)
    state = body.state()
    state.x[:, 2] += 0.01
    state.v[:] = (0.5, 0.0, -2.0)
    iterations = []
    for _ in range(30):
        stats = solver.step(state, state, 1.0 / 120.0)
        assert stats.converged and stats.line_search_failures == 0
        phi = np.array(stats.energy_history)
        scale = max(1.0, np.abs(phi).max())
        assert np.all(np.diff(phi) <= 1e-12 * scale)
        iterations.append(stats.newton_iterations)
    assert max(iterations) <= 12
    assert np.mean(iterations) <= 6


# ----------------------------------------------------------------------------------------------
# 5. lagged smoothed friction on an incline (gravity tilted, plane z = 0)
# ----------------------------------------------------------------------------------------------


def _incline_run(theta_deg, mu, eps_v, steps, h):
    theta = math.radians(theta_deg)
    body = _block(cells=(2, 2, 2), youngs_modulus=1.0e6, poisson_ratio=0.3)
    solver = SolverSoftImplicit(
        body,
        gravity=(G * math.sin(theta), 0.0, -G * math.cos(theta)),
        plane_points=[[0, 0, 0]],
        plane_normals=[[0, 0, 1]],
        contact_stiffness=1.0e4,
        contact_thickness=1.0e-3,
        friction_coefficient=mu,
        friction_velocity=eps_v,
    )
    state = body.state()
    state.x[:, 2] += 0.8e-3
    velocities = []
    for _ in range(steps):
        solver.step(state, state, h)
        assert solver.stats.converged
        velocities.append(float(np.average(state.v[:, 0], weights=body.vertex_mass)))
    return np.array(velocities)


def test_incline_below_threshold_creeps_at_most_the_s_a_creep_speed():
    mu, theta_deg, eps_v = 0.5, 20.0, 1.0e-3
    v = _incline_run(theta_deg, mu, eps_v, steps=200, h=0.01)
    v_creep = eps_v * (1.0 - math.sqrt(1.0 - math.tan(math.radians(theta_deg)) / mu))
    late = v[-50:]
    assert late.max() <= v_creep * 1.02
    assert late.min() >= 0.0


def test_incline_above_threshold_slides_with_coulomb_acceleration():
    mu, theta_deg, h = 0.3, 35.0, 0.005
    v = _incline_run(theta_deg, mu, 1.0e-3, steps=100, h=h)
    theta = math.radians(theta_deg)
    expected = G * (math.sin(theta) - mu * math.cos(theta))
    measured = (v[-1] - v[39]) / (60 * h)
    assert measured == pytest.approx(expected, rel=0.05)


# ----------------------------------------------------------------------------------------------
# 6. BiCGSTAB (non-symmetric) and the fully implicit friction / TR root-finding modes
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block3", [False, True])
def test_bicgstab_matches_dense_solve_on_non_symmetric_systems(block3):
    rng = np.random.default_rng(7)
    for n in (3, 12, 30):
        A = rng.normal(size=(n, n)) + n * np.eye(n)
        A[rng.uniform(size=(n, n)) < 0.5] = 0.0
        A += 2.0 * n * np.eye(n)
        assert not np.allclose(A, A.T)
        indptr, indices, data = dense_to_csr(A)
        b = rng.normal(size=n)
        x = np.zeros(n)
        iters, res = bicgstab_solve(indptr, indices, data, b, np.zeros(n), 1e-12, 500, block3, x)
        assert res <= 1e-12 and iters > 0
        np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)


def test_bicgstab_reports_non_convergence():
    rng = np.random.default_rng(1)
    n = 40
    A = rng.normal(size=(n, n))  # far from diagonally dominant: 2 iterations cannot solve it
    indptr, indices, data = dense_to_csr(A)
    b = rng.normal(size=n)
    x = np.zeros(n)
    iters, res = bicgstab_solve(indptr, indices, data, b, np.zeros(n), 1e-10, 2, False, x)
    assert iters == 2 and res > 1e-10
    np.testing.assert_allclose(res, np.linalg.norm(b - A.dot(x)) / np.linalg.norm(b), rtol=1e-10)
    iters, res = bicgstab_solve(indptr, indices, data, np.zeros(n), np.zeros(n), 1e-10, 2, False, x)
    assert (iters, res) == (0, 0.0) and not x.any()


def test_implicit_friction_jacobian_matches_finite_differences_and_is_non_symmetric():
    rng = np.random.default_rng(5)
    V = 6
    x_base = rng.uniform(-1e-3, 2e-3, size=(V, 3))
    v = rng.uniform(-2e-3, 2e-3, size=(V, 3))
    v[0] = (1e-4, 0.0, 0.0)  # inside the smoothing zone
    v[1] = 0.0  # eta(0) = 0, finite Jacobian
    x_base[2] = (1e-4, 0.0, 2e-4)  # in contact with both planes
    free = np.ones(V, dtype=bool)
    free[5] = False
    pts = np.zeros((2, 3))
    nrm = np.array([[0.0, 0.0, 1.0], [0.6, 0.0, 0.8]])
    kappa, delta, mu, eps_v, beta = 1.0e3, 1.0e-3, 0.4, 1.0e-3, 0.01

    def gradient(vel):
        g, jac = np.zeros((V, 3)), np.zeros((V, 3, 3))
        implicit_friction_gradient_jacobian(
            x_base + beta * vel, vel, free, pts, nrm, kappa, delta, mu, eps_v, beta, g, jac
        )
        return g, jac

    g, jac = gradient(v)
    assert not g[5].any()
    # Force = -mu lambda eta at the end-of-step x: check one vertex by hand.
    d = x_base[2, 2] + beta * v[2, 2]
    assert d < delta
    lam = 3 * kappa * (delta - d) ** 2 / delta
    w = v[2] * np.array([1.0, 1.0, 0.0])
    y = np.linalg.norm(w)
    s = 2 * y / eps_v - y * y / eps_v**2 if y < eps_v else 1.0
    expected = mu * lam * s * w / y
    d1 = nrm[1].dot(x_base[2] + beta * v[2])
    assert d1 < delta
    w1 = v[2] - nrm[1].dot(v[2]) * nrm[1]
    y1 = np.linalg.norm(w1)
    s1 = 2 * y1 / eps_v - y1 * y1 / eps_v**2 if y1 < eps_v else 1.0
    expected = expected + mu * 3 * kappa * (delta - d1) ** 2 / delta * s1 * w1 / y1
    np.testing.assert_allclose(g[2], expected, rtol=1e-12)
    step = 1e-9
    asymmetric = 0.0
    for i in range(V):
        for a in range(3):
            vp, vm = v.copy(), v.copy()
            vp[i, a] += step
            vm[i, a] -= step
            fd = (gradient(vp)[0][i] - gradient(vm)[0][i]) / (2 * step)
            # jac is scaled so that d(grad)/dv = beta * jac
            np.testing.assert_allclose(beta * jac[i, :, a], fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max() + 1e-9)
        asymmetric = max(asymmetric, np.abs(jac[i] - jac[i].T).max())
    assert asymmetric > 1e-3 * np.abs(jac).max()


def test_implicit_mode_without_friction_matches_lagged_mode():
    body = _block(cells=(2, 2, 2), youngs_modulus=1.0e6, poisson_ratio=0.3)
    kwargs = dict(
        plane_points=[[0, 0, 0]], plane_normals=[[0, 0, 1]], contact_stiffness=1.0e4, residual_tolerance=1e-10
    )
    lagged = SolverSoftImplicit(body, **kwargs)
    implicit = SolverSoftImplicit(body, friction_mode="implicit", **kwargs)
    s1, s2 = body.state(), body.state()
    for s in (s1, s2):
        s.x[:, 2] += 0.5e-3
        s.v[:] = (0.2, 0.0, -0.5)
    for _ in range(20):
        lagged.step(s1, s1, 0.01)
        stats = implicit.step(s2, s2, 0.01)
        assert stats.converged and stats.line_search_failures == 0 and stats.linear_failures == 0
        assert np.all(np.diff(stats.merit_history) < 0.0)
    np.testing.assert_allclose(s2.x, s1.x, atol=1e-9)
    np.testing.assert_allclose(s2.v, s1.v, atol=1e-6)


def test_trapezoidal_free_fall_is_exact():
    _, state, v0, x0, h, steps, g = _free_fall(integrator="TR")
    t = steps * h
    np.testing.assert_allclose(state.v, np.broadcast_to(v0 + t * g, state.v.shape), atol=1e-10)
    np.testing.assert_allclose(state.x, x0 + v0 * t + 0.5 * g * t * t, atol=1e-10)


def test_invalid_friction_mode_and_integrator_are_rejected():
    body = _block(cells=(1, 1, 1))
    with pytest.raises(ValueError):
        SolverSoftImplicit(body, friction_mode="explicit")
    with pytest.raises(ValueError):
        SolverSoftImplicit(body, integrator="BDF2")
    with pytest.raises(ValueError):
        SolverSoftImplicit(body, friction_coefficient=0.2, integrator="TR")
