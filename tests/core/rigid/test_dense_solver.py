"""The dense engine solver: every dense method of the study steps scenes with joints (the equality rows folded
away, limits as frictionless contacts, motors as friction rows), against the joints' analytic references."""

import math

import numpy as np
import pytest
from contact_lab.core.contact_solvers.local_solvers import NORMALS_ONLY, SOLVERS
from contact_lab.core.enums import BodyKind
from contact_lab.core.rigid.builder import ModelBuilder
from contact_lab.core.rigid.frame_loop import simulate
from contact_lab.core.rigid.solvers import make_solver, solver_dense
from rigid.test_joints import (
    HZ,
    G,
    _crossing_times,
    _step,
    check_door_at_its_limit,
    check_hinged_plank,
    check_motor,
    hinge_chain,
    loaded_door,
    motor_cart,
    pendulum,
)
from scipy.special import ellipk

METHODS = sorted(SOLVERS)
WITH_FRICTION = sorted(set(SOLVERS) - NORMALS_ONLY)


@pytest.mark.parametrize("method", METHODS)
def test_every_dense_method_shares_a_hinged_planks_weight_with_the_contact(method):
    """The hinge's rows folded into the contact's problem (its Schur complement): the method's contact impulse is
    the moment balance's within 1 %."""
    check_hinged_plank("DENSE", 1e-3, method=method)


@pytest.mark.parametrize("method", METHODS)
def test_every_dense_method_holds_a_loaded_hinge_at_its_limit(method):
    """The limit's row is a frictionless contact of the method's problem: the door rests within 0.5° of it."""
    check_door_at_its_limit(solver="DENSE", method=method)


@pytest.mark.parametrize("method", WITH_FRICTION)
def test_every_dense_method_with_friction_drives_a_motor_within_its_maximum(method):
    """The motor's bounded rows are friction rows of the method's problem: the speeds grow by the maximum impulse
    over the mass a step and reach the targets, the impulses never above their maxima (each solve to FCLIB merit
    1e-13: the references hold to 1e-9)."""
    check_motor("DENSE", method=method, tolerance=1e-13, iterations=1000)


@pytest.mark.parametrize("method", sorted(NORMALS_ONLY))
def test_a_method_of_the_normals_alone_refuses_a_motor_naming_the_joint(method):
    with pytest.raises(ValueError, match="joint 'Motor' has a motor"):
        make_solver(motor_cart(), "DENSE", method=method)


def test_a_pendulum_folds_into_nothing_for_a_method_to_solve(monkeypatch):
    """A joint's locked rows alone leave no contact problem: every method swings the 60° pendulum the same way (the
    engine's solve of the locked rows), run here once with the method's solve watched (never called). Its period
    within 0.5 % of the elliptic integral's."""
    calls = []
    monkeypatch.setattr(solver_dense, "solve_local", lambda *args, **kw: calls.append(args))
    a = math.radians(60.0)
    traj = simulate(pendulum(a), frame_count=int(13 * HZ) + 1, fps=HZ, substeps=1, solver="DENSE")
    period = float(np.mean(np.diff(_crossing_times(traj.body_pos[:, 0, 0]))))
    exact = 4.0 * math.sqrt(1.0 / G) * ellipk(math.sin(a / 2.0) ** 2)
    print(f"dense: pendulum period {period:.6f} s, elliptic {exact:.6f} s")
    assert abs(period / exact - 1.0) < 0.005
    assert traj.joint_error_linear.max() < 1e-4
    assert calls == []


@pytest.mark.parametrize("method", METHODS)
def test_every_dense_method_swings_the_twenty_link_chain_keeping_its_joints(method):
    """The 20-link hinge chain swings 10 s; its links touch as it folds (about 30 steps with contacts, each solved by
    the method with the hinges folded in). Every joint within 1e-4 m, the chain down past 1.5 m."""
    traj = simulate(hinge_chain(), frame_count=int(10 * HZ) + 1, fps=HZ, substeps=1, solver="DENSE", method=method)
    touching = int((traj.contact_count > 0).sum())
    print(f"{method}: chain error {traj.joint_error_linear.max():.2e} m, {touching} frames with contacts")
    assert traj.joint_error_linear.max() < 1e-4 and traj.body_pos[:, -1, 2].min() < -1.5
    assert touching >= 10


@pytest.mark.parametrize("method", ["pivoting-box", "newton-fb-cone"])
def test_a_scene_without_joints_rests_on_its_contacts_alone(method):
    """No joint at all: a 2 kg box resting on the ground; each step its contacts carry its weight, m g h."""
    b = ModelBuilder(gravity=(0.0, 0.0, -G))
    floor = b.add_body(kind=BodyKind.KINEMATIC, label="floor")
    b.add_shape_plane(floor)
    box = b.add_body(pos=(0.0, 0.0, 0.1), mass=2.0, label="box")
    b.add_shape_box(box, (0.1, 0.1, 0.1))
    _, state_0, contacts = _step(b.finalize(), 24, "DENSE", method=method, tolerance=1e-12)
    carried = float(contacts.contact_impulse[: contacts.contact_count, 0].sum())
    assert carried == pytest.approx(2.0 * G / HZ, rel=1e-6)
    assert abs(state_0.body_pos[1, 2] - 0.1) < 1e-4


def test_the_dense_solver_refuses_an_unknown_method_and_a_problem_too_large(monkeypatch):
    with pytest.raises(ValueError, match="unknown dense method 'simplex'"):
        make_solver(pendulum(0.1), "DENSE", method="simplex")
    monkeypatch.setattr(solver_dense, "MAX_ROWS", 8)
    with pytest.raises(ValueError, match="9 contact and joint rows in a step: the dense methods take at most 8"):
        simulate(loaded_door(), frame_count=3, fps=HZ, substeps=1, solver="DENSE")
