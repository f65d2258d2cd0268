"""Sweep and prune against the O(n^2) brute-force pair set (tests/core/reference_geometry.py)."""

import time

import numpy as np
import pytest
import reference_geometry as ref
from contact_lab.core.rigid.collision.broad_phase import sweep_and_prune
from contact_lab.core.rigid.collision.narrow_phase import compute_shape_aabbs
from contact_lab.core.rigid.hull import empty_hull_arrays
from contact_lab.core.rigid.mesh import empty_mesh_arrays


def random_scene(rng, n, planes=1, extent=4.0):
    """Random AABBs (some planes), bodies shared by several shapes, dynamic (1) and kinematic (2) bodies."""
    center = rng.uniform(-extent, extent, size=(n, 3))
    half = rng.uniform(0.05, 0.6, size=(n, 3))
    lower, upper = center - half, center + half
    for k in range(planes):
        lower[k] = -1e30
        upper[k] = 1e30
        if k % 2 == 0:
            upper[k, 2] = rng.uniform(-extent, extent)  # plane with an axis-aligned normal: bounded above
    body_count = max(2, n // 2)
    shape_body = rng.integers(0, body_count, size=n).astype(np.int32)
    body_kind = rng.choice([1, 2], p=[0.7, 0.3], size=body_count).astype(np.int32)
    return lower, upper, shape_body, body_kind


def run_sap(lower, upper, shape_body, body_kind, pair_max):
    pairs = np.full((pair_max, 2), -1, np.int32)
    counts = np.zeros(2, np.int64)
    sweep_and_prune(lower, upper, shape_body, body_kind, pairs, counts)
    return pairs, counts


@pytest.mark.parametrize(("n", "planes"), [(2, 0), (40, 1), (400, 2), (1500, 3)])
def test_sweep_and_prune_matches_brute_force(n, planes):
    """Return exactly the brute-force pair set, in lexicographic order, with filters applied."""
    rng = np.random.default_rng(n)
    lower, upper, shape_body, body_kind = random_scene(rng, n, planes, extent=0.3 * n ** (1 / 3))
    expected = ref.brute_force_pairs(lower, upper, shape_body, body_kind)
    pairs, counts = run_sap(lower, upper, shape_body, body_kind, len(expected) + 5)
    assert counts[1] == 0 and counts[0] == len(expected)
    assert [tuple(p) for p in pairs[: counts[0]].tolist()] == expected
    if n > 2:
        assert len(expected) > n // 4  # the scene is not trivially empty
        # Filters are exercised: same-body and kinematic-kinematic overlaps exist and are excluded.
        all_bodies = np.ones_like(body_kind)
        assert len(ref.brute_force_pairs(lower, upper, shape_body, all_bodies)) > len(expected)


def test_sweep_and_prune_counts_overflow_and_keeps_smallest_pairs():
    """Count pairs that do not fit and keep the lexicographically smallest ones, without writing past the end."""
    rng = np.random.default_rng(7)
    lower, upper, shape_body, body_kind = random_scene(rng, 300, planes=2, extent=2.0)
    expected = ref.brute_force_pairs(lower, upper, shape_body, body_kind)
    for pair_max in (0, 1, 17, len(expected) - 1):
        buffer = np.full((pair_max + 3, 2), -9, np.int32)
        counts = np.zeros(2, np.int64)
        sweep_and_prune(lower, upper, shape_body, body_kind, buffer[:pair_max], counts)
        assert counts[0] == pair_max and counts[1] == len(expected) - pair_max
        assert [tuple(p) for p in buffer[:pair_max].tolist()] == expected[:pair_max]
        assert np.all(buffer[pair_max:] == -9)


def test_shape_aabbs_match_support_function():
    """Match every bounded shape's AABB with its support function and bound planes along axis-aligned normals."""
    rng = np.random.default_rng(3)
    shapes = [ref.random_shape(rng, t, rng.normal(size=3)) for t in (1, 2, 3) * 10]
    plane_up = ref.Shape(4, np.zeros(3), np.array([0.0, 0.0, -1.0]), np.eye(3))
    plane_tilted = ref.Shape(4, np.zeros(3), np.zeros(3), ref.random_rotation(rng))
    shapes += [plane_up, plane_tilted]
    lower = np.zeros((len(shapes), 3))
    upper = np.zeros((len(shapes), 3))
    margin = 0.02
    compute_shape_aabbs(
        np.array([s.type for s in shapes], np.int32),
        np.array([s.params for s in shapes]),
        np.array([s.pos for s in shapes]),
        np.array([s.rot for s in shapes]),
        empty_hull_arrays(),
        np.full(len(shapes), -1, np.int32),
        empty_mesh_arrays(),
        np.full(len(shapes), -1, np.int32),
        margin,
        lower,
        upper,
    )
    for s, shape in enumerate(shapes[:-2]):
        lo, hi = ref.aabb(shape, margin)
        np.testing.assert_allclose(lower[s], lo, atol=1e-12)
        np.testing.assert_allclose(upper[s], hi, atol=1e-12)
    np.testing.assert_allclose(upper[-2], [1e30, 1e30, -1.0 + margin])
    assert np.all(lower[-2] <= -1e29) and np.all(lower[-1] <= -1e29) and np.all(upper[-1] >= 1e29)


def test_sweep_and_prune_scales_to_ten_thousand_shapes():
    """Handle 10k shapes and a plane quickly, with the pair count of a sampled brute-force check."""
    rng = np.random.default_rng(11)
    n = 10_000
    lower, upper, shape_body, body_kind = random_scene(rng, n, planes=1, extent=12.0)
    run_sap(lower[:10], upper[:10], shape_body[:10], body_kind, 64)  # compile outside the timing
    start = time.perf_counter()
    pairs, counts = run_sap(lower, upper, shape_body, body_kind, 8 * n)
    elapsed = time.perf_counter() - start
    assert counts[1] == 0 and counts[0] > n // 2
    assert elapsed < 0.5, elapsed
    # Every pair touching the first 50 shapes agrees with brute force.
    stored = pairs[: counts[0]]
    sample = 50
    mine = {tuple(p) for p in stored.tolist() if p[0] < sample or p[1] < sample}
    expected = set()
    for a in range(sample):
        ok = np.all((lower[a] <= upper) & (lower <= upper[a]), axis=1)
        ok &= shape_body != shape_body[a]
        ok &= (body_kind[shape_body] == 1) | (body_kind[shape_body[a]] == 1)
        ok[a] = False
        expected |= {(min(a, b), max(a, b)) for b in np.flatnonzero(ok)}
    assert mine == expected
