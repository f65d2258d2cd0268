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

Queries run in parallel in two passes (count, then write into each query's own slice), and each
query's partners are sorted, so the output is sorted lexicographically and deterministic.
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
def _cell_range(lo, hi, p, origin, cell, dims, out):
    """Cell coordinates ``out[0, k] .. out[1, k]`` touched by box ``p``; True when it is a large box."""
    large = False
    for k in range(3):
        out[0, k] = _cell_index(lo[p, k], origin[k], cell, dims[k])
        out[1, k] = _cell_index(hi[p, k], origin[k], cell, dims[k])
        if out[1, k] - out[0, k] >= LARGE_SPAN:
            large = True
    return large


@njit_kernel
def _cell_key(ix, iy, iz, dims):
    return (ix * dims[1] + iy) * dims[2] + iz


@njit_kernel
def _range_cell_count(r):
    """Number of cells in the range ``r[0, k] .. r[1, k]`` (2, 3) of :func:`_cell_range`."""
    return (r[1, 0] - r[0, 0] + 1) * (r[1, 1] - r[0, 1] + 1) * (r[1, 2] - r[0, 2] + 1)


@njit_kernel
def _range_cell_key(r, q, dims):
    """Key of cell ``q`` of the range ``r`` (2, 3), enumerated x slowest and z fastest (nested-loop order)."""
    nz = r[1, 2] - r[0, 2] + 1
    ny = r[1, 1] - r[0, 1] + 1
    iz = r[0, 2] + q % nz
    iy = r[0, 1] + (q // nz) % ny
    ix = r[0, 0] + q // (nz * ny)
    return _cell_key(ix, iy, iz, dims)


@njit_kernel
def _slot(table_keys, key, shift):
    """Slot of ``key`` in the open-addressing table of size ``2^(64 - shift)``, or the free slot for it.

    Fibonacci hashing (the top bits of ``key * 2^64 / phi``) spreads the structured cell keys; linear
    probing keeps a lookup within one or two cache lines.
    """
    i = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(shift))
    mask = table_keys.shape[0] - 1
    while table_keys[i] != key and table_keys[i] != -1:
        i = (i + 1) & mask
    return i


@njit_parallel
def _cell_counts(lo, hi, origin, cell, dims, counts, large):
    count = lo.shape[0]
    chunks = min(count, _CHUNKS)
    for c in prange(chunks):
        r = np.empty((2, 3), np.int64)
        for p in range(c * count // chunks, (c + 1) * count // chunks):
            large[p] = _cell_range(lo, hi, p, origin, cell, dims, r)
            counts[p] = 0 if large[p] else _range_cell_count(r)


@njit_kernel
def _count_cells(lo, hi, origin, cell, dims, counts, large, shift, r):
    """Hash the cells of the binned boxes into a table of size ``2^(64 - shift)``.

    Returns ``(table_keys, table_end, full)``: the cell key of each slot (-1: empty) and its entry count;
    ``full`` when the load would pass 1/2 (the caller grows the table and starts again). ``r``: (2, 3) scratch.
    """
    size = 2 ** (64 - shift)
    table_keys = np.full(size, -1, np.int64)
    table_end = np.zeros(size, np.int64)  # entry counts first, then the end of each slot's run
    distinct = 0
    for p in range(lo.shape[0]):
        if large[p]:
            continue
        _cell_range(lo, hi, p, origin, cell, dims, r)
        for q in range(counts[p]):
            # check the load before every insertion: one large box can fill a small table,
            # and probing a full table would never end
            if 2 * distinct >= size:
                return table_keys, table_end, True
            key = _range_cell_key(r, q, dims)
            s = _slot(table_keys, key, shift)
            if table_keys[s] == -1:
                table_keys[s] = key
                distinct += 1
            table_end[s] += 1
    return table_keys, table_end, False


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
    r = np.empty((2, 3), np.int64)
    while True:
        table_keys, table_end, full = _count_cells(lo, hi, origin, cell, dims, counts, large, shift, r)
        if not full:
            break
        shift -= 2
    size = table_keys.shape[0]
    table_start = np.empty(size, np.int64)
    running = 0
    for s in range(size):
        table_start[s] = running
        running += table_end[s]
        table_end[s] = table_start[s]  # fill cursor; ends at start + count
    ids = np.empty(total, np.int64)
    for p in range(count):  # serial fill: ids within a cell stay increasing (deterministic)
        if large[p]:
            continue
        _cell_range(lo, hi, p, origin, cell, dims, r)
        for q in range(counts[p]):
            s = _slot(table_keys, _range_cell_key(r, q, dims), shift)
            e = table_end[s]
            table_end[s] += 1
            ids[e] = p
    large_ids = np.flatnonzero(large).astype(np.int64)
    return table_keys, table_start, table_end, shift, ids, large_ids


# --------------------------------------------------------------------------------------------
# Pair tests and queries
# --------------------------------------------------------------------------------------------


@njit_kernel
def _overlap(alo, ahi, a, blo, bhi, b):
    for k in range(3):
        if alo[a, k] > bhi[b, k] or blo[b, k] > ahi[a, k]:
            return False
    return True


@njit_kernel
def _vf_allowed(v, f, faces, group):
    """Vertex not a corner of the face, and not all four vertices static."""
    a = faces[f, 0]
    b = faces[f, 1]
    c = faces[f, 2]
    if v == a or v == b or v == c:
        return False
    return not (
        group[v] == STATIC_GROUP and group[a] == STATIC_GROUP and group[b] == STATIC_GROUP and group[c] == STATIC_GROUP
    )


@njit_kernel
def _ee_allowed(ea, eb, edges, group):
    """Edges without a common endpoint, and not all four vertices static."""
    a0 = edges[ea, 0]
    a1 = edges[ea, 1]
    b0 = edges[eb, 0]
    b1 = edges[eb, 1]
    if a0 == b0 or a0 == b1 or a1 == b0 or a1 == b1:
        return False
    return not (
        group[a0] == STATIC_GROUP
        and group[a1] == STATIC_GROUP
        and group[b0] == STATIC_GROUP
        and group[b1] == STATIC_GROUP
    )


@njit_kernel
def _allowed(q, p, prims_p, group, edge_edge):
    if edge_edge:
        return p > q and _ee_allowed(q, p, prims_p, group)
    return _vf_allowed(q, p, prims_p, group)


@njit_kernel
def _query(q, qlo, qhi, plo, phi, prims_p, group, edge_edge, grid, frame, r, out, start):
    """Partners ``p`` of query primitive ``q``; writes them to ``out[start:]`` when ``out`` is not empty.

    ``edge_edge`` False: q is a vertex, p a face; True: q and p are edges, only ``p > q`` is reported.
    ``grid`` is the tuple of :func:`_bin`; ``frame`` = (origin, cell, dims).
    Returns the partner count.
    """
    table_keys, table_start, table_end, shift, ids, large_ids = grid
    origin, cell, dims = frame
    write = out.shape[0] > 0
    n = 0
    if _cell_range(qlo, qhi, q, origin, cell, dims, r):
        for p in range(q + 1 if edge_edge else 0, plo.shape[0]):  # large query box: every primitive
            if _overlap(qlo, qhi, q, plo, phi, p) and _allowed(q, p, prims_p, group, edge_edge):
                if write:
                    out[start + n] = p
                n += 1
        return n
    # hot loop on scalars, inline (calls taking many arrays pay reference counting per call)
    x_lo, y_lo, z_lo = qlo[q, 0], qlo[q, 1], qlo[q, 2]
    x_hi, y_hi, z_hi = qhi[q, 0], qhi[q, 1], qhi[q, 2]
    for ix in range(r[0, 0], r[1, 0] + 1):
        for iy in range(r[0, 1], r[1, 1] + 1):
            for iz in range(r[0, 2], r[1, 2] + 1):
                key = _cell_key(ix, iy, iz, dims)
                s = _slot(table_keys, key, shift)
                if table_keys[s] == -1:
                    continue  # empty cell
                for i in range(table_start[s], table_end[s]):
                    p = ids[i]
                    if edge_edge and p <= q:
                        continue  # the pair belongs to edge p's query
                    if (
                        x_lo > phi[p, 0]
                        or plo[p, 0] > x_hi
                        or y_lo > phi[p, 1]
                        or plo[p, 1] > y_hi
                        or z_lo > phi[p, 2]
                        or plo[p, 2] > z_hi
                    ):
                        continue
                    # report the pair only in the cell of the lower corner of the boxes' intersection
                    if (
                        _cell_index(max(x_lo, plo[p, 0]), origin[0], cell, dims[0]) != ix
                        or _cell_index(max(y_lo, plo[p, 1]), origin[1], cell, dims[1]) != iy
                        or _cell_index(max(z_lo, plo[p, 2]), origin[2], cell, dims[2]) != iz
                    ):
                        continue
                    if _allowed(q, p, prims_p, group, edge_edge):
                        if write:
                            out[start + n] = p
                        n += 1
    for j in range(large_ids.shape[0]):  # large partner boxes are not in the grid
        p = large_ids[j]
        if _overlap(qlo, qhi, q, plo, phi, p) and _allowed(q, p, prims_p, group, edge_edge):
            if write:
                out[start + n] = p
            n += 1
    return n


@njit_parallel
def _query_all(qlo, qhi, plo, phi, prims_p, group, edge_edge, grid, frame, offsets, out):
    """Count every query's partners into ``offsets[q + 1]`` (``out`` empty), or write them sorted to ``out``."""
    write = out.shape[0] > 0
    count = qlo.shape[0]
    chunks = min(count, _CHUNKS)
    for c in prange(chunks):
        r = np.empty((2, 3), np.int64)
        for q in range(c * count // chunks, (c + 1) * count // chunks):
            start = offsets[q] if write else 0
            n = _query(q, qlo, qhi, plo, phi, prims_p, group, edge_edge, grid, frame, r, out, start)
            if write:
                out[start : start + n].sort()
            else:
                offsets[q + 1] = n


@njit_kernel
def _pairs(qlo, qhi, plo, phi, prims_p, group, edge_edge, frame):
    """(K, 2) int64 rows (query, partner) of all candidate pairs, sorted."""
    grid = _bin(plo, phi, frame[0], frame[1], frame[2])
    query_count = qlo.shape[0]
    offsets = np.zeros(query_count + 1, np.int64)
    _query_all(qlo, qhi, plo, phi, prims_p, group, edge_edge, grid, frame, offsets, np.empty(0, np.int64))
    for q in range(query_count):
        offsets[q + 1] += offsets[q]
    partner = np.empty(offsets[query_count], np.int64)
    _query_all(qlo, qhi, plo, phi, prims_p, group, edge_edge, grid, frame, offsets, partner)
    pairs = np.empty((partner.shape[0], 2), np.int64)
    for q in range(query_count):
        for i in range(offsets[q], offsets[q + 1]):
            pairs[i, 0] = q
            pairs[i, 1] = partner[i]
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
