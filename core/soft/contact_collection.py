"""Candidate contact elements of a soft-world step: (contact point, collider) pairs, (box corner, collider)
pairs and soft–soft (contact point, surface triangle) pairs found through a uniform grid.

The element arrays (``el_kind`` (E,), ``el_nodes`` (E, 16), ``el_weights`` (E, 16), ``el_target`` (E,),
``el_mu`` (E,)) are those of :mod:`.contact_elements`; a pair is kept when its signed distance is below the
reach at either the start or the end state of the step.
"""

import math

import numpy as np

from ..jit import njit_kernel
from .contact_elements import ELEMENT_NODES, KIND_POINT_BOX, KIND_POINT_COLLIDER, KIND_POINT_TRIANGLE, element_distance


def collect_contacts(x_a, x_b, margin, delta, point_nodes, point_weights, point_friction, col_kind, col_friction,
                     col_aniso, geometry_a, geometry_b, aff_collider, aff_corner_weights, point_body, tri_points,
                     el_kind, el_nodes, el_weights, el_target, el_mu):  # fmt: skip
    """Fill the element arrays with every (point, collider) pair closer than ``delta + margin`` at either
    ``x_a``/``geometry_a`` (start of step) or ``x_b``/``geometry_b`` (end of step).

    Points: the soft bodies' contact points ``sum_k point_weights[p, k] x[point_nodes[p, k]]`` ((P, 4),
    -1 padded; ``margin`` (N,) [m] per node, of the point's first node) against static/kinematic
    colliders (``col_kind`` 0/1) and dynamic boxes; box corners against static/kinematic colliders.
    Soft–soft: every contact point against every surface triangle ``tri_points`` (K, 3) (corners are
    contact points) of another body (``point_body`` (P,)) within ``2 delta`` at either state, found through a
    uniform grid over the points.
    ``el_mu`` gets the geometric mean of the two friction coefficients. Returns the number of pairs found;
    when it exceeds the capacity (``el_kind.shape[0]``) only the first ones are stored and the caller
    must grow the arrays and call again.

    Two compiled passes, the soft–soft one run only when there are triangles (two soft bodies or more): a scene
    with one soft body never compiles it.
    """
    count = collect_collider_contacts(
        x_a, x_b, margin, delta, point_nodes, point_weights, point_friction, col_kind, col_friction, col_aniso,
        geometry_a, geometry_b, aff_collider, aff_corner_weights, el_kind, el_nodes, el_weights, el_target, el_mu,
    )  # fmt: skip
    if tri_points.shape[0] == 0:
        return count
    return collect_soft_soft_contacts(
        x_a, x_b, delta, point_nodes, point_weights, point_friction, point_body, tri_points, geometry_a,
        geometry_b, el_kind, el_nodes, el_weights, el_target, el_mu, count,
    )  # fmt: skip


@njit_kernel
def collect_collider_contacts(x_a, x_b, margin, delta, point_nodes, point_weights, point_friction, col_kind,
                              col_friction, col_aniso, geometry_a, geometry_b, aff_collider, aff_corner_weights,
                              el_kind, el_nodes, el_weights, el_target, el_mu):  # fmt: skip
    """The collider pass of :func:`collect_contacts`; returns the number of pairs found."""
    one = _one_element()
    coef = np.empty(ELEMENT_NODES)
    g = np.empty(3)
    scratch = np.empty((4, 3, 3))
    return _collect_collider_pairs(
        x_a, x_b, margin, delta, point_nodes, point_weights, point_friction, col_kind, col_friction, col_aniso,
        geometry_a, geometry_b, aff_collider, aff_corner_weights, one, coef, g, scratch, el_kind, el_nodes,
        el_weights, el_target, el_mu,
    )  # fmt: skip


@njit_kernel
def collect_soft_soft_contacts(x_a, x_b, delta, point_nodes, point_weights, point_friction, point_body,
                               tri_points, geometry_a, geometry_b, el_kind, el_nodes, el_weights, el_target, el_mu,
                               count):  # fmt: skip
    """The soft–soft pass of :func:`collect_contacts`, appending after ``count`` pairs; returns the new count."""
    one = _one_element()
    coef = np.empty(ELEMENT_NODES)
    g = np.empty(3)
    scratch = np.empty((4, 3, 3))
    return _collect_soft_soft_pairs(
        x_a, x_b, delta, point_nodes, point_weights, point_friction, point_body, tri_points, geometry_a,
        geometry_b, one, coef, g, scratch, el_kind, el_nodes, el_weights, el_target, el_mu, count,
    )  # fmt: skip


