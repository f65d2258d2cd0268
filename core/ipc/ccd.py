"""Conservative continuous collision detection (CCD) for the IPC line search.

**Additive CCD** (ACCD, [Li, Kaufman, Jiang 2021] "Codimensional Incremental Potential Contact",
ACM TOG 40(4), Sec. 5 and Alg. 1) is conservative advancement on the unsigned distance. Along the
linear trajectories ``x_i(t) = x0_i + t dx_i``, ``t in [0, 1]``, the distance between a point and a
triangle (or between two edges) cannot shrink faster than

    l_p = |dx_0 - m| + max_{j=1..3} |dx_j - m|                (point-triangle)
    l_p = max(|dx_0 - m|, |dx_1 - m|) + max(|dx_2 - m|, |dx_3 - m|)    (edge-edge)

per unit t, where ``m`` is the mean of the four displacements: a common translation does not change
the distance, and the closest point of a primitive is a convex combination of its vertices, so it
moves at most as far as its fastest vertex. From a state with distance ``d > xi`` (``xi`` the
``min_distance``) the pair therefore stays farther than ``xi`` for at least ``(d - xi) / l_p``. The
kernel advances by ``0.9 (d - xi) / l_p`` (the 0.9 is a safety margin against round-off in ``d``)
and re-measures ``d``, until either

- the measured gap ``d - xi`` falls below the target ``g* = (1 - rescaling) (d_0 - xi)``: from the
  last verified time ``t`` (gap ``g``) the gap provably stays above ``g*`` until
  ``t + (g - g*) / l_p``, which is returned as the time of impact (TOI). The configuration there
  keeps at least ``(1 - rescaling)`` of the initial gap, so a line search can step to it without
  the barrier becoming infinite; or
- the time passes ``tmax``: no contact on ``[0, tmax]``, returns ``np.inf``.

Every interval stepped over is proven free of contact, so the TOI is never later than the true one
(no false negatives, up to the round-off of the distance evaluation, which the 0.9 factor absorbs
unless the gap is near machine precision relative to the coordinates). Near misses closer than
``(1 - rescaling) d_0`` are reported as contacts (conservative false positives). For a head-on
approach the TOI is ``rescaling`` times the true one. Distances are this module's own closed forms
(independent of the barrier's distance code on purpose).

Conventions: ``toi`` in ``[0, tmax]`` is a contact-free step (0 when the pair starts within
``min_distance``), ``np.inf`` means no contact before ``tmax``. The iteration cap (reached only when
a pair slides at a tiny distance over a long path) returns the last verified time, never skips.
Used by the CCD-aware line search, spec D.3.4 Alg.20 (``alpha = CCD(q, q + dq)``).
"""

import math

import numpy as np

from ..jit import njit_kernel, njit_parallel, prange

DEFAULT_RESCALING = 0.9
"""Conservative rescaling ``eta`` of the TOI (ipctk's default for additive CCD)."""

MAX_ITERATIONS = 1_000_000
"""Advancement steps per pair before giving up with the last verified (conservative) time."""

STEP_SAFETY = 0.9
"""Largest fraction of the proven contact-free time ``(d - xi) / l_p`` taken per step."""

PARALLEL_SIN2 = 1.0e-12
"""Below this ``sin^2`` of the angle, edges (and triangle corners) count as parallel (degenerate)."""

_CHUNKS = 64
"""Work chunks of :func:`max_collision_free_step` (each owns its scratch and its minimum)."""


# --------------------------------------------------------------------------------------------
# Squared distances of four points x (4,3): point x[0] - triangle x[1..3], or edges x[0]x[1], x[2]x[3]
# --------------------------------------------------------------------------------------------


@njit_kernel
def _point_segment_distance2(x, i, a, b):
    """Squared distance [m^2] from point ``x[i]`` to the segment ``x[a] x[b]`` (a point if a = b)."""
    ex = x[b, 0] - x[a, 0]
    ey = x[b, 1] - x[a, 1]
    ez = x[b, 2] - x[a, 2]
    wx = x[i, 0] - x[a, 0]
    wy = x[i, 1] - x[a, 1]
    wz = x[i, 2] - x[a, 2]
    ee = ex * ex + ey * ey + ez * ez
    s = 0.0
    if ee > 0.0:
        s = min(max((wx * ex + wy * ey + wz * ez) / ee, 0.0), 1.0)
    dx = wx - s * ex
    dy = wy - s * ey
    dz = wz - s * ez
    return dx * dx + dy * dy + dz * dz


