"""Grasp threshold (seed 003 §5.1.2, spec test 3): two soft pads squeeze a dynamic box with normal
force N each and lift it; Coulomb friction holds the weight W iff 2 mu N > W.

N is measured, not assumed: a first run squeezes the box (resting on a frictionless floor) and
reads the pad–box penalty force. The friction coefficient is then set to ``ratio * W / (2 N)`` and the
pads lift smoothly by 5 cm (peak acceleration 1.4 % of g, so the quasi-static threshold applies).
"""

from collections import deque

import numpy as np
import pytest
from contact_lab.core.enums import ShapeType
from contact_lab.core.fem.primitives import box_tet_mesh
from contact_lab.core.fem.world import ColliderKind, SoftWorldBuilder
from contact_lab.core.soft.frame_loop import SoftSettings, iter_simulate_soft

HALF = 0.05  # box half size [m]
MASS = 1.0  # box mass [kg]
SQUEEZE = 0.001  # inward travel of each pad's pinned face [m]
LIFT = 0.05  # [m]
FPS = 60.0


def _grasp_world(mu):
    b = SoftWorldBuilder()
    pads = []
    for side in (-1.0, 1.0):
        x_in = side * (HALF + 0.0011)  # just outside the contact layer (delta = 1 mm)
        x_out = side * (HALF + 0.0311)
        lower = (min(x_in, x_out), -0.03, HALF - 0.03)
        upper = (max(x_in, x_out), 0.03, HALF + 0.03)
        V, T = box_tet_mesh((3, 4, 4), lower, upper)
        pinned = np.isclose(V[:, 0], x_out)
        pad = b.add_soft_body(V, T, youngs_modulus=2e5, density=500, friction=mu, pinned=pinned, name=f"pad {side}")
        pads.append(pad)
    b.add_collider(ShapeType.PLANE, friction=0.0, name="floor")
    box = b.add_collider(ShapeType.BOX, half_extents=(HALF,) * 3, position=(0, 0, HALF + 0.001),
                         kind=ColliderKind.DYNAMIC, mass=MASS, friction=mu, name="box")  # fmt: skip
    return b.finalize(), pads, box


def _pin_tracks(pads, frame_count):
    t = np.arange(frame_count) / FPS
    u = np.clip((t - 0.5) / 1.5, 0.0, 1.0)
    tracks = {}
    for pad, side in zip(pads, (-1.0, 1.0), strict=True):
        M = np.repeat(np.eye(4)[None], frame_count, axis=0)
        M[:, 0, 3] = -side * np.clip(t / 0.25, 0.0, 1.0) * SQUEEZE
        M[:, 2, 3] = (3 * u * u - 2 * u**3) * LIFT
        tracks[pad] = M
    return tracks


def _run(mu, frame_count, substeps):
    world, pads, box = _grasp_world(mu)
    settings = SoftSettings(substeps=substeps, contact_thickness=0.001)
    frames = iter_simulate_soft(
        world, frame_count=frame_count, fps=FPS, settings=settings, pin_tracks=_pin_tracks(pads, frame_count)
    )
    _, state = deque(frames, maxlen=1)[0]
    rise = world.collider_pose(state, box)[0][2] - (HALF + 0.001)
    squeeze = [float(np.linalg.norm(state.stats.contact_force[p, box])) for p in pads]
    return rise, squeeze


@pytest.fixture(scope="module")
def squeeze_force():
    """N [N] of each pad after the squeeze, box still on the floor (t = 0.5 s)."""
    _, forces = _run(0.0, int(0.5 * FPS) + 1, 1)
    return forces


def test_squeeze_is_symmetric(squeeze_force):
    assert squeeze_force[0] == pytest.approx(squeeze_force[1], rel=1e-6)
    assert 5.0 < squeeze_force[0] < 50.0


@pytest.mark.parametrize("substeps", [1, 2])
@pytest.mark.parametrize("ratio", [1.05, 0.95])
def test_box_is_lifted_iff_friction_beats_weight(squeeze_force, ratio, substeps):
    weight = MASS * 9.81
    mu = ratio * weight / (2.0 * squeeze_force[0])
    rise, forces = _run(mu, int(2.5 * FPS) + 1, substeps)
    if ratio > 1.0:
        assert rise > 0.9 * LIFT, f"slipped out of a grip with 2 mu N / W = {ratio} (rise {rise:.4f} m)"
        # the grip force stayed what was measured, so the tested ratio held during the lift
        assert forces[0] == pytest.approx(squeeze_force[0], rel=0.03)
    else:
        assert rise < 0.1 * LIFT, f"lifted with 2 mu N / W = {ratio} (rise {rise:.4f} m)"
