"""Seed 003 block slide (spec §3.5 / §3.6 items 1-2): fully implicit smoothed friction stops a stiff
block on a 10° slope at the analytic time and distance for every h; lagged friction does not.

Setup: a 1-cell (6-tet) 0.1 m block, E = 1e8 Pa, nu = 0, resting on the plane z = 0 (bottom face
at d = 0, i.e. inside the penalty layer: kappa = 1e6 N/m, delta = 1e-3 m), gravity tilted by
theta = 10° about y, mu = 0.177, v0 = 0.1 m/s down the slope, eps = 1e-3 m/s.
Analytic (Coulomb): a = g (mu cos theta - sin theta) = 0.0065020 m/s², t* = v0/a = 15.38 s,
d* = v0²/(2a) = 0.769 m. Smoothed friction (s_a) never sticks: below threshold the block creeps at
v_c = eps (1 - sqrt(1 - tan theta / mu)) = 0.938 eps, so "stopped" = mean |v_i| <= v_c + tol.
"""

import math

import numpy as np
import pytest
from contact_lab.core.fem.primitives import box_tet_mesh
from soft_reference import SoftBody, SolverSoftImplicit

G = 9.81
THETA = math.radians(10.0)
MU = 0.177
V0 = 0.1
EPS = 1.0e-3
V_CREEP = EPS * (1.0 - math.sqrt(1.0 - math.tan(THETA) / MU))
STOP_TOL = 0.02 * EPS
A_COULOMB = G * (MU * math.cos(THETA) - math.sin(THETA))
T_STOP = V0 / A_COULOMB
D_STOP = V0 * V0 / (2.0 * A_COULOMB)


def _slide(h, friction_mode, integrator="BE", t_end=16.5, settle=False):
    """Return (stop time [s] or None, slide distance at stop [m], final mean speed [m/s])."""
    vertices, tets = box_tet_mesh((1, 1, 1), (0.0, 0.0, 0.0), (0.1, 0.1, 0.1))
    body = SoftBody(vertices, tets, density=1000.0, youngs_modulus=1.0e8, poisson_ratio=0.0)
    contact = dict(plane_points=[[0, 0, 0]], plane_normals=[[0, 0, 1]], contact_stiffness=1.0e6, contact_thickness=1e-3)
    state = body.state()
    if settle:  # rest at the penalty equilibrium under the normal gravity component first
        settler = SolverSoftImplicit(body, gravity=(0.0, 0.0, -G * math.cos(THETA)), **contact)
        for _ in range(200):
            settler.step(state, state, 0.01)
        state.v[:] = 0.0
    solver = SolverSoftImplicit(
        body,
        gravity=(G * math.sin(THETA), 0.0, -G * math.cos(THETA)),
        friction_coefficient=MU,
        friction_velocity=EPS,
        friction_mode=friction_mode,
        integrator=integrator,
        **contact,
    )
    state.v[:, 0] = V0
    x0 = state.x[:, 0].mean()
    threshold = V_CREEP + STOP_TOL
    previous = np.linalg.norm(state.v, axis=1).mean()
    t_stop, d_stop = None, None
    for k in range(int(round(t_end / h))):
        solver.step(state, state, h)
        assert solver.stats.converged, (h, friction_mode, k)
        speed = np.linalg.norm(state.v, axis=1).mean()
        if t_stop is None and speed <= threshold:
            t_stop = (k + 1) * h - h * (threshold - speed) / (previous - speed)  # linear interpolation
            d_stop = state.x[:, 0].mean() - x0
        previous = speed
    return t_stop, d_stop, speed


@pytest.fixture(scope="module")
def implicit_runs():
    return {h: _slide(h, "implicit") for h in (0.04, 0.02, 0.01, 0.005)}


@pytest.mark.parametrize("h", [0.04, 0.02, 0.01, 0.005])
def test_implicit_be_stops_at_analytic_time_and_distance(implicit_runs, h):
    t_stop, d_stop, _ = implicit_runs[h]
    assert t_stop is not None
    print(f"h = {h} s: stops at {t_stop:.2f} s after {d_stop:.3f} m (Coulomb: {T_STOP:.2f} s, {D_STOP:.3f} m)")
    assert t_stop == pytest.approx(T_STOP, rel=0.03)
    assert d_stop == pytest.approx(D_STOP, rel=0.03)


def test_implicit_be_stop_time_is_consistent_across_h(implicit_runs):
    times = [implicit_runs[h][0] for h in (0.04, 0.02, 0.01, 0.005)]
    assert max(times) - min(times) < 0.005 * T_STOP


def test_creep_speed_below_threshold_is_the_s_a_creep_speed(implicit_runs):
    # BE steady state: mu s_a(v) = tan(theta) exactly, so the late speed is v_c = 0.938 eps.
    assert V_CREEP == pytest.approx(0.938 * EPS, rel=1e-3)
    for h in (0.04, 0.005):
        assert implicit_runs[h][2] == pytest.approx(V_CREEP, rel=0.01)


def test_lagged_friction_deviates_more_than_implicit_at_large_step(implicit_runs):
    """Seed claim: lagged (IPC) friction misjudges the stop; the implicit mode does not. The
    lagged lambda^n of the first step (bottom face at d = 0: 3 kappa delta per vertex, ~1000x the
    weight) stops the block at once. Measured: lagged ~0.08 s vs implicit ~15.26 s (t* = 15.38 s)."""
    t_lagged, _, _ = _slide(0.04, "lagged", t_end=2.0)
    t_implicit = implicit_runs[0.04][0]
    assert t_lagged is not None and t_implicit is not None
    assert abs(t_lagged - T_STOP) > abs(t_implicit - T_STOP)
    assert abs(t_lagged - T_STOP) > 0.5 * T_STOP


def test_implicit_be_is_insensitive_to_initial_contact_state(implicit_runs):
    """Settling the block at the penalty equilibrium first gives the same stop (lagged would not)."""
    t_stop, d_stop, _ = _slide(0.04, "implicit", settle=True)
    assert t_stop == pytest.approx(implicit_runs[0.04][0], rel=1e-3)
    assert d_stop == pytest.approx(implicit_runs[0.04][1], rel=1e-3)


def test_implicit_tr_small_step_stops_near_analytic():
    """TR with friction (eq. 24), from the settled state: not L-stable, so at h >= 0.01 the
    smoothed-friction oscillation about v_c is not damped (recorded, not asserted); at h = 0.005
    time and distance are within 3 %."""
    t_stop, d_stop, _ = _slide(0.005, "implicit", integrator="TR", settle=True)
    assert t_stop == pytest.approx(T_STOP, rel=0.03)
    assert d_stop == pytest.approx(D_STOP, rel=0.03)
