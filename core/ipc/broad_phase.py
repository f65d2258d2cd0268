"""IPC broad phase: vertex-face and edge-edge candidates whose swept, inflated AABBs overlap.

Each vertex box is the AABB of its start and end positions ``x0``, ``x1`` grown by ``inflation`` on
every side; edge and face boxes are the union of their vertices' boxes (spec D.3.4 pitfall 4: the
CCD broad phase uses the swept AABB over ``[q, q + dq]``; with ``x1 = x0`` it is the static
proximity query of the barrier's active set, D.3.1). Two boxes overlap when they intersect as
closed boxes, so a pair is reported whenever the gap between the boxes is at most ``2 inflation``.

**Uniform grid, not sort-and-sweep.** Surface primitives lie on 2D sheets; projected onto one axis
the number of overlapping intervals grows like ``n^1.5`` (a sheet of ``n`` triangles has ``sqrt n``
rows sharing each x-interval), whereas a grid with a cell about one primitive box wide costs
``O(n + k)`` for ``k`` candidates when primitive sizes are similar, as on simulation meshes. The
cell size is the mean largest extent of the edge boxes (motion and inflation included). Faces and
edges are binned into every cell their box touches (a hash table from cell key to a contiguous run
of entries); a vertex (or edge) queries the cells of its own box. A pair that shares
several cells is reported only in the cell holding the lower corner of the intersection of the two
boxes, so no duplicates arise and no hashing of pairs is needed. Boxes spanning more than
``LARGE_SPAN`` cells on an axis (very fast or very large primitives) skip the grid and are tested
against every primitive, which keeps a few outliers from flooding the grid.

Queries run in parallel, each writing its first ``QUERY_ROOM`` partners into its own slots; the few queries with
more run again into their place in the output. Each query's partners are sorted, so the output is sorted
lexicographically and deterministic.
"""

import math

import numpy as np

from ..jit import njit_kernel, njit_parallel, prange

_CHUNKS = 256
"""Query chunks per parallel pass (each owns its scratch)."""

LARGE_SPAN = 8
"""Boxes spanning more cells than this along an axis are tested by brute force instead of binned."""

STATIC_GROUP = -1
"""``vertex_group`` of static collider vertices: pairs made only of them are skipped."""


@njit_kernel
def build_edges(faces):
    """Unique undirected edges (E, 2) int64 of the triangles ``faces`` (F, 3), rows ``(a, b)``, ``a < b``, sorted."""
    face_count = faces.shape[0]
    if face_count == 0:
        return np.zeros((0, 2), np.int64)
    stride = np.int64(faces.max()) + 1
    keys = np.empty(3 * face_count, np.int64)
    for f in range(face_count):
        for j in range(3):
            a = np.int64(faces[f, j])
            b = np.int64(faces[f, (j + 1) % 3])
            keys[3 * f + j] = min(a, b) * stride + max(a, b)
    keys.sort()
    count = 1
    for i in range(1, keys.shape[0]):
        if keys[i] != keys[i - 1]:
            count += 1
    edges = np.empty((count, 2), np.int64)
    e = 0
    for i in range(keys.shape[0]):
        if i == 0 or keys[i] != keys[i - 1]:
            edges[e, 0] = keys[i] // stride
            edges[e, 1] = keys[i] % stride
            e += 1
    return edges


# --------------------------------------------------------------------------------------------
# Boxes and grid
# --------------------------------------------------------------------------------------------


@njit_parallel
def _vertex_boxes(x0, x1, inflation, lo, hi):
    for v in prange(x0.shape[0]):
        for k in range(3):
            lo[v, k] = min(x0[v, k], x1[v, k]) - inflation
            hi[v, k] = max(x0[v, k], x1[v, k]) + inflation


@njit_parallel
def _primitive_boxes(vlo, vhi, prims, lo, hi):
    """Union of the vertex boxes of each primitive (rows of ``prims``)."""
    for p in prange(prims.shape[0]):
        for k in range(3):
            lo[p, k] = vlo[prims[p, 0], k]
            hi[p, k] = vhi[prims[p, 0], k]
        for j in range(1, prims.shape[1]):
            v = prims[p, j]
            for k in range(3):
                lo[p, k] = min(lo[p, k], vlo[v, k])
                hi[p, k] = max(hi[p, k], vhi[v, k])