@njit_kernel
def _one_element():
    """One-element arrays ``(kind (1,), nodes (1, 16), weights (1, 16), target (1,))`` for a candidate pair."""
    return (
        np.zeros(1, dtype=np.int64),
        np.full((1, ELEMENT_NODES), -1, dtype=np.int64),
        np.zeros((1, ELEMENT_NODES)),
        np.zeros(1, dtype=np.int64),
    )


@njit_kernel
def _store_element(count, one, mu, el_kind, el_nodes, el_weights, el_target, el_mu):
    """Copy the candidate ``one`` into element slot ``count`` with friction coefficient ``mu`` (if it fits)."""
    one_kind, one_nodes, one_weights, one_target = one
    if count < el_kind.shape[0]:
        el_kind[count] = one_kind[0]
        el_target[count] = one_target[0]
        for k in range(ELEMENT_NODES):
            el_nodes[count, k] = one_nodes[0, k]
            el_weights[count, k] = one_weights[0, k]
        el_mu[count] = mu


@njit_kernel
def _collect_collider_pairs(x_a, x_b, margin, delta, point_nodes, point_weights, point_friction, col_kind,
                            col_friction, col_aniso, geometry_a, geometry_b, aff_collider, aff_corner_weights, one,
                            coef, g, scratch, el_kind, el_nodes, el_weights, el_target, el_mu):  # fmt: skip
    """Contact points and box corners against static/kinematic colliders, contact points against dynamic
    boxes (see :func:`collect_contacts`); returns the number of pairs found."""
    one_kind, one_nodes, one_weights, one_target = one
    aff_nodes = geometry_a[4]
    count = np.int64(0)  # not the literal 0: _store_element would be compiled for Literal[int](0) too
    C = col_kind.shape[0]
    A = aff_collider.shape[0]
    P = point_nodes.shape[0]
    for target in range(C + A):
        is_box = target >= C
        if not is_box and col_kind[target] == 2:
            continue
        for p in range(P + (0 if is_box else 8 * A)):
            one_nodes[0, :] = -1
            one_weights[0, :] = 0.0
            if p < P:
                for k in range(4):
                    one_nodes[0, k] = point_nodes[p, k]
                    one_weights[0, k] = point_weights[p, k]
                mu_point = point_friction[p]
            else:  # a corner of a dynamic box
                a = (p - P) // 8
                for k in range(4):
                    one_nodes[0, k] = aff_nodes[a, k]
                    one_weights[0, k] = aff_corner_weights[a, (p - P) % 8, k]
                mu_point = col_friction[aff_collider[a]]
            if is_box:
                one_kind[0] = KIND_POINT_BOX
                one_target[0] = target - C
                for k in range(4):
                    one_nodes[0, 4 + k] = aff_nodes[target - C, k]
                mu_other = col_friction[aff_collider[target - C]]
            else:
                one_kind[0] = KIND_POINT_COLLIDER
                one_target[0] = target
                mu_other = col_friction[target]
            d = _pair_distance(x_a, x_b, geometry_a, geometry_b, one, coef, g, scratch)
            if d < delta + margin[one_nodes[0, 0]]:
                mu = math.sqrt(mu_point * mu_other)
                if not is_box and col_aniso[target, 2] > 0.0:  # a structured surface keeps its ellipse
                    mu = math.sqrt(col_aniso[target, 0] * col_aniso[target, 1])
                _store_element(count, one, mu, el_kind, el_nodes, el_weights, el_target, el_mu)
                count += 1
    return count


@njit_kernel
def _point_positions(x_a, x_b, point_nodes, point_weights):
    """Contact-point positions (2, P, 3) [m] at both states (``sum_k w_k x_k``)."""
    P = point_nodes.shape[0]
    pos = np.empty((2, P, 3))
    for p in range(P):
        for state in range(2):
            xs = x_a if state == 0 else x_b
            for i in range(3):
                acc = 0.0
                for k in range(4):
                    node = point_nodes[p, k]
                    if node >= 0:
                        acc += point_weights[p, k] * xs[node, i]
                pos[state, p, i] = acc
    return pos


