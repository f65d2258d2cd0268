"""Contact solvers against an independent dense reference (assembled J, M and brute-force LCP)."""

import numpy as np
import pytest
from contact_lab.core import BodyKind, CollisionPipeline, ModelBuilder, make_solver
from lcp_reference import brute_force_lcp
from reference_geometry import quat_matrix


def _scene(mu, seed=0):
    """A tilted box and a sphere resting on the floor, touching exactly, with random velocities."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder(gravity=(0, 0, -9.81))
    floor = b.add_body(kind=BodyKind.KINEMATIC, label="floor")
    b.add_shape_plane(floor, mu=mu)
    box = b.add_body(
        pos=(0, 0, 0.3), vel=rng.normal(0, 0.3, 3) - (0, 0, 1.0), omega=rng.normal(0, 0.5, 3), mass=2.0, label="box"
    )
    b.add_shape_box(box, (0.4, 0.3, 0.3), mu=mu)
    ball = b.add_body(
        pos=(2.0, 0, 0.25), vel=rng.normal(0, 0.3, 3) - (0, 0, 1.0), omega=rng.normal(0, 1.0, 3), mass=0.7, label="ball"
    )
    b.add_shape_sphere(ball, 0.25, mu=mu)
    return b.finalize(contact_margin=0.0)


def _dense_system(model, state, contacts, dt):
    """Assemble J (3m x 6n), M^-1 and u_free in numpy, independently of the kernels."""
    nb, m = model.body_count, contacts.contact_count
    Minv = np.zeros((6 * nb, 6 * nb))
    u_free = np.zeros(6 * nb)
    for i in range(nb):
        R = quat_matrix(state.body_quat[i])
        w = state.body_omega[i]
        if model.body_kind[i] == int(BodyKind.DYNAMIC):
            Iw = R @ model.body_inertia_local[i] @ R.T
            Iw_inv = R @ model.body_inv_inertia_local[i] @ R.T
            Minv[6 * i : 6 * i + 3, 6 * i : 6 * i + 3] = np.eye(3) / model.body_mass[i]
            Minv[6 * i + 3 : 6 * i + 6, 6 * i + 3 : 6 * i + 6] = Iw_inv
            u_free[6 * i : 6 * i + 3] = state.body_vel[i] + dt * model.gravity
            u_free[6 * i + 3 : 6 * i + 6] = w - dt * Iw_inv @ np.cross(w, Iw @ w)
    J = np.zeros((3 * m, 6 * nb))
    for k in range(m):
        b0, b1 = contacts.contact_body0[k], contacts.contact_body1[k]
        p = contacts.contact_point[k]
        r0, r1 = p - state.body_pos[b0], p - state.body_pos[b1]
        for d in range(3):
            c = contacts.contact_frame[k, d]
            J[3 * k + d, 6 * b0 : 6 * b0 + 3] = -c
            J[3 * k + d, 6 * b0 + 3 : 6 * b0 + 6] = -np.cross(r0, c)
            J[3 * k + d, 6 * b1 : 6 * b1 + 3] = c
            J[3 * k + d, 6 * b1 + 3 : 6 * b1 + 6] = np.cross(r1, c)
    return J, Minv, u_free


def _step(model, solver_name, **options):
    state_in, state_out = model.state(), model.state()
    contacts = model.contacts()
    CollisionPipeline(model).collide(state_in, contacts)
    assert contacts.contact_count > 0
    solver = make_solver(model, solver_name, **options)
    dt = 1.0 / 240.0
    solver.step(state_in, state_out, model.control(), contacts, dt)
    return state_in, state_out, contacts, dt


def _velocities(model, state):
    """Every body's linear then angular velocity, stacked: (6 B,)."""
    return np.concatenate([np.concatenate([state.body_vel[i], state.body_omega[i]]) for i in range(model.body_count)])


