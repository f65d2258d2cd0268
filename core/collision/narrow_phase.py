"""Narrow phase: contact points, normals and gaps for every candidate pair.

PLACEHOLDER (sphere/box vs plane, sphere-sphere only) — to be replaced.
"""

import math

import numpy as np

from ..jit import njit_kernel

FEATURE_MAX = 256
"""Feature ids lie in [0, FEATURE_MAX)."""

INF = 1.0e30


@njit_kernel
def compute_shape_aabbs(shape_type, shape_params, shape_world_pos, shape_world_rot, margin, aabb_lower, aabb_upper):
    """World AABB of every shape expanded by ``margin`` [m]; planes get an unbounded box."""
    for s in range(shape_type.shape[0]):
        t = shape_type[s]
        R = shape_world_rot[s]
        c = shape_world_pos[s]
        for k in range(3):
            if t == 1:
                ext = shape_params[s, 0]
            elif t == 2:
                ext = 0.0
                for j in range(3):
                    ext += abs(R[k, j]) * shape_params[s, j]
            elif t == 3:
                ext = abs(R[k, 2]) * shape_params[s, 1] + shape_params[s, 0]
            else:
                ext = INF
            aabb_lower[s, k] = c[k] - ext - margin
            aabb_upper[s, k] = c[k] + ext + margin


@njit_kernel
def _emit(counts, pair_index, point, normal, gap, feature, out_pair, out_point, out_normal, out_gap, out_feature):
    c = counts[0]
    if c >= out_pair.shape[0]:
        counts[1] += 1
        return
    out_pair[c] = pair_index
    out_point[c] = point
    out_normal[c] = normal
    out_gap[c] = gap
    out_feature[c] = feature
    counts[0] = c + 1


@njit_kernel
def generate_contacts(
    shape_type, shape_params, shape_world_pos, shape_world_rot, pairs, pair_count, margin,
    out_pair, out_point, out_normal, out_gap, out_feature, counts,
):
    """Contacts (gap <= margin) of the first ``pair_count`` pairs; normal points from pairs[p,0] to pairs[p,1]."""
    counts[0] = 0
    counts[1] = 0
    for p in range(pair_count):
        a, b = pairs[p, 0], pairs[p, 1]
        ta, tb = shape_type[a], shape_type[b]
        flip = 1.0
        if ta == 4:  # make the plane the second shape
            a, b = b, a
            ta, tb = tb, ta
            flip = -1.0
        if tb == 4:
            n = shape_world_rot[b][:, 2].copy()
            o = shape_world_pos[b]
            if ta == 1:
                r = shape_params[a, 0]
                d = np.dot(shape_world_pos[a] - o, n) - r
                if d <= margin:
                    point = shape_world_pos[a] - (r + 0.5 * d) * n
                    _emit(counts, p, point, -flip * n, d, 0, out_pair, out_point, out_normal, out_gap, out_feature)
            elif ta == 2:
                R = shape_world_rot[a]
                h = shape_params[a]
                for v in range(8):
                    local = np.array([h[0] * (1 - 2 * (v & 1)), h[1] * (1 - 2 * ((v >> 1) & 1)), h[2] * (1 - 2 * ((v >> 2) & 1))])
                    x = shape_world_pos[a] + R @ local
                    d = np.dot(x - o, n)
                    if d <= margin:
                        point = x - 0.5 * d * n
                        _emit(counts, p, point, -flip * n, d, v, out_pair, out_point, out_normal, out_gap, out_feature)
        elif ta == 1 and tb == 1:
            dvec = shape_world_pos[b] - shape_world_pos[a]
            dist = math.sqrt(np.dot(dvec, dvec))
            ra, rb = shape_params[a, 0], shape_params[b, 0]
            d = dist - ra - rb
            if d <= margin:
                n = np.array([0.0, 0.0, 1.0]) if dist < 1e-12 else dvec / dist
                point = 0.5 * (shape_world_pos[a] + ra * n + shape_world_pos[b] - rb * n)
                _emit(counts, p, point, n, d, 0, out_pair, out_point, out_normal, out_gap, out_feature)