MAX_GRID_CELLS = 1 << 20
"""Most cells of the soft–soft point grid along one axis (so that cell keys fit an int64)."""


@njit_kernel
def _point_grid(pos, tri_points, grow):
    """Uniform grid over the points' start positions ``pos[0]`` (P, 3): returns ``(origin (3,), cell [m],
    dims (3,), order (P,), sorted_keys (P,))`` with the points sorted by cell key. The cell is the median
    triangle extent, at least ``grow`` (so a triangle's grown box spans few cells)."""
    P = pos.shape[1]
    K = tri_points.shape[0]
    glo = np.full(3, 1.0e300)
    ghi = np.full(3, -1.0e300)
    for p in range(P):
        for i in range(3):
            glo[i] = min(glo[i], pos[0, p, i])
            ghi[i] = max(ghi[i], pos[0, p, i])
    extents = np.empty(K)
    for t in range(K):
        e_max = 0.0
        for i in range(3):
            a = pos[0, tri_points[t, 0], i]
            b = pos[0, tri_points[t, 1], i]
            c = pos[0, tri_points[t, 2], i]
            e_max = max(e_max, max(a, b, c) - min(a, b, c))
        extents[t] = e_max
    cell = max(float(np.median(extents)), grow, 1.0e-9)
    for i in range(3):  # bodies of wildly different sizes: keep the keys (dims³) within int64
        cell = max(cell, (ghi[i] - glo[i]) / (MAX_GRID_CELLS - 1))
    dims = np.empty(3, dtype=np.int64)
    for i in range(3):
        dims[i] = int((ghi[i] - glo[i]) / cell) + 1
    keys = np.empty(P, dtype=np.int64)
    for p in range(P):
        ix = int((pos[0, p, 0] - glo[0]) / cell)
        iy = int((pos[0, p, 1] - glo[1]) / cell)
        iz = int((pos[0, p, 2] - glo[2]) / cell)
        keys[p] = (ix * dims[1] + iy) * dims[2] + iz
    order = np.argsort(keys, kind="mergesort")
    return glo, cell, dims, order, keys[order]


