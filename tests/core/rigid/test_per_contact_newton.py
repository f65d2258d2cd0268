"""Non-smooth Newton (FB) solver: derivatives, course D3, local contact law, whole steps, physics."""

import math

import numpy as np
import pytest
from contact_lab.core import FrictionSet, simulate
from contact_lab.core.contact_solvers.kernels_newton import (
    LOCAL_OK,
    contact_fb_jacobian,
    contact_fb_residual,
    fischer_burmeister,
    fischer_burmeister_gradient,
    solve_contact_local,
    solve_fb_affine_scalar,
)
from contact_solvers.test_against_dense_lcp import _dense_system, _scene, _step, _velocities
from lcp_reference import brute_force_lcp
from rigid.test_anisotropic_friction import critical_angle, sticks_below_and_slides_above
from scenes import G, box_stack, floor_box, incline_box

SETS = {
    "disk": (int(FrictionSet.CONE), np.full(4, 0.5)),
    "ellipse": (int(FrictionSet.ELLIPSE), np.array([0.3, 0.7, 0.3, 0.7])),
    "box": (int(FrictionSet.BOX), np.array([0.3, 0.5, 0.6, 0.2])),
}


# --- 1. Fischer–Burmeister function -------------------------------------------------------------


def test_fischer_burmeister_gradient_matches_finite_differences():
    """Match (alpha, beta) of eq. 185–186 with central differences away from (0, 0)."""
    rng = np.random.default_rng(0)
    h = 1e-6
    for a, b in rng.normal(0, 2, (200, 2)):
        alpha, beta = fischer_burmeister_gradient(a, b)
        fd_a = (fischer_burmeister(a + h, b) - fischer_burmeister(a - h, b)) / (2 * h)
        fd_b = (fischer_burmeister(a, b + h) - fischer_burmeister(a, b - h)) / (2 * h)
        assert alpha == pytest.approx(fd_a, abs=1e-7)
        assert beta == pytest.approx(fd_b, abs=1e-7)
        assert fischer_burmeister(a, b) == pytest.approx(a + b - math.hypot(a, b), abs=1e-14)


def test_fischer_burmeister_roots_and_convention_at_origin():
    """Vanish exactly on the complementarity set; take alpha(0,0) = 0, beta(0,0) = 1 (eq. 187–188)."""
    assert fischer_burmeister_gradient(0.0, 0.0) == (0.0, 1.0)
    for a, b in [(0.0, 0.0), (0.0, 3.0), (2.5, 0.0)]:
        assert fischer_burmeister(a, b) == 0.0
    for a, b in [(1.0, 1.0), (-1.0, 0.0), (0.0, -2.0), (-1.0, 2.0), (1e8, 1e8)]:
        assert fischer_burmeister(a, b) != 0.0
    # no cancellation for large positive arguments: psi = 2ab / (a + b + |(a, b)|)
    assert fischer_burmeister(1e8, 1e-8) == pytest.approx(1e-8, rel=1e-12)


def test_fb_newton_reproduces_course_d3():
    """Give 0.444444, 0.499056, 0.49999978, 0.5 for c = λ/4 − 1/8 from λ0 = 5 (course D3, Fig. 23)."""
    history = np.zeros(10)
    steps = solve_fb_affine_scalar(0.25, -0.125, 1.0, 5.0, 8, history)
    np.testing.assert_allclose(history[1:5], [0.444444, 0.499056, 0.49999978, 0.5], atol=5e-7)
    errors = np.abs(history[1 : steps + 1] - 0.5)
    print("D3 iterates", history[: steps + 1], "errors", errors)
    # quadratic convergence: e_{k+1} <= C e_k^2
    assert errors[1] <= 0.5 * errors[0] ** 2 and errors[2] <= 0.5 * errors[1] ** 2
    assert steps <= 5


@pytest.mark.parametrize("name", list(SETS))
def test_contact_jacobian_matches_finite_differences(name):
    """Match the generalized Jacobian of every residual with central differences at smooth points."""
    friction_set, mu4 = SETS[name]
    mode = 1 if friction_set == int(FrictionSet.BOX) else 2
    n = 3 if mode == 1 else 4
    rng = np.random.default_rng(1)
    lam, v, phi, jac = np.zeros(3), np.zeros(3), np.zeros(4), np.zeros((4, 4))
    for _ in range(50):
        B = rng.normal(size=(3, 3))
        D = 0.5 * np.eye(3) + B @ B.T
        c = rng.normal(size=3)
        r = np.array([D[0, 0], D[1, 1], D[2, 2], 1.3])
        x = rng.normal(size=4)
        contact_fb_residual(mode, mu4, D, c, r, x, lam, v, phi)
        contact_fb_jacobian(mode, mu4, D, c, r, x, lam, v, jac)
        fd = np.zeros((4, 4))
        h = 1e-7
        for j in range(n):
            e = np.zeros(4)
            e[j] = h
            p1, p2 = np.zeros(4), np.zeros(4)
            contact_fb_residual(mode, mu4, D, c, r, x + e, lam, v, p1)
            contact_fb_residual(mode, mu4, D, c, r, x - e, lam, v, p2)
            fd[:, j] = (p1 - p2) / (2 * h)
        np.testing.assert_allclose(jac[:n, :n], fd[:n, :n], atol=1e-5)


