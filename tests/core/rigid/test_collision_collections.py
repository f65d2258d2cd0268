"""Blender's Collision Collections in the rigid engine: two bodies collide only when their masks share a bit.

References: free fall (two boxes in disjoint collections pass through each other and land on the plane, each
as if alone), a stack (a shared collection: the upper box rests on the lower one) and the unfiltered engine
(masks sharing a bit everywhere bake bit-identically to the default masks).
"""

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, ModelError, simulate
from contact_lab.core.rigid.collision.broad_phase import keep_shared_collections

FPS, SUBSTEPS, FRAMES = 30, 4, 46
HALF = 0.25
"""Half edge of the boxes [m]."""


def two_boxes(lower_mask: int, upper_mask: int, ground_mask: int = 0b11):
    """A ground plane and two 0.5 m boxes, the upper one 0.1 m above the lower one (which rests on the ground)."""
    b = ModelBuilder()
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="Ground", collision_collections=ground_mask)
    b.add_shape_plane(ground)
    lower = b.add_body(pos=(0.0, 0.0, HALF), label="Lower", collision_collections=lower_mask)
    b.add_shape_box(lower, (HALF, HALF, HALF))
    upper = b.add_body(pos=(0.0, 0.0, 3 * HALF + 0.1), label="Upper", collision_collections=upper_mask)
    b.add_shape_box(upper, (HALF, HALF, HALF))
    return b.finalize()


def test_disjoint_collections_fall_through_each_other():
    """The upper box (collection 2) passes through the lower one (collection 1) and lands on the ground, which is
    in both; the lower box never moves more than a contact's settling."""
    traj = simulate(two_boxes(0b01, 0b10), frame_count=FRAMES, fps=FPS, substeps=SUBSTEPS)
    z_lower, z_upper = traj.body_pos[:, 1, 2], traj.body_pos[:, 2, 2]
    assert np.max(np.abs(z_lower - HALF)) < 1e-3
    # free fall while it passes through the lower box: the reference is semi-implicit Euler's discrete parabola
    # z_n = z_0 - g h² n (n + 1) / 2 after n substeps of h
    n = np.arange(FRAMES) * SUBSTEPS
    h = 1.0 / (FPS * SUBSTEPS)
    free = 3 * HALF + 0.1 - 9.81 * h * h * n * (n + 1) / 2
    falling = free > HALF + 0.01
    assert np.count_nonzero(falling) > 8
    assert np.max(np.abs(z_upper[falling] - free[falling])) < 1e-9
    assert abs(z_upper[-1] - HALF) < 1e-2  # at rest on the ground, inside the lower box


def test_shared_collection_stacks():
    """Masks sharing bit 2 collide: the upper box rests on the lower one at 3 half edges."""
    traj = simulate(two_boxes(0b011, 0b110), frame_count=FRAMES, fps=FPS, substeps=SUBSTEPS)
    assert abs(traj.body_pos[-1, 2, 2] - 3 * HALF) < 1e-2
    assert abs(traj.body_pos[-1, 1, 2] - HALF) < 1e-3


def test_masks_sharing_a_bit_everywhere_are_bit_identical_to_the_default():
    """Every mask holding collection 1 changes nothing, to the last bit, against the default masks (1)."""
    model = two_boxes(0b1, 0b1, 0b1)
    assert not model.has_collision_filter
    other = two_boxes(0b1011, 0b10001, 0b111)
    assert not other.has_collision_filter
    a = simulate(model, frame_count=FRAMES, fps=FPS, substeps=SUBSTEPS)
    b = simulate(other, frame_count=FRAMES, fps=FPS, substeps=SUBSTEPS)
    assert np.array_equal(a.body_pos, b.body_pos) and np.array_equal(a.body_quat, b.body_quat)


def test_keep_shared_collections_against_brute_force():
    """The pair filter keeps, in order, exactly the pairs whose bodies' masks share a bit (brute force)."""
    rng = np.random.default_rng(7)
    shape_body = rng.integers(0, 6, 40).astype(np.int32)
    body_mask = rng.integers(0, 8, 6).astype(np.int32)
    pairs = np.array([(a, b) for a in range(40) for b in range(a + 1, 40)], np.int32)
    count = pairs.shape[0] - 5
    expected = [tuple(p) for p in pairs[:count] if body_mask[shape_body[p[0]]] & body_mask[shape_body[p[1]]]]
    kept = keep_shared_collections(pairs, count, shape_body, body_mask)
    assert [tuple(p) for p in pairs[:kept]] == expected


@pytest.mark.parametrize("mask", [-1, 1 << 20])
def test_a_mask_beyond_20_bits_names_the_body(mask):
    b = ModelBuilder()
    body = b.add_body(label="Crate", collision_collections=mask)
    b.add_shape_sphere(body, 0.1)
    with pytest.raises(ModelError, match="Crate"):
        b.finalize()