@njit_kernel
def _point_triangle_distance2(x):
    """Squared distance [m^2] from point ``x[0]`` to the triangle ``x[1] x[2] x[3]`` (Eq.293).

    The distance is convex in the barycentric coordinates, so its minimum is the plane distance when
    the projection falls inside, otherwise on one of the three edges. Slivers (``sin^2`` of the
    corner angle below ``PARALLEL_SIN2``) use the edges only.
    """
    abx = x[2, 0] - x[1, 0]
    aby = x[2, 1] - x[1, 1]
    abz = x[2, 2] - x[1, 2]
    acx = x[3, 0] - x[1, 0]
    acy = x[3, 1] - x[1, 1]
    acz = x[3, 2] - x[1, 2]
    apx = x[0, 0] - x[1, 0]
    apy = x[0, 1] - x[1, 1]
    apz = x[0, 2] - x[1, 2]
    d00 = abx * abx + aby * aby + abz * abz
    d01 = abx * acx + aby * acy + abz * acz
    d11 = acx * acx + acy * acy + acz * acz
    d20 = apx * abx + apy * aby + apz * abz
    d21 = apx * acx + apy * acy + apz * acz
    den = d00 * d11 - d01 * d01
    if den > PARALLEL_SIN2 * d00 * d11:
        v = (d11 * d20 - d01 * d21) / den
        w = (d00 * d21 - d01 * d20) / den
        if v >= 0.0 and w >= 0.0 and v + w <= 1.0:
            nx = aby * acz - abz * acy
            ny = abz * acx - abx * acz
            nz = abx * acy - aby * acx
            h = apx * nx + apy * ny + apz * nz
            return h * h / (nx * nx + ny * ny + nz * nz)
    d = _point_segment_distance2(x, np.int64(0), np.int64(1), np.int64(2))
    d = min(d, _point_segment_distance2(x, np.int64(0), np.int64(2), np.int64(3)))
    return min(d, _point_segment_distance2(x, np.int64(0), np.int64(3), np.int64(1)))


@njit_kernel
def _edge_edge_distance2(x):
    """Squared distance [m^2] between the segments ``x[0] x[1]`` and ``x[2] x[3]`` (Eq.294).

    Minimum of the four endpoint-segment distances (the boundary of the parameter square) and, for
    non-parallel edges whose line-line closest points fall inside both segments (Eq.101), the
    line-line distance. The latter is a lower bound of the segment distance, so ill-conditioned
    near-parallel parameters err on the conservative side.
    """
    d = _point_segment_distance2(x, np.int64(0), np.int64(2), np.int64(3))
    d = min(d, _point_segment_distance2(x, np.int64(1), np.int64(2), np.int64(3)))
    d = min(d, _point_segment_distance2(x, np.int64(2), np.int64(0), np.int64(1)))
    d = min(d, _point_segment_distance2(x, np.int64(3), np.int64(0), np.int64(1)))
    ux = x[1, 0] - x[0, 0]
    uy = x[1, 1] - x[0, 1]
    uz = x[1, 2] - x[0, 2]
    vx = x[3, 0] - x[2, 0]
    vy = x[3, 1] - x[2, 1]
    vz = x[3, 2] - x[2, 2]
    wx = x[0, 0] - x[2, 0]
    wy = x[0, 1] - x[2, 1]
    wz = x[0, 2] - x[2, 2]
    a = ux * ux + uy * uy + uz * uz
    b = ux * vx + uy * vy + uz * vz
    c = vx * vx + vy * vy + vz * vz
    den = a * c - b * b
    if den > PARALLEL_SIN2 * a * c:
        dd = ux * wx + uy * wy + uz * wz
        e = vx * wx + vy * wy + vz * wz
        s = (b * e - c * dd) / den
        t = (a * e - b * dd) / den
        if 0.0 <= s <= 1.0 and 0.0 <= t <= 1.0:
            nx = uy * vz - uz * vy
            ny = uz * vx - ux * vz
            nz = ux * vy - uy * vx
            h = wx * nx + wy * ny + wz * nz
            d = min(d, h * h / (nx * nx + ny * ny + nz * nz))
    return d


# --------------------------------------------------------------------------------------------
# Additive CCD
# --------------------------------------------------------------------------------------------