# --- 2. Local contact subproblem against brute force --------------------------------------------


def _random_block(rng):
    """A well-conditioned SPD Delassus-like block and a velocity c with an approaching normal."""
    B = rng.normal(0, 0.6, (3, 3))
    D = np.eye(3) * rng.uniform(0.5, 2.0) + B @ B.T
    c = rng.normal(size=3)
    c[0] = -abs(c[0]) * rng.uniform(0.1, 1.0)
    c[1:] *= rng.uniform(0.0, 0.6)  # about half of the blocks stick
    return D, c


def _boundary(theta, mu_t, mu_b):
    """Points of the unit-load ellipse and their outward normals."""
    rho = np.stack([mu_t * np.cos(theta), mu_b * np.sin(theta)], axis=-1)
    normal = np.stack([np.cos(theta) / mu_t, np.sin(theta) / mu_b], axis=-1)
    return rho, normal


def _reference_cone(D, c, mu_t, mu_b):
    """All solutions of the elliptic-cone contact law by brute force: stick, or slide on a dense boundary scan."""
    solutions = []
    stick = np.linalg.solve(D, -c)
    if stick[0] >= 0 and (stick[1] / mu_t) ** 2 + (stick[2] / mu_b) ** 2 <= stick[0] ** 2:
        solutions.append(stick)

    def slide(theta):
        rho, normal = _boundary(np.asarray(theta), mu_t, mu_b)
        ln = -c[0] / (D[0, 0] + D[0, 1] * rho[..., 0] + D[0, 2] * rho[..., 1])
        lam = np.stack([ln, ln * rho[..., 0], ln * rho[..., 1]], axis=-1)
        vt = lam @ D[1:].T + c[1:]
        cross = vt[..., 0] * normal[..., 1] - vt[..., 1] * normal[..., 0]
        return cross, lam, vt, normal, ln

    grid = np.linspace(0, 2 * np.pi, 20001)
    g = slide(grid)[0]
    for i in np.nonzero(np.sign(g[:-1]) != np.sign(g[1:]))[0]:
        lo, hi = grid[i], grid[i + 1]
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if np.sign(slide(mid)[0]) == np.sign(slide(lo)[0]):
                lo = mid
            else:
                hi = mid
        _, lam, vt, normal, ln = slide(0.5 * (lo + hi))
        if ln > 0 and vt @ normal < 0:  # v_t opposite to the outward normal: maximal dissipation
            solutions.append(lam)
    return solutions


def _reference_box(D, c, mu4):
    """All solutions of the box law by enumerating the 3 x 3 bound states (normal active)."""
    solutions = []
    for st in (-1, 0, 1):
        for sb in (-1, 0, 1):
            A, rhs = np.zeros((3, 3)), np.zeros(3)
            A[0], rhs[0] = D[0], -c[0]
            for d, s in ((1, st), (2, sb)):
                if s == 0:
                    A[d], rhs[d] = D[d], -c[d]
                else:
                    A[d, d] = 1.0
                    A[d, 0] = mu4[d + 1] if s < 0 else -mu4[d - 1]
            lam = np.linalg.solve(A, rhs)
            v = D @ lam + c
            ok = lam[0] >= 0
            for d, s in ((1, st), (2, sb)):
                lo, hi = -mu4[d + 1] * lam[0], mu4[d - 1] * lam[0]
                ok &= lo - 1e-12 <= lam[d] <= hi + 1e-12
                ok &= (s != -1 or v[d] >= 0) and (s != 1 or v[d] <= 0)
            if ok:
                solutions.append(lam)
    return solutions