@njit_kernel
def _collect_soft_soft_pairs(x_a, x_b, delta, point_nodes, point_weights, point_friction, point_body, tri_points,
                             geometry_a, geometry_b, one, coef, g, scratch, el_kind, el_nodes, el_weights, el_target,
                             el_mu, count):  # fmt: skip
    """Soft–soft (point, triangle) pairs (see :func:`collect_contacts`), appended after ``count`` pairs;
    returns the new count."""
    pos = _point_positions(x_a, x_b, point_nodes, point_weights)
    P = pos.shape[1]
    # A triangle only visits the cells its box (grown by the contact reach and the largest point travel)
    # overlaps. Soft-soft pairs use a reach of two contact layers, without the velocity margin: two bodies
    # moving together would otherwise pair every point with every nearby triangle. Pairs that close in
    # during the step are found by the solver's re-collection at the end-of-step positions.
    reach = 2.0 * delta
    travel = 0.0
    for p in range(P):
        d2 = 0.0
        for i in range(3):
            d2 += (pos[1, p, i] - pos[0, p, i]) ** 2
        travel = max(travel, math.sqrt(d2))
    grow = reach + 2.0 * travel
    glo, cell, dims, order, sorted_keys = _point_grid(pos, tri_points, grow)
    lo = np.empty(3)
    hi = np.empty(3)
    cmin = np.empty(3, dtype=np.int64)
    cmax = np.empty(3, dtype=np.int64)
    for t in range(tri_points.shape[0]):
        body = point_body[tri_points[t, 0]]
        for i in range(3):
            lo[i] = 1.0e300
            hi[i] = -1.0e300
            for j in range(3):
                for state in range(2):
                    v = pos[state, tri_points[t, j], i]
                    lo[i] = min(lo[i], v)
                    hi[i] = max(hi[i], v)
            cmin[i] = max(int(math.floor((lo[i] - grow - glo[i]) / cell)), 0)
            cmax[i] = min(int(math.floor((hi[i] + grow - glo[i]) / cell)), dims[i] - 1)
        spanned = (cmax[0] - cmin[0] + 1) * (cmax[1] - cmin[1] + 1) * (cmax[2] - cmin[2] + 1)
        if spanned > P:
            # a triangle far larger than the cells (a body many times the size of the others) spans more cells
            # than there are points: walk the points instead, in ascending key order, as the cell walk would
            for slot in range(P):
                key = sorted_keys[slot]
                iz = key % dims[2]
                iy = (key // dims[2]) % dims[1]
                ix = key // (dims[1] * dims[2])
                if cmin[0] <= ix <= cmax[0] and cmin[1] <= iy <= cmax[1] and cmin[2] <= iz <= cmax[2]:
                    count = _add_point_triangle(
                        order[slot], t, body, reach, lo, hi, pos, point_nodes, point_weights, point_friction,
                        point_body, tri_points, x_a, x_b, geometry_a, geometry_b, one, coef, g, scratch,
                        el_kind, el_nodes, el_weights, el_target, el_mu, count,
                    )  # fmt: skip
            continue
        for ix in range(cmin[0], cmax[0] + 1):
            for iy in range(cmin[1], cmax[1] + 1):
                for iz in range(cmin[2], cmax[2] + 1):
                    key = (ix * dims[1] + iy) * dims[2] + iz
                    first = np.searchsorted(sorted_keys, key)
                    for slot in range(first, P):
                        if sorted_keys[slot] != key:
                            break
                        count = _add_point_triangle(
                            order[slot], t, body, reach, lo, hi, pos, point_nodes, point_weights, point_friction,
                            point_body, tri_points, x_a, x_b, geometry_a, geometry_b, one, coef, g, scratch,
                            el_kind, el_nodes, el_weights, el_target, el_mu, count,
                        )  # fmt: skip
    return count


@njit_kernel
def _add_point_triangle(p, t, body, r, lo, hi, pos, point_nodes, point_weights, point_friction, point_body,
                        tri_points, x_a, x_b, geometry_a, geometry_b, one, coef, g, scratch, el_kind, el_nodes,
                        el_weights, el_target, el_mu, count):  # fmt: skip
    """Append the (point p, triangle t) element if p is another body's point within ``r`` of t (swept box
    ``lo``/``hi`` over both states) at either state; return the new count (elements beyond the capacity
    are counted, not stored)."""
    if point_body[p] == body:
        return count
    for i in range(3):
        if min(pos[0, p, i], pos[1, p, i]) > hi[i] + r or max(pos[0, p, i], pos[1, p, i]) < lo[i] - r:
            return count
    one_kind, one_nodes, one_weights, one_target = one
    one_kind[0] = KIND_POINT_TRIANGLE
    one_target[0] = t
    for k in range(4):
        one_nodes[0, k] = point_nodes[p, k]
        one_weights[0, k] = point_weights[p, k]
        for j in range(3):
            one_nodes[0, 4 + 4 * j + k] = point_nodes[tri_points[t, j], k]
            one_weights[0, 4 + 4 * j + k] = point_weights[tri_points[t, j], k]
    d = _pair_distance(x_a, x_b, geometry_a, geometry_b, one, coef, g, scratch)
    if d < r:
        mu = math.sqrt(point_friction[p] * point_friction[tri_points[t, 0]])
        _store_element(count, one, mu, el_kind, el_nodes, el_weights, el_target, el_mu)
        count += 1
    return count


@njit_kernel
def _pair_distance(x_a, x_b, geometry_a, geometry_b, one, coef, g, scratch):
    """min over the two states of the candidate's signed distance [m] (element 0 of the one-element arrays)."""
    kind, nodes, weights, target = one
    slot = np.int64(0)  # not a literal 0: the distance kernels compile once, for any element index
    d_a = element_distance(slot, x_a, kind, nodes, weights, target, geometry_a, coef, g, scratch)
    d_b = element_distance(slot, x_b, kind, nodes, weights, target, geometry_b, coef, g, scratch)
    return min(d_a, d_b)