@njit_kernel
def _distance(x, edge_edge):
    if edge_edge:
        return math.sqrt(_edge_edge_distance2(x))
    return math.sqrt(_point_triangle_distance2(x))


@njit_kernel
def additive_ccd(x0, dx, x, edge_edge, min_distance, tmax, rescaling, max_iterations):
    """Conservative TOI of four points moving linearly, ``x(t) = x0 + t dx`` ([Li et al. 2021] Alg. 1).

    Args:
        x0: (4, 3) start positions [m]: point, triangle corners (``edge_edge`` False) or edge a's two
            endpoints, edge b's two endpoints (``edge_edge`` True).
        dx: (4, 3) displacements over the step [m].
        x: (4, 3) scratch, overwritten.
        edge_edge: selects the distance (see ``x0``).
        min_distance: ``xi`` [m], the separation treated as contact.
        tmax: latest time of interest in the step's unit time.
        rescaling: ``eta`` in (0, 1); the TOI keeps ``(1 - eta) (d_0 - xi)`` of the initial gap.
        max_iterations: step cap; on reaching it the last verified time is returned.

    Returns:
        TOI in ``[0, tmax]`` (all of ``[0, TOI]`` keeps the distance above ``xi``), or ``np.inf`` when
        the pair stays apart on ``[0, tmax]``.
    """
    mx = 0.25 * (dx[0, 0] + dx[1, 0] + dx[2, 0] + dx[3, 0])
    my = 0.25 * (dx[0, 1] + dx[1, 1] + dx[2, 1] + dx[3, 1])
    mz = 0.25 * (dx[0, 2] + dx[1, 2] + dx[2, 2] + dx[3, 2])
    n0 = math.sqrt((dx[0, 0] - mx) ** 2 + (dx[0, 1] - my) ** 2 + (dx[0, 2] - mz) ** 2)
    n1 = math.sqrt((dx[1, 0] - mx) ** 2 + (dx[1, 1] - my) ** 2 + (dx[1, 2] - mz) ** 2)
    n2 = math.sqrt((dx[2, 0] - mx) ** 2 + (dx[2, 1] - my) ** 2 + (dx[2, 2] - mz) ** 2)
    n3 = math.sqrt((dx[3, 0] - mx) ** 2 + (dx[3, 1] - my) ** 2 + (dx[3, 2] - mz) ** 2)
    if edge_edge:
        lp = max(n0, n1) + max(n2, n3)
    else:
        lp = n0 + max(n1, max(n2, n3))

    gap = _distance(x0, edge_edge) - min_distance
    if not gap > 0.0:
        return 0.0  # already within min_distance (or touching): no step is safe
    if lp == 0.0:
        return np.inf  # rigid relative motion (translation): the distance never changes
    target = (1.0 - rescaling) * gap
    t = 0.0
    for _ in range(max_iterations):
        t_next = t + STEP_SAFETY * gap / lp
        for i in range(4):
            for k in range(3):
                x[i, k] = x0[i, k] + t_next * dx[i, k]
        gap_next = _distance(x, edge_edge) - min_distance
        if gap_next < target:
            # the gap cannot fall below the target before t + (gap - target) / lp
            toi = t + (gap - target) / lp
            return toi if toi <= tmax else np.inf
        if t_next > tmax:
            return np.inf  # [0, t_next] is proven contact-free and covers [0, tmax]
        t = t_next
        gap = gap_next
    return t


@njit_kernel
def point_triangle_ccd(p0, ta0, tb0, tc0, p1, ta1, tb1, tc1, min_distance=0.0, tmax=1.0, rescaling=DEFAULT_RESCALING):
    """Conservative TOI [unit step time] of point ``p`` against triangle ``(ta, tb, tc)``.

    Suffix 0 / 1: positions (3,) [m] at the start / end of the step, linear in between.
    Returns a ``t in [0, tmax]`` before which the distance stays above ``min_distance`` (0 when it
    starts within it), or ``np.inf`` when no contact happens on ``[0, tmax]``.
    """
    x0 = np.empty((4, 3))
    dx = np.empty((4, 3))
    for k in range(3):
        x0[0, k] = p0[k]
        x0[1, k] = ta0[k]
        x0[2, k] = tb0[k]
        x0[3, k] = tc0[k]
        dx[0, k] = p1[k] - p0[k]
        dx[1, k] = ta1[k] - ta0[k]
        dx[2, k] = tb1[k] - tb0[k]
        dx[3, k] = tc1[k] - tc0[k]
    return additive_ccd(
        x0, dx, np.empty((4, 3)), np.bool_(False), min_distance, tmax, rescaling, np.int64(MAX_ITERATIONS)
    )