def _check_contact_law(friction_set, mu4, D, c, lam):
    v = D @ lam + c
    scale = max(np.abs(c).max(), 1.0)
    assert lam[0] >= 0 and v[0] >= -1e-10 * scale and abs(lam[0] * v[0]) < 1e-10 * scale
    slip = np.linalg.norm(v[1:])
    if friction_set == int(FrictionSet.BOX):
        for d in (1, 2):
            lo, hi = -mu4[d + 1] * lam[0], mu4[d - 1] * lam[0]
            assert lo - 1e-12 <= lam[d] <= hi + 1e-12
            if v[d] > 1e-9:
                assert lam[d] == pytest.approx(lo, abs=1e-9)
            if v[d] < -1e-9:
                assert lam[d] == pytest.approx(hi, abs=1e-9)
        return slip
    mu_t, mu_b = mu4[0], mu4[1]
    level = (lam[1] / mu_t) ** 2 + (lam[2] / mu_b) ** 2
    assert level <= lam[0] ** 2 * (1 + 1e-12) + 1e-300
    if slip > 1e-9:
        # on the boundary with the outward normal opposite to v_t
        assert level == pytest.approx(lam[0] ** 2, rel=1e-9)
        normal = np.array([lam[1] / mu_t**2, lam[2] / mu_b**2])
        cosine = normal @ v[1:] / np.linalg.norm(normal) / slip
        assert cosine == pytest.approx(-1.0, abs=1e-9)
    return slip


@pytest.mark.parametrize("name", list(SETS))
def test_local_newton_solves_contact_law_like_brute_force(name):
    """Satisfy the contact law and equal the brute-force solution to 1e-8 on random SPD blocks."""
    friction_set, mu4 = SETS[name]
    rng = np.random.default_rng(7)
    iterations, failures, sliding, quadratic, terminal = [], 0, 0, 0, 0
    history = np.zeros(31)
    lam = np.zeros(3)
    for _ in range(300):
        D, c = _random_block(rng)
        if friction_set == int(FrictionSet.BOX):
            refs = _reference_box(D, c, mu4)
        else:
            refs = _reference_cone(D, c, mu4[0], mu4[1])
        assert len(refs) == 1, refs  # the reference finds the unique solution
        status, count, starts = solve_contact_local(friction_set, mu4, D, c, np.zeros(3), 30, 1e-12, lam, history)
        if status != LOCAL_OK:
            failures += 1
            continue
        iterations.append(count)
        np.testing.assert_allclose(lam, refs[0], atol=1e-8 * max(1.0, np.abs(refs[0]).max()))
        sliding += _check_contact_law(friction_set, mu4, D, c, lam) > 1e-9
        if starts == 1 and count >= 3:
            # terminal phase, before the last step (which may hit the round-off floor): the observed
            # order log e_k / log e_{k-1} (relative residuals) is >= 1.5; linear convergence gives ~1
            e = history[: count + 1] / max(history[0], 1e-300)
            if e[-3] < 1e-3:
                terminal += 1
                quadratic += math.log(e[-2]) <= 1.5 * math.log(e[-3])
    iterations = np.array(iterations)
    print(
        f"{name}: {len(iterations)} solved ({sliding} sliding), {failures} fallbacks; Newton iterations "
        f"mean {iterations.mean():.2f}, median {np.median(iterations):.0f}, max {iterations.max()}; "
        f"quadratic terminal step in {quadratic}/{terminal}"
    )
    assert failures <= 3  # <= 1 %: PROX fallback blocks (counted by the solver)
    assert 30 < sliding < len(iterations) - 30  # both regimes exercised
    assert np.median(iterations) <= 8
    assert quadratic >= 0.9 * terminal and terminal > 100


def test_local_newton_handles_separation_and_frictionless():
    """Return zero impulse for a separating block and the pure normal LCP for mu = 0."""
    D = np.array([[2.0, 0.3, -0.1], [0.3, 1.5, 0.2], [-0.1, 0.2, 1.8]])
    lam, history = np.zeros(3), np.zeros(31)
    for friction_set, mu4 in SETS.values():
        status, _, _ = solve_contact_local(
            friction_set, mu4, D, np.array([0.5, 1.0, -2.0]), np.ones(3), 30, 1e-12, lam, history
        )
        assert status == LOCAL_OK
        np.testing.assert_allclose(lam, 0.0, atol=1e-12)
    status, _, _ = solve_contact_local(
        2, np.zeros(4), D, np.array([-1.0, 1.0, 3.0]), np.zeros(3), 30, 1e-12, lam, history
    )
    assert status == LOCAL_OK
    np.testing.assert_allclose(lam, [0.5, 0.0, 0.0], atol=1e-14)


