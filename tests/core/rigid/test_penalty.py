"""Penalty contact (seed 000 §5.1) against analytic references and an ODE integration of the same force law."""

import math

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, simulate
from contact_lab.core.contact_solvers.penalty import PERIOD_STEPS
from contact_lab.core.rigid.solvers import make_solver
from scipy.integrate import solve_ivp

G = 9.81


def _run(model, hz, seconds, **options):
    return simulate(model, frame_count=int(round(seconds * hz)) + 1, fps=hz, substeps=1, solver="PENALTY",
                    solver_options=options)  # fmt: skip


def _sphere_on_plane(height, radius=0.1, mass=1.0, mu=0.5):
    b = ModelBuilder(gravity=(0.0, 0.0, -G))
    floor = b.add_body(kind=BodyKind.KINEMATIC, label="floor")
    b.add_shape_plane(floor, mu=mu)
    ball = b.add_body(pos=(0.0, 0.0, radius + height), mass=mass, label="ball")
    b.add_shape_sphere(ball, radius, mu=mu)
    return b.finalize()


def _box_on_incline(theta, mu, half=0.1, mass=2.0):
    """A box resting on a plane tilted by ``theta`` about Y (downhill toward -X of the world)."""
    b = ModelBuilder(gravity=(0.0, 0.0, -G))
    q = (math.cos(-theta / 2), 0.0, math.sin(-theta / 2), 0.0)
    floor = b.add_body(kind=BodyKind.KINEMATIC, quat=q, label="incline")
    b.add_shape_plane(floor, mu=mu)
    normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    box = b.add_body(pos=tuple(half * normal), quat=q, mass=mass, label="box")
    b.add_shape_box(box, (half, half, half), mu=mu)
    return b.finalize(), normal


def test_a_sphere_rests_sunk_by_its_weight_over_the_contact_s_own_stiffness():
    """One contact, the default stiffness ``k = m (2 pi / (20 h))^2``: the sphere settles at ``m g / k`` deep."""
    hz = 240.0
    traj = _run(_sphere_on_plane(0.0), hz, 3.0)
    k = 1.0 * (2.0 * math.pi * hz / PERIOD_STEPS) ** 2
    depth = 0.1 - traj.body_pos[-1, 1, 2]
    print(f"depth {depth:.6e} m, m g / k {G / k:.6e} m")
    assert depth == pytest.approx(G / k, rel=1e-6)


def test_a_box_rests_on_four_corner_springs():
    """A 2 kg box on four corner contacts of a given stiffness sinks by ``m g / (4 k)`` and stays level."""
    k = 2.0e4
    model, _ = _box_on_incline(0.0, 0.5)
    traj = _run(model, 240.0, 3.0, stiffness=k)
    depth = 0.1 - traj.body_pos[-1, 1, 2]
    assert depth == pytest.approx(2.0 * G / (4.0 * k), rel=1e-4)
    assert np.abs(traj.body_quat[-1, 1] - (1.0, 0.0, 0.0, 0.0)).max() < 1e-9


def _bounce_reference(height, k, c, radius=0.1):
    """Apex [m above touching] after one bounce of a unit mass on ``f = max(0, -k phi - c phi')``, by an
    adaptive ODE integration (rtol 1e-10)."""

    def rhs(_, y):
        phi, v = y
        force = max(0.0, -k * phi - c * v) if phi < 0.0 else 0.0
        return [v, -G + force]

    def lift_off(_, y):
        return y[0]

    lift_off.direction = 1.0
    lift_off.terminal = True
    v0 = -math.sqrt(2.0 * G * height)
    sol = solve_ivp(rhs, (0.0, 1.0), [-1e-12, v0], events=lift_off, rtol=1e-10, atol=1e-12)
    v_out = float(sol.y_events[0][0][1])
    return v_out * v_out / (2.0 * G)


@pytest.mark.parametrize("zeta", [0.05, 0.3])
def test_a_bounce_rises_as_the_spring_damper_law_says(zeta):
    """A ball dropped from 0.2 m on a 1e4 N/m contact rebounds to the apex of the clamped spring–damper law
    integrated by an ODE solver, within 1 % at 9 600 Hz (600 steps per period of the spring; at 1 200 Hz the phase
    of the first touch within a step moves the apex by up to 7 % when zeta is 0.3)."""
    height, k = 0.2, 1.0e4
    expected = _bounce_reference(height, k, 2.0 * zeta * math.sqrt(k))
    errors = []
    for hz in (9600.0,):
        traj = _run(_sphere_on_plane(height), hz, 0.7, damping_ratio=zeta, stiffness=k)
        z = traj.body_pos[:, 1, 2] - 0.1
        apex = float(z[int(np.argmax(z < 0.0)) :].max())
        errors.append(apex / expected - 1.0)
        print(f"zeta {zeta}, {hz:.0f} Hz: apex {apex:.5f} m, ODE {expected:.5f} m, drop {height} m")
    assert max(abs(e) for e in errors) < 0.01


def test_a_box_slides_down_a_steep_incline_at_coulomb_s_acceleration():
    """theta 30 deg, mu 0.3: the anchor springs slip and the box accelerates at g (sin theta - mu cos theta)
    within 2 %."""
    theta, mu, hz = math.radians(30.0), 0.3, 240.0
    model, _ = _box_on_incline(theta, mu)
    traj = _run(model, hz, 1.0)
    downhill = np.array([-math.cos(theta), 0.0, -math.sin(theta)])
    s = (traj.body_pos[:, 1] - traj.body_pos[0, 1]) @ downhill
    t = np.arange(s.size) / hz
    late = t > 0.25
    a = 2.0 * np.polyfit(t[late], s[late], 2)[0]
    expected = G * (math.sin(theta) - mu * math.cos(theta))
    print(f"a {a:.4f} m/s^2, expected {expected:.4f}")
    assert a == pytest.approx(expected, rel=0.02)


def test_a_box_sticks_on_a_gentle_incline_stretching_its_anchor_springs():
    """theta 10 deg, mu 0.5: the box holds, its centre displaced downhill by the springs alone (within 2 %): the
    anchors' stretch ``F / (4 k)`` (``F = m g sin theta``) plus the tilt the friction's moment ``F a`` about the
    centre gives the corner springs, ``F a / (4 k a^2)``, times the centre's height ``a`` (half the edge): ``2 F / (4
    k)``. It is still after 2 s."""
    theta, mu, k = math.radians(10.0), 0.5, 5.0e3
    model, _ = _box_on_incline(theta, mu)
    traj = _run(model, 240.0, 2.0, stiffness=k)
    downhill = np.array([-math.cos(theta), 0.0, -math.sin(theta)])
    s = (traj.body_pos[:, 1] - traj.body_pos[0, 1]) @ downhill
    force = 2.0 * G * math.sin(theta)
    expected = force / (4.0 * k) + force * 0.1 / (4.0 * k * 0.1**2) * 0.1
    print(f"creep {s[-1]:.6e} m, springs' stretch and tilt {expected:.6e} m")
    assert s[-1] == pytest.approx(expected, rel=0.02)
    assert np.linalg.norm(traj.body_vel[-1, 1]) < 1e-4


@pytest.mark.parametrize("option", ["stiffness", "friction_stiffness", "damping_ratio"])
@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf])
def test_bad_penalty_settings_are_refused(option, value):
    with pytest.raises(ValueError, match=option):
        make_solver(_sphere_on_plane(0.0), "PENALTY", **{option: value})