@njit_kernel
def edge_edge_ccd(
    ea0_0, ea1_0, eb0_0, eb1_0, ea0_1, ea1_1, eb0_1, eb1_1, min_distance=0.0, tmax=1.0, rescaling=DEFAULT_RESCALING
):
    """Conservative TOI [unit step time] of edge ``(ea0, ea1)`` against edge ``(eb0, eb1)``.

    Suffix _0 / _1: endpoint positions (3,) [m] at the start / end of the step. Same return
    convention as :func:`point_triangle_ccd`.
    """
    x0 = np.empty((4, 3))
    dx = np.empty((4, 3))
    for k in range(3):
        x0[0, k] = ea0_0[k]
        x0[1, k] = ea1_0[k]
        x0[2, k] = eb0_0[k]
        x0[3, k] = eb1_0[k]
        dx[0, k] = ea0_1[k] - ea0_0[k]
        dx[1, k] = ea1_1[k] - ea1_0[k]
        dx[2, k] = eb0_1[k] - eb0_0[k]
        dx[3, k] = eb1_1[k] - eb1_0[k]
    return additive_ccd(
        x0, dx, np.empty((4, 3)), np.bool_(True), min_distance, tmax, rescaling, np.int64(MAX_ITERATIONS)
    )


@njit_kernel
def _load(x0, x1, row, i, p0, dp):
    """Copy vertex ``i``'s start position and displacement into row ``row`` of the pair buffers."""
    for k in range(3):
        p0[row, k] = x0[i, k]
        dp[row, k] = x1[i, k] - x0[i, k]


@njit_parallel
def max_collision_free_step(x0, x1, faces, edges, vf_pairs, ee_pairs, min_distance=0.0, rescaling=DEFAULT_RESCALING):
    """Largest line-search step ``alpha in [0, 1]`` free of contact (spec D.3.4 Alg.20).

    Args:
        x0, x1: (V, 3) surface vertex positions [m] at the start / end of the Newton step.
        faces: (F, 3) int64 triangles; edges: (E, 2) int64.
        vf_pairs: (K, 2) int64 rows (vertex, face); ee_pairs: (L, 2) int64 rows (edge a, edge b),
            e.g. from :func:`..broad_phase.collision_candidates` with the swept boxes of ``x0 -> x1``.
        min_distance: ``xi`` [m]; rescaling: ``eta`` (see :func:`additive_ccd`).

    Returns:
        The smallest TOI over all pairs, clipped to ``[0, 1]`` (1.0 when nothing collides).

    Chunks run in parallel, each with its own scratch and minimum; a pair is searched only up to its
    chunk's current minimum (a later contact cannot lower it), which leaves the result unchanged
    because a pair's advancement sequence does not depend on ``tmax``.
    """
    vf_count = vf_pairs.shape[0]
    total = vf_count + ee_pairs.shape[0]
    chunks = min(total, _CHUNKS)
    best = np.ones(max(chunks, 1))
    for c in prange(chunks):
        p0 = np.empty((4, 3))
        dp = np.empty((4, 3))
        work = np.empty((4, 3))
        alpha = 1.0
        for k in range(c * total // chunks, (c + 1) * total // chunks):
            if k < vf_count:
                f = vf_pairs[k, 1]
                _load(x0, x1, np.int64(0), vf_pairs[k, 0], p0, dp)
                for j in range(3):
                    _load(x0, x1, j + 1, faces[f, j], p0, dp)
                toi = additive_ccd(
                    p0, dp, work, np.bool_(False), min_distance, alpha, rescaling, np.int64(MAX_ITERATIONS)
                )
            else:
                ea = ee_pairs[k - vf_count, 0]
                eb = ee_pairs[k - vf_count, 1]
                for j in range(2):
                    _load(x0, x1, j, edges[ea, j], p0, dp)
                    _load(x0, x1, j + 2, edges[eb, j], p0, dp)
                toi = additive_ccd(
                    p0, dp, work, np.bool_(True), min_distance, alpha, rescaling, np.int64(MAX_ITERATIONS)
                )
            alpha = min(alpha, toi)
        best[c] = alpha
    return max(0.0, best.min())
