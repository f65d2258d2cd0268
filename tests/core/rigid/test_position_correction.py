"""Split impulse and warm-start matching: analytic penetration decay, no energy from push-out, one-to-one matching."""

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, simulate
from contact_lab.core.config import RESTING_PILE_SETTINGS
from contact_lab.core.rigid.collision.contact_common import FEATURE_MAX
from contact_lab.core.rigid.contact_rows import match_previous_contacts
from contact_lab.core.rigid.joints import JointKind, JointSpec

G = 9.81
HALF = 0.1


def _sunk_box(depth, *, gravity=0.0):
    """A 0.2 m box whose bottom face is ``depth`` [m] inside a floor plane, at rest."""
    b = ModelBuilder(gravity=(0, 0, -gravity))
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(floor, mu=0.5)
    box = b.add_body(pos=(0, 0, HALF - depth), mass=2.0)
    b.add_shape_box(box, (HALF,) * 3, mu=0.5)
    return b.finalize()


@pytest.mark.parametrize("solver", ["PGS", "PROX"])
def test_split_impulse_removes_penetration_geometrically_without_velocity(solver):
    """Each step removes erp of the penetration ((1 - erp)^k decay, course eq. 59) and the box never moves."""
    depth, erp, steps = 4e-3, 0.4, 12
    model = _sunk_box(depth)
    traj = simulate(model, frame_count=steps + 1, fps=240, substeps=1, solver=solver, erp=erp, penetration_slop=0.0,
                    split_impulse=True, tolerance=1e-12, iterations=100)  # fmt: skip
    heights = traj.body_pos[:, 1, 2]
    speeds = np.abs(traj.body_vel[:, 1]).max(axis=1)
    expected = HALF - depth * (1.0 - erp) ** np.arange(steps + 1)
    np.testing.assert_allclose(heights, expected, atol=1e-12)
    assert speeds.max() < 1e-12


def test_baumgarte_turns_the_same_push_out_into_velocity():
    """The reference the split impulse is measured against: eq. 59 in the velocity solve leaves the box moving."""
    depth, erp = 4e-3, 0.4
    model = _sunk_box(depth)
    traj = simulate(model, frame_count=3, fps=240, substeps=1, solver="PGS", erp=erp, penetration_slop=0.0,
                    split_impulse=False, tolerance=1e-12)  # fmt: skip
    # first step: v_n = erp * depth / h, exactly the Baumgarte target
    np.testing.assert_allclose(traj.body_vel[1, 1, 2], erp * depth * 240.0, rtol=1e-9)


@pytest.mark.parametrize("solver", ["PGS", "PROX"])
def test_a_scene_with_joints_removes_penetration_without_velocity_by_default(solver):
    """In a scene with joints the split impulse is the default (``JOINTED_SPLIT_IMPULSE``): two boxes welded side by
    side and sunk 4 mm into the floor rise by the split impulse's geometric decay and never move. Before, the
    Baumgarte bias gave them ``erp * depth / h`` of real upward speed, which the joints passed on (a glued wall hit
    by a ball came apart at 10 sweeps, the joints' projection and the floor pushing the bottom course to and fro)."""
    depth, erp, steps = 4e-3, 0.4, 12
    b = ModelBuilder(gravity=(0, 0, 0))
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(floor, mu=0.5)
    for x in (-HALF, HALF):
        b.add_shape_box(b.add_body(pos=(x, 0, HALF - depth), mass=2.0), (HALF,) * 3, mu=0.5)
    b.add_joint(JointSpec(JointKind.FIXED, 1, 2, (0.0, 0.0, HALF - depth), (1.0, 0.0, 0.0, 0.0)))
    traj = simulate(b.finalize(), frame_count=steps + 1, fps=240, substeps=1, solver=solver, erp=erp,
                    penetration_slop=0.0, tolerance=1e-12, iterations=100)  # fmt: skip
    expected = HALF - depth * (1.0 - erp) ** np.arange(steps + 1)
    np.testing.assert_allclose(traj.body_pos[:, 1:, 2], np.stack([expected] * 2, axis=1), atol=1e-9)
    assert np.abs(traj.body_vel[:, 1:]).max() < 1e-9


def test_resting_box_settles_at_no_penetration_with_gravity():
    """Under gravity the split impulse holds a box on the floor with penetration -> 0 and speed -> 0."""
    model = _sunk_box(2e-3, gravity=G)
    traj = simulate(model, frame_count=121, fps=60, substeps=4, solver="PGS", iterations=50, **RESTING_PILE_SETTINGS)
    assert abs(traj.body_pos[-1, 1, 2] - HALF) < 1e-5  # one step's gravity sink g h^2 = 4e-5 m at most
    assert np.abs(traj.body_vel[-1, 1]).max() < 0.05  # a step's g h: the solve starts each step from the fall


def _brute_force_match(keys, points, prev_keys, prev_points, radius):
    """Reference: same key first; then, in contact order, the nearest unclaimed previous contact of the pair."""
    match = np.full(len(keys), -1)
    used = np.zeros(len(prev_keys), bool)
    for k, key in enumerate(keys):
        hit = np.flatnonzero(prev_keys == key)
        if hit.size:
            match[k] = hit[0]
            used[hit[0]] = True
    for k, key in enumerate(keys):
        if match[k] >= 0:
            continue
        same_pair = (prev_keys // FEATURE_MAX == key // FEATURE_MAX) & ~used
        d = np.linalg.norm(prev_points - points[k], axis=1)
        d[~same_pair] = np.inf
        j = int(np.argmin(d)) if d.size else -1
        if j >= 0 and d[j] < radius:
            match[k] = j
            used[j] = True
    return match


@pytest.mark.parametrize("seed", range(5))
def test_contact_matching_is_one_to_one_and_equals_brute_force(seed):
    """Two new contacts never inherit one old contact's impulse (that starts the pair at twice its load)."""
    rng = np.random.default_rng(seed)
    radius = 0.05

    def contacts(n):
        pairs = rng.integers(0, 6, n)
        features = rng.integers(0, 12, n)
        keys = np.unique(pairs * FEATURE_MAX + features)
        return keys, rng.uniform(0, 0.1, (len(keys), 3))

    keys, points = contacts(40)
    prev_keys, prev_points = contacts(40)
    used = np.zeros(len(prev_keys), np.bool_)
    match = np.full(len(keys), -7, np.int64)
    match_previous_contacts(keys, points, len(keys), prev_keys, prev_points, len(prev_keys), radius, used, match)
    np.testing.assert_array_equal(match, _brute_force_match(keys, points, prev_keys, prev_points, radius))
    claimed = match[match >= 0]
    assert len(np.unique(claimed)) == len(claimed)
    assert (match >= 0).sum() > (np.isin(keys, prev_keys)).sum()  # position matching did happen
