"""Broad phase: candidate shape pairs whose margin-expanded AABBs overlap (sweep and prune).

Bounded boxes are sorted along the axis of largest centre variance and swept with an active list, which costs
O(n log n + k) for n shapes and k overlaps along that axis. Unbounded boxes (planes, extent >= ``HUGE_EXTENT``)
would sit in every active list, so they are tested separately against every shape (O(n) per plane).

Output pairs are sorted lexicographically, so the result does not depend on the sweep. When ``pairs`` is too
small the kernel keeps the lexicographically smallest pairs (a bounded max-heap of int64 keys ``a * n + b``) and
counts the rest, so even the truncated output is deterministic.
"""

import numpy as np

from ...jit import njit_kernel

HUGE_EXTENT = 1.0e20
"""Boxes at least this long [m] along any axis (planes) bypass the sweep."""

_DYNAMIC = 1
"""``int(BodyKind.DYNAMIC)``."""


@njit_kernel
def is_candidate_pair(a, b, shape_body, body_kind):
    """True when shapes ``a`` and ``b`` may collide: different bodies, at least one of them dynamic."""
    ba = shape_body[a]
    bb = shape_body[b]
    if ba == bb:
        return False
    return body_kind[ba] == _DYNAMIC or body_kind[bb] == _DYNAMIC


@njit_kernel
def has_aabb_overlap(a, b, aabb_lower, aabb_upper):
    """True when the closed boxes of ``a`` and ``b`` intersect on all three axes."""
    for k in range(3):
        if aabb_lower[a, k] > aabb_upper[b, k] or aabb_lower[b, k] > aabb_upper[a, k]:
            return False
    return True


@njit_kernel
def _sift_down(keys, start, size):
    """Restore the max-heap property of ``keys[:size]`` below ``start``."""
    i = start
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and keys[child + 1] > keys[child]:
            child += 1
        if keys[child] <= keys[i]:
            return
        keys[i], keys[child] = keys[child], keys[i]
        i = child