def _tight_friction_step(solver_name, mu, seed):
    """One tightly converged step of the seeded scene with friction ``mu``: the dense system (J, Minv, u_free),
    the solved velocities u (6 B,), contact velocities (C, 3) and impulses (C, 3)."""
    model = _scene(mu, seed)
    state_in, state_out, contacts, dt = _step(model, solver_name, tolerance=1e-13, iterations=5000)
    J, Minv, u_free = _dense_system(model, state_in, contacts, dt)
    u = _velocities(model, state_out)
    return J, Minv, u_free, u, (J @ u).reshape(-1, 3), contacts.contact_impulse[: contacts.contact_count]


@pytest.mark.parametrize("solver_name", ["PGS", "PROX"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_frictionless_step_matchesbrute_force_lcp(solver_name, seed):
    """Reproduce the brute-force LCP velocities of a frictionless step (both solvers)."""
    model = _scene(0.0, seed)
    state_in, state_out, contacts, dt = _step(model, solver_name, tolerance=1e-12, iterations=2000)
    J, Minv, u_free = _dense_system(model, state_in, contacts, dt)
    Jn = J[0::3]
    A, b = Jn @ Minv @ Jn.T, Jn @ u_free
    x_ref, v_ref = brute_force_lcp(A, b)
    u_ref = u_free + Minv @ Jn.T @ x_ref
    u = _velocities(model, state_out)
    np.testing.assert_allclose(u[6:], u_ref[6:], atol=1e-7)
    assert np.abs(Jn @ u - v_ref).max() < 1e-7


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_prox_satisfies_coulomb_cone_conditions(seed):
    """Satisfy non-penetration, the cone and maximal dissipation (course §6.4) with PROX."""
    mu = 0.4
    J, Minv, u_free, u, v, lam = _tight_friction_step("PROX", mu, seed)
    np.testing.assert_allclose(u, u_free + Minv @ J.T @ lam.ravel(), atol=1e-12)
    scale = lam[:, 0].max()
    assert scale > 0
    assert lam[:, 0].min() >= 0.0
    assert v[:, 0].min() > -1e-6
    assert np.abs(lam[:, 0] * v[:, 0]).max() < 1e-6 * scale
    friction = np.linalg.norm(lam[:, 1:], axis=1)
    assert np.all(friction <= mu * lam[:, 0] + 1e-12)
    for k in range(len(lam)):
        slip = np.linalg.norm(v[k, 1:])
        if slip > 1e-5:
            np.testing.assert_allclose(lam[k, 1:], -mu * lam[k, 0] * v[k, 1:] / slip, atol=1e-6 * scale)
        # dissipation: friction never does positive work
        assert lam[k, 1:] @ v[k, 1:] <= 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pgs_satisfies_box_friction_conditions(seed):
    """Satisfy the BLCP conditions (course eq. 41) of box friction with PGS."""
    mu = 0.4
    _, _, _, _, v, lam = _tight_friction_step("PGS", mu, seed)
    scale = lam[:, 0].max()
    assert scale > 0
    assert v[:, 0].min() > -1e-6
    for k in range(len(lam)):
        limit = mu * lam[k, 0]
        for d in (1, 2):
            assert abs(lam[k, d]) <= limit + 1e-12
            if v[k, d] > 1e-6:
                assert lam[k, d] == pytest.approx(-limit, abs=1e-6 * scale)
            elif v[k, d] < -1e-6:
                assert lam[k, d] == pytest.approx(limit, abs=1e-6 * scale)


def test_contact_rows_match_dense_jacobian():
    """Match J u_free and the Delassus blocks D_k with the dense assembly."""
    model = _scene(0.5, 3)
    solver = make_solver(model, "PGS")
    state_in, state_out, contacts, dt = _step(model, "PGS")
    solver.step(state_in, state_out, model.control(), contacts, dt)  # fills the solver's rows
    J, Minv, u_free = _dense_system(model, state_in, contacts, dt)
    m = contacts.contact_count
    A = J @ Minv @ J.T
    for k in range(m):
        np.testing.assert_allclose(solver._D[k], A[3 * k : 3 * k + 3, 3 * k : 3 * k + 3], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(solver._b[k, 1:], (J @ u_free)[3 * k + 1 : 3 * k + 3], atol=1e-12)
    # a rigid motion shared by both bodies gives zero contact velocity (course §6.3)
    v0, w0 = np.array([0.3, -0.2, 0.1]), np.array([0.5, 0.1, -0.4])
    u_rigid = np.concatenate(
        [np.concatenate([v0 + np.cross(w0, state_in.body_pos[i]), w0]) for i in range(model.body_count)]
    )
    assert np.abs(J @ u_rigid).max() < 1e-12


def test_the_local_problem_is_the_dense_delassus_system():
    """The step's local problem (what FCLIB files carry) equals J M^-1 J^T of the dense assembly, off-diagonal blocks
    of contacts sharing a body included; q = J u_free on the tangent rows (the normal rows add the bias); and the
    step's impulses satisfy it: u = W r + q is the contact velocity the solve ended with."""
    model = _scene(0.5, 3)
    solver = make_solver(model, "PGS")
    state_in, state_out, contacts, dt = _step(model, "PGS")
    solver.step(state_in, state_out, model.control(), contacts, dt)
    W, q, mu = solver.local_problem(contacts)
    J, Minv, u_free = _dense_system(model, state_in, contacts, dt)
    m = contacts.contact_count
    assert m >= 5 and np.abs(W[0:3, 3:6]).max() > 0.1  # the box's contacts couple
    np.testing.assert_allclose(W, J @ Minv @ J.T, rtol=1e-12, atol=1e-12)
    tangents = np.arange(3 * m) % 3 != 0
    np.testing.assert_allclose(q[tangents], (J @ u_free)[tangents], atol=1e-12)
    np.testing.assert_array_equal(mu, np.full(m, 0.5))
    r = contacts.contact_impulse[:m].reshape(-1)
    u = W @ r + q
    assert u.reshape(-1, 3)[:, 0].min() > -1e-6  # no approach left after the solve


@pytest.mark.parametrize("solver_name", ["PGS", "PROX"])
def test_bake_is_deterministic(solver_name):
    """Give bit-identical trajectories for two runs of the same scene."""
    from contact_lab.core import simulate

    model = _scene(0.5, 4)
    a = simulate(model, frame_count=25, fps=24, substeps=2, solver=solver_name)
    b = simulate(model, frame_count=25, fps=24, substeps=2, solver=solver_name)
    assert np.array_equal(a.body_pos, b.body_pos) and np.array_equal(a.body_quat, b.body_quat)


@pytest.mark.parametrize("solver_name", ["PGS", "PROX", "NEWTON"])
def test_the_steps_merit_is_fclibs_merit_of_its_local_problem(solver_name):
    """The merit a step records (read from the body accumulators, no W assembled) equals FCLIB's merit of the
    step's local problem assembled densely (:func:`fclib.local_merit`); the cone solvers run to a tight tolerance
    bring it near zero from a single sweep's, while PGS's box friction keeps a merit the cone does not accept."""
    from contact_lab.core.contact_solvers.fclib import LocalProblem, local_merit

    merits = {}
    for iterations in (1, 500):
        model = _scene(0.5, 3)
        solver = make_solver(model, solver_name, iterations=iterations, tolerance=1e-12)
        state_in, state_out, contacts, dt = _step(model, solver_name)
        solver.step(state_in, state_out, model.control(), contacts, dt)
        W, q, mu = solver.local_problem(contacts)
        r = contacts.contact_impulse[: contacts.contact_count].reshape(-1)
        dense = local_merit(LocalProblem(W, q, mu), r)
        merits[iterations] = solver.contact_merit(contacts)
        assert merits[iterations] == pytest.approx(dense, rel=1e-9, abs=1e-15)
    print(f"{solver_name}: merit after 1 sweep {merits[1]:.3g}, after 500 {merits[500]:.3g}")
    if solver_name == "PGS":  # box friction: FCLIB's cone merit sees the box's corners outside the cone
        assert merits[500] > 1e-3
    else:
        assert merits[500] < 1e-7 < merits[1]