@njit_kernel
def _cell_index(c, origin, cell, dim):
    """Grid coordinate of the scalar ``c`` along one axis, clamped to ``[0, dim)``."""
    i = math.floor((c - origin) / cell)
    return min(max(np.int64(i), 0), dim - 1)


@njit_kernel
def _hash_slot(key, shift):
    """First slot of ``key`` in the open-addressing table of size ``2^(64 - shift)``: Fibonacci hashing (the top
    bits of ``key * 2^64 / phi``) spreads the structured cell keys; linear probing from there keeps a lookup within
    one or two cache lines."""
    return np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(shift))


@njit_parallel
def _cell_counts(lo, hi, origin, cell, dims, counts, large):
    """Each box's cell count (``counts``), or ``large`` when it spans more than ``LARGE_SPAN`` cells on an axis."""
    ox, oy, oz, nx, ny, nz = origin[0], origin[1], origin[2], dims[0], dims[1], dims[2]
    count = lo.shape[0]
    chunks = min(count, _CHUNKS)
    for c in prange(chunks):
        for p in range(c * count // chunks, (c + 1) * count // chunks):
            sx = _cell_index(hi[p, 0], ox, cell, nx) - _cell_index(lo[p, 0], ox, cell, nx)
            sy = _cell_index(hi[p, 1], oy, cell, ny) - _cell_index(lo[p, 1], oy, cell, ny)
            sz = _cell_index(hi[p, 2], oz, cell, nz) - _cell_index(lo[p, 2], oz, cell, nz)
            large[p] = sx >= LARGE_SPAN or sy >= LARGE_SPAN or sz >= LARGE_SPAN
            counts[p] = 0 if large[p] else (sx + 1) * (sy + 1) * (sz + 1)


@njit_kernel
def _grid_pass(lo, hi, origin, cell, dims, large, shift, table_keys, table_end, ids):
    """One pass over the cells of every binned box, x slowest and z fastest, boxes in order. Without ``ids`` (empty):
    hash each cell into ``table_keys`` (-1: empty) and count its entries in ``table_end``; returns True when the
    load would pass 1/2 (the caller grows the table and starts again). With ``ids``: append each box to its cells'
    runs, ``table_end`` being the fill cursors. The box ranges and the probing are written out on scalars."""
    ox, oy, oz, nx, ny, nz = origin[0], origin[1], origin[2], dims[0], dims[1], dims[2]
    fill = ids.shape[0] > 0
    size = table_keys.shape[0]
    mask = size - 1
    distinct = 0
    for p in range(lo.shape[0]):
        if large[p]:
            continue
        for ix in range(_cell_index(lo[p, 0], ox, cell, nx), _cell_index(hi[p, 0], ox, cell, nx) + 1):
            for iy in range(_cell_index(lo[p, 1], oy, cell, ny), _cell_index(hi[p, 1], oy, cell, ny) + 1):
                for iz in range(_cell_index(lo[p, 2], oz, cell, nz), _cell_index(hi[p, 2], oz, cell, nz) + 1):
                    key = (ix * ny + iy) * nz + iz
                    s = _hash_slot(key, shift)
                    while table_keys[s] != key and table_keys[s] != -1:
                        s = (s + 1) & mask
                    if fill:
                        ids[table_end[s]] = p
                        table_end[s] += 1
                        continue
                    if table_keys[s] == -1:
                        # check the load before every insertion: one large box can fill a small table,
                        # and probing a full table would never end
                        if 2 * distinct >= size:
                            return True
                        table_keys[s] = key
                        distinct += 1
                    table_end[s] += 1
    return False


@njit_kernel
def _bin(lo, hi, origin, cell, dims):
    """Hash grid of the boxes ``lo, hi`` (P, 3) that are not large.

    Returns ``(table_keys, table_start, table_end, shift, ids, large_ids)``: slot ``s`` of the table
    holds cell ``table_keys[s]`` (-1: empty) whose primitives are ``ids[table_start[s] : table_end[s]]``
    in increasing order; ``large_ids`` lists the boxes left out of the grid.
    """
    count = lo.shape[0]
    counts = np.empty(count, np.int64)
    large = np.empty(count, np.bool_)
    _cell_counts(lo, hi, origin, cell, dims, counts, large)
    total = counts.sum()
    # table for ~2x the distinct cells: start from the primitive count (cells per primitive ~ primitives
    # per cell for boxes about one cell wide), grow and rebuild if the load passes 1/2
    shift = 60
    while 2 ** (64 - shift) < 2 * count:
        shift -= 1
    no_ids = np.empty(0, np.int64)
    while True:
        size = 2 ** (64 - shift)
        table_keys = np.full(size, -1, np.int64)
        table_end = np.zeros(size, np.int64)  # entry counts first, then the end of each slot's run
        if not _grid_pass(lo, hi, origin, cell, dims, large, shift, table_keys, table_end, no_ids):
            break
        shift -= 2
    table_start = np.empty(size, np.int64)
    running = 0
    for s in range(size):
        table_start[s] = running
        running += table_end[s]
        table_end[s] = table_start[s]  # fill cursor; ends at start + count
    ids = np.empty(total, np.int64)
    if total:  # serial fill: ids within a cell stay increasing (deterministic)
        _grid_pass(lo, hi, origin, cell, dims, large, shift, table_keys, table_end, ids)
    large_ids = np.flatnonzero(large).astype(np.int64)
    return table_keys, table_start, table_end, shift, ids, large_ids


# --------------------------------------------------------------------------------------------
# Pair tests and queries
# --------------------------------------------------------------------------------------------


@njit_kernel
def _pair_allowed(edge_edge, q, p, qa, qb, gqa, gqb, pa, pb, pc, gpa, gpb, gpc):
    """Whether query ``q`` and partner ``p`` make a pair, from their vertices ``qa, qb`` and ``pa, pb, pc`` and
    the vertices' groups ``g..`` (scalars: the query loop loads them, no array is handed over). Vertex-face
    (``qa`` the vertex): the vertex is not a corner of the face. Edge-edge (``pc`` repeats ``pb``): ``p > q``
    and no common endpoint. Either way not all four vertices static."""
    if edge_edge:
        if p <= q or qa == pa or qa == pb or qb == pa or qb == pb:
            return False
        return not (gqa == STATIC_GROUP and gqb == STATIC_GROUP and gpa == STATIC_GROUP and gpb == STATIC_GROUP)
    if qa == pa or qa == pb or qa == pc:
        return False
    return not (gqa == STATIC_GROUP and gpa == STATIC_GROUP and gpb == STATIC_GROUP and gpc == STATIC_GROUP)


@njit_kernel
def _sort_run(out, start, n):
    """Insertion sort of ``out[start : start + n]`` in place (a query's few partners; no slice view)."""
    for i in range(start + 1, start + n):
        value = out[i]
        j = i - 1
        while j >= start and out[j] > value:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = value


@njit_parallel
def _query_all(qlo, qhi, plo, phi, prims_p, group, edge_edge, grid, frame, which, base, room, out, counts):
    """The partners of the queries ``which``: query ``which[i]``'s are counted into ``counts[i]`` and, while they fit
    in ``room``, written sorted to ``out[base[i]:]`` (a run that did not fit is left unsorted: the caller runs that
    query again with room for all).

    ``edge_edge`` False: the queries are vertices and the partners faces; True: both are edges and only ``p > q``
    is reported. ``grid`` is the tuple of :func:`_bin`, ``frame`` = (origin, cell, dims). A query box spanning
    more than ``LARGE_SPAN`` cells tests every partner; else it visits the cells it touches and reports a pair
    only in the cell of the lower corner of the two boxes' intersection (no duplicates); the partners left out of
    the grid (large boxes) are tested by every query. The loop is written out on scalars: a helper taking the
    arrays would count their references per query and per cell, and two threads counting the same arrays' references
    fight over one cache line.
    """
    table_keys, table_start, table_end, shift, ids, large_ids = grid
    origin, cell, dims = frame
    ox, oy, oz = origin[0], origin[1], origin[2]
    nx, ny, nz = dims[0], dims[1], dims[2]
    mask = table_keys.shape[0] - 1
    partners = plo.shape[0]
    last = prims_p.shape[1] - 1  # a face's third vertex; an edge's second again
    count = which.shape[0]
    chunks = min(count, _CHUNKS)
    for c in prange(chunks):
        for k in range(c * count // chunks, (c + 1) * count // chunks):
            q = which[k]
            start = base[k]
            n = 0
            x_lo, y_lo, z_lo = qlo[q, 0], qlo[q, 1], qlo[q, 2]
            x_hi, y_hi, z_hi = qhi[q, 0], qhi[q, 1], qhi[q, 2]
            qa = prims_p[q, 0] if edge_edge else q
            qb = prims_p[q, 1] if edge_edge else q
            gqa, gqb = group[qa], group[qb]
            ix0, ix1 = _cell_index(x_lo, ox, cell, nx), _cell_index(x_hi, ox, cell, nx)
            iy0, iy1 = _cell_index(y_lo, oy, cell, ny), _cell_index(y_hi, oy, cell, ny)
            iz0, iz1 = _cell_index(z_lo, oz, cell, nz), _cell_index(z_hi, oz, cell, nz)
            if ix1 - ix0 >= LARGE_SPAN or iy1 - iy0 >= LARGE_SPAN or iz1 - iz0 >= LARGE_SPAN:
                for p in range(q + 1 if edge_edge else 0, partners):  # large query box: every partner
                    if (x_lo > phi[p, 0] or plo[p, 0] > x_hi or y_lo > phi[p, 1] or plo[p, 1] > y_hi
                            or z_lo > phi[p, 2] or plo[p, 2] > z_hi):  # fmt: skip
                        continue
                    pa, pb, pc = prims_p[p, 0], prims_p[p, 1], prims_p[p, last]
                    if _pair_allowed(edge_edge, q, p, qa, qb, gqa, gqb, pa, pb, pc, group[pa], group[pb], group[pc]):
                        if n < room:
                            out[start + n] = p
                        n += 1
            else:
                for ix in range(ix0, ix1 + 1):
                    for iy in range(iy0, iy1 + 1):
                        for iz in range(iz0, iz1 + 1):
                            key = (ix * ny + iy) * nz + iz
                            s = _hash_slot(key, shift)
                            while table_keys[s] != key and table_keys[s] != -1:
                                s = (s + 1) & mask
                            if table_keys[s] == -1:
                                continue  # empty cell
                            for i in range(table_start[s], table_end[s]):
                                p = ids[i]
                                if edge_edge and p <= q:
                                    continue  # the pair belongs to edge p's query
                                if (x_lo > phi[p, 0] or plo[p, 0] > x_hi or y_lo > phi[p, 1] or plo[p, 1] > y_hi
                                        or z_lo > phi[p, 2] or plo[p, 2] > z_hi):  # fmt: skip
                                    continue
                                if (
                                    _cell_index(max(x_lo, plo[p, 0]), ox, cell, nx) != ix
                                    or _cell_index(max(y_lo, plo[p, 1]), oy, cell, ny) != iy
                                    or _cell_index(max(z_lo, plo[p, 2]), oz, cell, nz) != iz
                                ):
                                    continue
                                pa, pb, pc = prims_p[p, 0], prims_p[p, 1], prims_p[p, last]
                                if _pair_allowed(
                                    edge_edge, q, p, qa, qb, gqa, gqb, pa, pb, pc, group[pa], group[pb], group[pc]
                                ):
                                    if n < room:
                                        out[start + n] = p
                                    n += 1
            for j in range(large_ids.shape[0]):  # large partner boxes are not in the grid
                p = large_ids[j]
                if (x_lo > phi[p, 0] or plo[p, 0] > x_hi or y_lo > phi[p, 1] or plo[p, 1] > y_hi
                        or z_lo > phi[p, 2] or plo[p, 2] > z_hi):  # fmt: skip
                    continue
                pa, pb, pc = prims_p[p, 0], prims_p[p, 1], prims_p[p, last]
                if _pair_allowed(edge_edge, q, p, qa, qb, gqa, gqb, pa, pb, pc, group[pa], group[pb], group[pc]):
                    if n < room:
                        out[start + n] = p
                    n += 1
            if n <= room:
                _sort_run(out, start, n)
            counts[k] = n


QUERY_ROOM = 8
"""Partners a query keeps in its first run; a query with more (rare on simulation meshes: about one partner per
query) runs again with room for all, so most queries run once instead of counting first and writing after."""


@njit_kernel
def _pairs(qlo, qhi, plo, phi, prims_p, group, edge_edge, frame):
    """(K, 2) int64 rows (query, partner) of all candidate pairs, sorted."""
    grid = _bin(plo, phi, frame[0], frame[1], frame[2])
    query_count = qlo.shape[0]
    every = np.arange(query_count)
    first = np.empty(query_count * QUERY_ROOM, np.int64)
    counts = np.empty(query_count, np.int64)
    _query_all(qlo, qhi, plo, phi, prims_p, group, edge_edge, grid, frame, every, every * QUERY_ROOM,
               np.int64(QUERY_ROOM), first, counts)  # fmt: skip
    offsets = np.zeros(query_count + 1, np.int64)
    for q in range(query_count):
        offsets[q + 1] = offsets[q] + counts[q]
    partner = np.empty(offsets[query_count], np.int64)
    again = np.flatnonzero(counts > QUERY_ROOM)
    if again.shape[0]:
        again_counts = np.empty(again.shape[0], np.int64)
        _query_all(qlo, qhi, plo, phi, prims_p, group, edge_edge, grid, frame, again, offsets[again],
                   np.int64(plo.shape[0] + 1), partner, again_counts)  # fmt: skip
    pairs = np.empty((partner.shape[0], 2), np.int64)
    for q in range(query_count):
        n = counts[q]
        for i in range(n):
            if n <= QUERY_ROOM:
                partner[offsets[q] + i] = first[q * QUERY_ROOM + i]
            pairs[offsets[q] + i, 0] = q
            pairs[offsets[q] + i, 1] = partner[offsets[q] + i]
    return pairs


@njit_kernel
def collision_candidates(x0, x1, faces, edges, vertex_group, inflation):
    """Vertex-face and edge-edge pairs whose swept AABBs, grown by ``inflation``, overlap.

    Args:
        x0, x1: (V, 3) vertex positions [m] at the start and end of the motion (``x1 = x0`` for a
            static proximity query).
        faces: (F, 3) int64 triangles; edges: (E, 2) int64 (e.g. :func:`build_edges`).
        vertex_group: (V,) int64; ``STATIC_GROUP`` (-1) marks static collider vertices. Pairs whose
            four vertices are all static are skipped; every other pair (self-contact included) is kept.
        inflation: [m] added on every side of each vertex box (e.g. the barrier's ``dhat``); pairs
            are found whenever their boxes are at most ``2 inflation`` apart.

    Returns:
        ``vf_pairs`` (K, 2) int64 rows (vertex, face) without the face's own corners, and ``ee_pairs``
        (L, 2) int64 rows (edge a, edge b) with ``a < b`` and no shared endpoint; both sorted
        lexicographically.
    """
    vertex_count = x0.shape[0]
    vlo = np.empty((vertex_count, 3))
    vhi = np.empty((vertex_count, 3))
    flo = np.empty((faces.shape[0], 3))
    fhi = np.empty((faces.shape[0], 3))
    elo = np.empty((edges.shape[0], 3))
    ehi = np.empty((edges.shape[0], 3))
    if vertex_count == 0 or edges.shape[0] == 0:
        return np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64)
    _vertex_boxes(x0, x1, inflation, vlo, vhi)
    _primitive_boxes(vlo, vhi, faces, flo, fhi)
    _primitive_boxes(vlo, vhi, edges, elo, ehi)

    origin = np.empty(3)
    dims = np.empty(3, np.int64)
    span = 0.0
    for k in range(3):
        origin[k] = vlo[:, k].min()
        span = max(span, vhi[:, k].max() - origin[k])
    mean_extent = 0.0
    for e in range(edges.shape[0]):
        mean_extent += max(ehi[e, 0] - elo[e, 0], max(ehi[e, 1] - elo[e, 1], ehi[e, 2] - elo[e, 2]))
    # at most ~2e6 cells per axis so that the int64 cell keys cannot overflow
    cell = max(mean_extent / edges.shape[0], 5e-7 * span, 1e-300)
    for k in range(3):
        dims[k] = np.int64(math.floor((vhi[:, k].max() - origin[k]) / cell)) + 1

    frame = (origin, cell, dims)
    vf_pairs = _pairs(vlo, vhi, flo, fhi, faces, vertex_group, np.bool_(False), frame)
    ee_pairs = _pairs(elo, ehi, elo, ehi, edges, vertex_group, np.bool_(True), frame)
    return vf_pairs, ee_pairs