@njit_kernel
def _push_pair_key(keys, key, stored, dropped, heaped):
    """Store ``key`` or, when full, keep the ``len(keys)`` smallest keys; returns (stored, dropped, heaped)."""
    cap = keys.shape[0]
    if stored < cap:
        keys[stored] = key
        return stored + 1, dropped, heaped
    dropped += 1
    if cap == 0:
        return stored, dropped, heaped
    if not heaped:
        # First overflow: heapify once (O(cap)); later pushes cost O(log cap).
        for i in range(cap // 2 - 1, -1, -1):
            _sift_down(keys, i, cap)
        heaped = True
    if key < keys[0]:
        keys[0] = key
        _sift_down(keys, np.int64(0), cap)
    return stored, dropped, heaped


@njit_kernel
def choose_sweep_axis(aabb_lower, aabb_upper, is_huge):
    """Axis (0, 1, 2) along which the centres of the bounded boxes have the largest variance."""
    n = aabb_lower.shape[0]
    best_axis = 0
    best_var = -1.0
    for k in range(3):
        count = 0
        mean = 0.0
        m2 = 0.0
        for s in range(n):
            if is_huge[s]:
                continue
            x = 0.5 * (aabb_lower[s, k] + aabb_upper[s, k])
            count += 1
            # Welford update: no catastrophic cancellation for far-away scenes.
            delta = x - mean
            mean += delta / count
            m2 += delta * (x - mean)
        if m2 > best_var:
            best_var = m2
            best_axis = k
    return best_axis


@njit_kernel
def _push_candidate(i, j, n, shape_body, body_kind, keys, stored, dropped, heaped):
    """Push the pair {i, j} as key ``min * n + max`` if it is a candidate; returns (stored, dropped, heaped)."""
    a, b = min(i, j), max(i, j)
    if is_candidate_pair(a, b, shape_body, body_kind):
        return _push_pair_key(keys, np.int64(a) * n + b, stored, dropped, heaped)
    return stored, dropped, heaped


@njit_kernel
def _mark_huge(aabb_lower, aabb_upper, out_is_huge):
    """Flag boxes at least ``HUGE_EXTENT`` long on some axis (or not finite) in ``out_is_huge``; returns their count."""
    huge_count = 0
    for s in range(aabb_lower.shape[0]):
        for k in range(3):
            ext = aabb_upper[s, k] - aabb_lower[s, k]
            if not ext < HUGE_EXTENT:  # also catches NaN / inf
                out_is_huge[s] = True
        if out_is_huge[s]:
            huge_count += 1
    return huge_count


@njit_kernel
def _sweep_bounded(aabb_lower, aabb_upper, is_huge, huge_count, shape_body, body_kind, keys):
    """Sweep the bounded boxes along the axis of largest centre variance; returns (stored, dropped, heaped).

    Boxes enter in order of their lower bound; the active list keeps those not yet ended, and each survivor is
    tested on the two other axes (O(n log n + k)).
    """
    n = aabb_lower.shape[0]
    axis = choose_sweep_axis(aabb_lower, aabb_upper, is_huge)
    u = (axis + 1) % 3
    v = (axis + 2) % 3
    bounded = np.empty(n - huge_count, np.int64)
    m = 0
    for s in range(n):
        if not is_huge[s]:
            bounded[m] = s
            m += 1
    order = bounded[np.argsort(aabb_lower[bounded, axis], kind="mergesort")]
    active = np.empty(m, np.int64)
    active_count = 0
    # typed values, not literals: the first typing pass would compile _push_candidate for Literal[int](0) too
    stored = np.int64(0)
    dropped = np.int64(0)
    heaped = np.bool_(False)
    for i in order:
        lo = aabb_lower[i, axis]
        # Drop boxes that ended before this one starts and test the survivors on the two other axes.
        w = 0
        for q in range(active_count):
            j = active[q]
            if aabb_upper[j, axis] < lo:
                continue
            active[w] = j
            w += 1
            if aabb_lower[i, u] > aabb_upper[j, u] or aabb_lower[j, u] > aabb_upper[i, u]:
                continue
            if aabb_lower[i, v] > aabb_upper[j, v] or aabb_lower[j, v] > aabb_upper[i, v]:
                continue
            stored, dropped, heaped = _push_candidate(i, j, n, shape_body, body_kind, keys, stored, dropped, heaped)
        active_count = w
        active[active_count] = i
        active_count += 1
    return stored, dropped, heaped


@njit_kernel
def sweep_and_prune(aabb_lower, aabb_upper, shape_body, body_kind, pairs, counts):
    """Write overlapping candidate pairs into ``pairs`` in lexicographic order.

    Args:
        aabb_lower, aabb_upper: world boxes, shape (shape_count, 3) [m], already expanded by the margin.
        shape_body: body of each shape, shape (shape_count,), int32.
        body_kind: ``BodyKind`` of each body, shape (body_count,), int32; 1 = dynamic.
        pairs: output shape indices (a, b) with a < b, shape (pair_max, 2), int32.
        counts: output [stored, dropped], shape (2,), int64; dropped pairs did not fit into ``pairs``.

    Pairs on the same body and pairs whose bodies are both non-dynamic are skipped.
    """
    n = aabb_lower.shape[0]
    # Scratch, allocated once per call (never inside the sweep).
    keys = np.empty(pairs.shape[0], np.int64)
    is_huge = np.zeros(n, np.bool_)
    huge_count = _mark_huge(aabb_lower, aabb_upper, is_huge)
    stored, dropped, heaped = _sweep_bounded(aabb_lower, aabb_upper, is_huge, huge_count, shape_body, body_kind, keys)

    # Unbounded boxes (planes) against everything; each huge-huge pair once.
    if huge_count > 0:
        for h in range(n):
            if not is_huge[h]:
                continue
            for s in range(n):
                if s == h or (is_huge[s] and s < h):
                    continue
                if has_aabb_overlap(h, s, aabb_lower, aabb_upper):
                    stored, dropped, heaped = _push_candidate(
                        h, s, n, shape_body, body_kind, keys, stored, dropped, heaped
                    )

    sorted_keys = np.sort(keys[:stored])
    for q in range(stored):
        pairs[q, 0] = sorted_keys[q] // n
        pairs[q, 1] = sorted_keys[q] % n
    counts[0] = stored
    counts[1] = dropped


def keep_shared_collections(pairs, count: int, shape_body, body_mask) -> int:
    """Keep, in their order, the first ``count`` pairs of ``pairs`` whose bodies share a collision collection.

    Blender's rule: two bodies collide only when their Collision Collections masks share a bit. Plain NumPy, run
    only for models where some pair shares none (no compiled kernel for the others).

    Args:
        pairs: shape pairs (pair_max, 2), int32, compacted in place. count: how many are valid.
        shape_body: body of each shape (shape_count,), int32. body_mask: 20-bit mask per body (body_count,), int32.

    Returns:
        The number of pairs kept (the first rows of ``pairs``).
    """
    valid = pairs[:count]
    shared = body_mask[shape_body[valid[:, 0]]] & body_mask[shape_body[valid[:, 1]]]
    kept = valid[shared != 0]
    pairs[: kept.shape[0]] = kept
    return int(kept.shape[0])