# --- 3. Whole steps -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_newton_step_matches_prox(seed):
    """Give PROX's post-step velocities (both at tolerance 1e-13) to 1e-7 on the solver-test scenes."""
    model = _scene(0.4, seed)
    _, out_prox, _, _ = _step(model, "PROX", tolerance=1e-13, iterations=5000)
    _, out_newton, contacts, _ = _step(model, "NEWTON", tolerance=1e-13, iterations=5000)
    lam = contacts.contact_impulse[: contacts.contact_count]
    assert lam[:, 0].max() > 0 and np.abs(lam[:, 1:]).max() > 0  # loaded, with friction
    difference = np.abs(_velocities(model, out_newton) - _velocities(model, out_prox)).max()
    print(f"seed {seed}: max |u_NEWTON - u_PROX| = {difference:.2e}")
    assert difference < 1e-7


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_newton_frictionless_step_matchesbrute_force_lcp(seed):
    """Reproduce the brute-force LCP velocities of a frictionless step."""
    model = _scene(0.0, seed)
    state_in, state_out, contacts, dt = _step(model, "NEWTON", tolerance=1e-12, iterations=2000)
    J, Minv, u_free = _dense_system(model, state_in, contacts, dt)
    Jn = J[0::3]
    x_ref, v_ref = brute_force_lcp(Jn @ Minv @ Jn.T, Jn @ u_free)
    u = _velocities(model, state_out)
    np.testing.assert_allclose(u[6:], (u_free + Minv @ Jn.T @ x_ref)[6:], atol=1e-7)
    assert np.abs(Jn @ u - v_ref).max() < 1e-7


# --- 4. Anisotropic incline (the acceptance test) -----------------------------------------


@pytest.mark.parametrize("phi_deg", [0.0, 45.0, 90.0])
def test_newton_anisotropic_incline_threshold(phi_deg):
    """Stick 0.3° below and slide 0.3° above tan θ_c = 1/sqrt(cos²φ/μ_S² + sin²φ/μ_T²) (NEWTON)."""
    phi = math.radians(phi_deg)
    sticks_below_and_slides_above(critical_angle(phi), phi, "NEWTON")


# --- 5. Analytic physics ----------------------------------------------------------------------------


def _fit_acceleration(t, x):
    A = np.stack([np.ones_like(t), t, 0.5 * t * t], axis=1)
    return np.linalg.lstsq(A, x, rcond=None)[0][2]


@pytest.mark.parametrize("theta_deg", [15.0, 30.0])
def test_newton_incline_sticks_and_slides(theta_deg):
    """Stick when mu = tan θ + 0.05; slide at g (sin θ − μ cos θ) within 2 % when mu = tan θ − 0.1."""
    theta = math.radians(theta_deg)
    model, _ = incline_box(theta, math.tan(theta) + 0.05)
    traj = simulate(model, frame_count=121, fps=60, substeps=4, solver="NEWTON", tolerance=1e-8, iterations=200)
    assert np.linalg.norm(traj.body_pos[-1, 1] - traj.body_pos[0, 1]) < 1e-3
    mu = math.tan(theta) - 0.1
    model, downhill = incline_box(theta, mu)
    traj = simulate(model, frame_count=91, fps=60, substeps=4, solver="NEWTON", tolerance=1e-8, iterations=200)
    t = np.arange(traj.frame_count) / 60
    s = (traj.body_pos[:, 1] - traj.body_pos[0, 1]) @ downhill
    assert _fit_acceleration(t[10:], s[10:]) == pytest.approx(G * (math.sin(theta) - mu * math.cos(theta)), rel=0.02)


def test_newton_box_slides_to_rest_after_analytic_distance():
    """Stop a box sliding at v0 on the floor after v0² / (2 μ g) within 2 %."""
    v0, mu = 3.0, 0.4
    traj = simulate(floor_box(v0, mu), frame_count=121, fps=60, substeps=4, solver="NEWTON", tolerance=1e-8)
    assert np.linalg.norm(traj.body_vel[-1, 1]) < 1e-3
    assert traj.body_pos[-1, 1, 0] - traj.body_pos[0, 1, 0] == pytest.approx(v0 * v0 / (2 * mu * G), rel=0.02)


def test_newton_stack_of_ten_boxes_rests():
    """Keep the top of a 10-box stack within 1 mm over 5 s at 60 Hz with 4 substeps."""
    model = box_stack(10)
    traj = simulate(model, frame_count=301, fps=60, substeps=4, solver="NEWTON")
    top = model.body_count - 1
    drift = np.linalg.norm(traj.body_pos[:, top] - traj.body_pos[0, top], axis=1).max()
    print(f"NEWTON 10-box stack: top drift {drift * 1e3:.3f} mm, max sweeps {traj.solver_iterations.max()}")
    assert drift < 1e-3
    assert traj.contact_count.max() >= 40
