"""Blender's constraint conventions, measured again in Blender's own simulation (Bullet) and compared with
``tests/data/joint_conventions.json`` (recorded by :mod:`record_joint_conventions`, which also builds the scenes).

Two kinds of check: every number matches the recording (a Blender whose Bullet moves otherwise is noticed), and
every statement of the file's ``reading`` holds for the fresh numbers against its own reference (the analytic
spring, the m g h of a hanging weight, the elliptic-integral pendulum): the statements the joint solver encodes.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")
pytest.importorskip("scipy")  # the spring fit and the elliptic integral (not in every Blender's environment)

import record_joint_conventions as rec  # noqa: E402

pytestmark = pytest.mark.blender

G, FPS = rec.G, rec.FPS


@pytest.fixture(scope="module")
def fresh():
    """Every measurement, once for the module (about ten seconds of Bullet)."""
    return rec.measure_all()


@pytest.fixture(scope="module")
def recorded():
    return json.loads(rec.OUT.read_text())


def _leaves(tree, prefix=""):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, f"{prefix}/{key}")
    elif isinstance(tree, list):
        for k, value in enumerate(tree):
            yield from _leaves(value, f"{prefix}[{k}]")
    else:
        yield prefix, tree


def test_every_number_matches_the_recording(fresh, recorded):
    """Same keys, same flags, numbers within 1e-6 relative (+1e-9 absolute): Bullet is deterministic."""
    if fresh["blender"] != recorded["blender"]:
        pytest.skip(f"recorded with Blender {recorded['blender']}, running {fresh['blender']}")
    got, want = dict(_leaves(json.loads(json.dumps(fresh)))), dict(_leaves(recorded))
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, float):
            assert math.isclose(got[key], value, rel_tol=1e-6, abs_tol=1e-9), (key, got[key], value)
        else:
            assert got[key] == value, key


def test_a_hinge_turns_about_the_empty_z_and_counts_a_relative_to_b(fresh):
    hinge = fresh["hinge_axis"]
    assert np.allclose(np.abs(hinge["axis_in_frame"]), [0.0, 0.0, 1.0], atol=1e-3) and hinge["angle"] > 0.5
    assert hinge["pivot_drift_m"] < 1e-3
    limits = fresh["hinge_limit"]
    assert limits["0_45"]["final_deg"] == pytest.approx(-45.0, abs=0.05)  # B turns negatively about +Z
    assert abs(limits["-45_0"]["extreme_deg"]) < 0.05  # the fall would need a positive hinge angle: held
    assert limits["-45_0_swapped"]["final_deg"] == pytest.approx(45.0, abs=0.05)


def test_generic_angles_count_like_the_hinge_and_the_pistons_the_other_way(fresh):
    limits = fresh["axis_limit"]
    for axis in "xyz":
        assert limits[f"GENERIC_{axis}_0_45"]["final_deg"] == pytest.approx(-45.0, abs=0.5)
        assert abs(limits[f"GENERIC_{axis}_-45_0"]["final_deg"]) < 0.5
    assert limits["PISTON_x_-45_0"]["final_deg"] == pytest.approx(-45.0, abs=0.5)
    assert abs(limits["PISTON_x_0_45"]["final_deg"]) < 0.5


def test_slider_and_piston_move_along_x_and_count_b_from_a(fresh):
    slide = fresh["slide"]
    for kind in ("SLIDER", "PISTON"):
        assert np.allclose(slide[kind]["direction_in_frame"], [1.0, 0.0, 0.0], atol=1e-3)
        # free: 0.5 g sin 30° t² along X over 59 frames
        assert slide[kind]["final_x"] == pytest.approx(0.5 * G * 0.5 * (59 / FPS) ** 2, rel=0.01)
        assert slide[f"{kind}_0_0.2"]["final_x"] == pytest.approx(0.2, abs=1e-4)
    assert abs(slide["SLIDER_-0.2_0"]["final_x"]) < 1e-4


def test_a_motor_drives_a_relative_to_b_and_bounds_a_force(fresh):
    motor = fresh["motor"]
    assert np.allclose(motor["ang_light"]["velocity_in_frame"], [-1.0, 0.0, 0.0], atol=1e-3)
    assert np.allclose(motor["lin_light"]["velocity_in_frame"], [-1.0, 0.0, 0.0], atol=1e-3)
    # a 1 N bound for 0.5 s on 1000 kg, sampled over the last frame (mid-time 29.5 / 60 s); the same at 20 substeps
    reference = -1.0 * (29.5 / FPS) / 1000.0
    for key in ("lin_heavy_10", "lin_heavy_20"):
        assert motor[key]["velocity_in_frame"][0] == pytest.approx(reference, rel=0.03)
    inertia = 1000.0 * 0.1**2 / 6.0  # the 0.1 m cube about its centre
    assert motor["ang_heavy_10"]["velocity_in_frame"][0] == pytest.approx(-(29.5 / FPS) / inertia, rel=0.03)


def test_spring_stiffness_and_damping_meanings(fresh):
    spring = fresh["spring"]
    for kind in ("SPRING1", "SPRING2"):
        for mass in (1, 2):
            fit = spring[f"{kind}_m{mass}_c{0.5 if mass == 2 else 0}"]
            assert fit["omega"] == pytest.approx(math.sqrt(100.0 / mass), rel=1e-3)
            assert fit["sag_m"] == pytest.approx(mass * G / 100.0, rel=1e-3)
    # SPRING2: viscous c, sigma = c / (2 m)
    assert spring["SPRING2_m1_c0.5"]["sigma"] == pytest.approx(0.25, rel=0.01)
    assert spring["SPRING2_m2_c0.5"]["sigma"] == pytest.approx(0.125, rel=0.01)
    # SPRING1: undamped up to 0.9, barely at 0.99, stopped at its first turning point (2 m g / k) at 1
    for d in ("0", "0.5", "0.9"):
        assert abs(spring[f"SPRING1_m1_c{d}"]["sigma"]) < 1e-4
    assert 0.0 < spring["SPRING1_m1_c0.99"]["sigma"] < 0.01
    assert spring["SPRING1_m1_c1"]["x_final_m"] == pytest.approx(2 * G / 100.0, rel=0.01)


def test_a_joint_breaks_when_one_substeps_impulse_reaches_the_threshold(fresh):
    breaking = fresh["breaking"]
    for suffix in ("", "_substeps_20", "_mass_5"):
        assert breaking[f"0.99{suffix}"]["broke"] and not breaking[f"1.01{suffix}"]["broke"]
    assert breaking["0.9"]["first_frame_fallen"] <= 4  # at once: a 1 cm fall takes 2.7 frames
    assert not breaking["2"]["broke"]


def test_bullets_pendulum_period_error_falls_with_the_step(fresh):
    pendulum = fresh["pendulum"]
    errors = [pendulum[f"substeps_{n}"]["error"] for n in (1, 4, 10)]
    assert errors[0] > errors[1] > errors[2] > 0.0  # slow, and less so with smaller steps
    assert errors[2] < 0.005
    reference = rec.pendulum_reference(1.0, 0.1, math.radians(10.0))
    small = 2 * math.pi * math.sqrt((1.0 + 0.1**2 / 6) / G)
    assert reference / small == pytest.approx(1.0019, abs=2e-4)  # the elliptic factor of a 10° swing


def test_generic_linear_limits_count_b_from_a_and_a_motor_locks_nothing(fresh):
    for axis in "xyz":
        assert fresh["generic_slide"][f"{axis}_0_0.2"]["final"] == pytest.approx(0.2, abs=1e-4)
        assert abs(fresh["generic_slide"][f"{axis}_-0.2_0"]["final"]) < 1e-4
    assert fresh["motor"]["under_gravity"]["fall_m"] == pytest.approx(0.5 * G * (30 / FPS) ** 2, rel=0.01)


def test_angular_springs_spring1_physical_spring2_softer(fresh):
    """SPRING1 against the linearised physical pendulum on a torsion spring (I about the pivot, rest angle
    -m g L / k); SPRING2 far below it (the recorded effective stiffness, not the physical one)."""
    spring = fresh["angular_spring"]
    inertia = 0.5**2 + 0.1**2 / 6.0
    rest = -G * 0.5 / 100.0
    # gravity's torque -m g L cos(theta) adds -m g L sin(theta) > 0 to the stiffness about the rest angle
    stiffness = 100.0 - G * 0.5 * math.sin(rest)
    assert spring["SPRING1_k100_c0"]["omega"] == pytest.approx(math.sqrt(stiffness / inertia), rel=0.001)
    assert spring["SPRING1_k100_c0"]["sag_m"] == pytest.approx(rest, rel=0.01)
    assert spring["SPRING2_k100_c0"]["omega"] < 0.5 * math.sqrt(100.0 / inertia)
    assert spring["SPRING2_k1000_c0"]["sag_m"] < 0.0 and abs(spring["SPRING2_k1000_c0"]["sag_m"]) > 10 * abs(
        G * 0.5 / 1000.0
    )


def test_a_lever_breaks_fixed_joints_above_the_static_load(fresh):
    lever = fresh["breaking_lever"]
    assert lever["arm_0.5_1.01"]["broke"] and not lever["arm_0.5_1.5"]["broke"]
    assert lever["arm_2_50"]["broke"]
