"""Broad phase: candidate shape pairs whose margin-expanded AABBs overlap.

PLACEHOLDER (brute force) — to be replaced by sweep and prune.
"""

from ..jit import njit_kernel


@njit_kernel
def sweep_and_prune(aabb_lower, aabb_upper, shape_body, body_kind, pairs, counts):
    """Write overlapping pairs (a < b, lexicographic order) into ``pairs``; counts = [stored, dropped].

    Pairs on the same body and pairs whose bodies are both non-dynamic (body_kind != 1) are skipped.
    """
    n = aabb_lower.shape[0]
    stored = 0
    dropped = 0
    for a in range(n):
        for b in range(a + 1, n):
            ba, bb = shape_body[a], shape_body[b]
            if ba == bb or (body_kind[ba] != 1 and body_kind[bb] != 1):
                continue
            overlap = True
            for k in range(3):
                if aabb_lower[a, k] > aabb_upper[b, k] or aabb_lower[b, k] > aabb_upper[a, k]:
                    overlap = False
            if overlap:
                if stored < pairs.shape[0]:
                    pairs[stored, 0] = a
                    pairs[stored, 1] = b
                    stored += 1
                else:
                    dropped += 1
    counts[0] = stored
    counts[1] = dropped
