"""Additive CCD (core/ipc/ccd.py) against coplanarity-cubic brute force and ipctk, plus degenerate cases.

The brute-force reference finds the exact first contact time of linear trajectories: contact needs
the four points coplanar, i.e. a root of the cubic ``det(t)`` (Sec. 2.2.2-2.2.3, eq. 97); roots are
bracketed exactly (breakpoints at the cubic's critical points, so each piece is monotone, plus a
uniform grid) and bisected, then the point must lie inside the triangle (barycentric test) or the
edges' line-line closest points inside both segments (Eq.101).
"""

import math
import time

import numpy as np
import pytest
from contact_lab.core.ipc.ccd import (
    DEFAULT_RESCALING,
    MAX_ITERATIONS,
    _edge_edge_distance2,
    _point_triangle_distance2,
    additive_ccd,
    edge_edge_ccd,
    max_collision_free_step,
    point_triangle_ccd,
)
from contact_lab.core.jit import njit_kernel

N_TRAJECTORIES = 100_000
N_TIGHT_INCLUSION = 1_000  # ipctk's TightInclusionCCD costs ~4 ms per call on these trajectories
MARGIN = 1e-9  # inside the triangle / both segments by more than this: a robust contact
NEAR = 1e-6  # roots within this of the boundary are ambiguous (grazing)

ROBUST, AMBIGUOUS, CLEAR = 2, 1, 0
HIT, MISS, RANDOM = 0, 1, 2


# --------------------------------------------------------------------------------------------
# Brute-force reference
# --------------------------------------------------------------------------------------------


@njit_kernel
def _cross_dot(u, v, w):
    return (u[1] * v[2] - u[2] * v[1]) * w[0] + (u[2] * v[0] - u[0] * v[2]) * w[1] + (u[0] * v[1] - u[1] * v[0]) * w[2]


@njit_kernel
def _cubic(t, c):
    return ((c[3] * t + c[2]) * t + c[1]) * t + c[0]


@njit_kernel
def _coplanarity_roots(x0, x1, roots):
    """Roots in [0, 1] of ``det(t) = ((x1 - x0) x (x2 - x0)) . (x3 - x0)``, ascending; count returned (-1: det = 0)."""
    u0 = x0[1] - x0[0]
    v0 = x0[2] - x0[0]
    w0 = x0[3] - x0[0]
    du = (x1[1] - x1[0]) - u0
    dv = (x1[2] - x1[0]) - v0
    dw = (x1[3] - x1[0]) - w0
    c = np.empty(4)
    c[0] = _cross_dot(u0, v0, w0)
    c[1] = _cross_dot(du, v0, w0) + _cross_dot(u0, dv, w0) + _cross_dot(u0, v0, dw)
    c[2] = _cross_dot(du, dv, w0) + _cross_dot(du, v0, dw) + _cross_dot(u0, dv, dw)
    c[3] = _cross_dot(du, dv, dw)
    scale = 0.0
    for i in range(4):
        scale = max(scale, abs(c[i]))
    if scale == 0.0:
        return -1
    grid = 256
    breaks = np.empty(grid + 3)
    for i in range(grid + 1):
        breaks[i] = i / grid
    count = grid + 1
    # critical points 3 c3 t^2 + 2 c2 t + c1 = 0 split [0, 1] into monotone pieces (at most one root each)
    a, b, cc = 3.0 * c[3], 2.0 * c[2], c[1]
    if a != 0.0:
        disc = b * b - 4.0 * a * cc
        if disc >= 0.0:
            s = math.sqrt(disc)
            for r in ((-b - s) / (2.0 * a), (-b + s) / (2.0 * a)):
                if 0.0 < r < 1.0:
                    breaks[count] = r
                    count += 1
    elif b != 0.0 and 0.0 < -cc / b < 1.0:
        breaks[count] = -cc / b
        count += 1
    breaks[:count].sort()
    n = 0
    for i in range(count - 1):
        lo, hi = breaks[i], breaks[i + 1]
        flo, fhi = _cubic(lo, c), _cubic(hi, c)
        if flo == 0.0:
            if n == 0 or roots[n - 1] != lo:
                roots[n] = lo
                n += 1
        elif flo * fhi < 0.0:
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                if mid <= lo or mid >= hi:
                    break
                fm = _cubic(mid, c)
                if fm == 0.0:
                    lo = hi = mid
                    break
                if (fm < 0.0) == (flo < 0.0):
                    lo, flo = mid, fm
                else:
                    hi = mid
            roots[n] = 0.5 * (lo + hi)
            n += 1
    if _cubic(1.0, c) == 0.0 and (n == 0 or roots[n - 1] != 1.0):
        roots[n] = 1.0
        n += 1
    return n


@njit_kernel
def _inside_margin(x, edge_edge):
    """Signed margin of the coplanar contact: min barycentric (VF) or min segment parameter distance to 0/1 (EE).

    Returns -inf for degenerate configurations (sliver triangle, parallel edges) and for points
    farther than 1e-7 from the coplanar contact (numerically not a contact).
    """
    if edge_edge:
        u = x[1] - x[0]
        v = x[3] - x[2]
        w = x[0] - x[2]
        a, b, c = np.sum(u * u), np.sum(u * v), np.sum(v * v)
        den = a * c - b * b
        if den <= 1e-12 * a * c:
            return -np.inf
        d, e = np.sum(u * w), np.sum(v * w)
        s = (b * e - c * d) / den
        t = (a * e - b * d) / den
        gap = w + s * u - t * v
        if np.sum(gap * gap) > 1e-14:
            return -np.inf
        return min(min(s, 1.0 - s), min(t, 1.0 - t))
    ab = x[2] - x[1]
    ac = x[3] - x[1]
    ap = x[0] - x[1]
    d00, d01, d11 = np.sum(ab * ab), np.sum(ab * ac), np.sum(ac * ac)
    d20, d21 = np.sum(ap * ab), np.sum(ap * ac)
    den = d00 * d11 - d01 * d01
    if den <= 1e-12 * d00 * d11:
        return -np.inf
    v = (d11 * d20 - d01 * d21) / den
    w = (d00 * d21 - d01 * d20) / den
    gap = ap - v * ab - w * ac
    if np.sum(gap * gap) > 1e-14:
        return -np.inf
    return min(1.0 - v - w, min(v, w))


@njit_kernel
def reference_toi(X0, X1, edge_edge, toi, status):
    """First robust contact time per trajectory (inf if none) and its status ROBUST / AMBIGUOUS / CLEAR."""
    roots = np.empty(300)
    x = np.empty((4, 3))
    for n in range(X0.shape[0]):
        toi[n] = np.inf
        status[n] = CLEAR
        count = _coplanarity_roots(X0[n], X1[n], roots)
        if count < 0:
            status[n] = AMBIGUOUS  # coplanar for all t
            continue
        for r in range(count):
            t = roots[r]
            x[:, :] = X0[n] + t * (X1[n] - X0[n])
            margin = _inside_margin(x, edge_edge)
            if margin > MARGIN:
                toi[n] = t
                status[n] = ROBUST
                break
            if margin > -NEAR or margin == -np.inf:
                status[n] = AMBIGUOUS


@njit_kernel
def our_toi(X0, X1, edge_edge, min_distance, rescaling, toi):
    x0 = np.empty((4, 3))
    dx = np.empty((4, 3))
    work = np.empty((4, 3))
    for n in range(X0.shape[0]):
        x0[:, :] = X0[n]
        dx[:, :] = X1[n] - X0[n]
        toi[n] = additive_ccd(x0, dx, work, edge_edge, min_distance, 1.0, rescaling, np.int64(MAX_ITERATIONS))


# --------------------------------------------------------------------------------------------
# Random trajectories: 45 % hit by construction, 30 % near misses, 25 % random
# --------------------------------------------------------------------------------------------


def _unit(rng, n):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1)[:, None]


def vf_trajectories(rng, n):
    """(n, 4, 3) start and end positions (point, then the triangle's corners) and the kind (n,): HIT, MISS, RANDOM."""
    tri0 = rng.uniform(-1.0, 1.0, size=(n, 3, 3))
    tri1 = tri0 + 0.5 * rng.normal(size=(n, 3, 3))
    tc = rng.uniform(0.02, 1.0, size=n)
    bary = rng.dirichlet((1.0, 1.0, 1.0), size=n)
    kind = rng.choice(3, p=(0.45, 0.3, 0.25), size=n)
    # near misses: one barycentric coordinate slightly negative (passes the plane just outside an edge)
    miss = kind == MISS
    bary[miss, 0] = -rng.uniform(1e-3, 0.05, size=miss.sum())
    bary[miss, 1:] *= ((1.0 - bary[miss, 0]) / bary[miss, 1:].sum(axis=1))[:, None]
    tri_c = tri0 + tc[:, None, None] * (tri1 - tri0)
    hit = np.einsum("ni,nik->nk", bary, tri_c)
    dp = rng.normal(size=(n, 3)) * rng.uniform(0.5, 3.0, size=(n, 1))
    p0 = hit - tc[:, None] * dp
    p1 = p0 + dp
    rand = kind == RANDOM
    p0[rand] = rng.uniform(-1.5, 1.5, size=(rand.sum(), 3))
    p1[rand] = p0[rand] + rng.normal(size=(rand.sum(), 3))
    X0 = np.concatenate([p0[:, None], tri0], axis=1)
    X1 = np.concatenate([p1[:, None], tri1], axis=1)
    return np.ascontiguousarray(X0), np.ascontiguousarray(X1), kind


def ee_trajectories(rng, n):
    """(n, 4, 3) start and end positions (edge a's endpoints, then edge b's) and the kind (n,): HIT, MISS, RANDOM."""
    a0 = rng.uniform(-1.0, 1.0, size=(n, 2, 3))
    a1 = a0 + 0.5 * rng.normal(size=(n, 2, 3))
    tc = rng.uniform(0.02, 1.0, size=n)
    s = rng.uniform(0.0, 1.0, size=n)
    u = rng.uniform(0.0, 1.0, size=n)
    kind = rng.choice(3, p=(0.45, 0.3, 0.25), size=n)
    miss = kind == MISS
    s[miss] = 1.0 + rng.uniform(1e-3, 0.05, size=miss.sum())  # crosses the line of a just past its end
    a_c = a0 + tc[:, None, None] * (a1 - a0)
    q = a_c[:, 0] + s[:, None] * (a_c[:, 1] - a_c[:, 0])
    w = _unit(rng, n) * rng.uniform(0.3, 2.0, size=(n, 1))
    b_c = np.stack([q - u[:, None] * w, q + (1.0 - u)[:, None] * w], axis=1)
    db = rng.normal(size=(n, 2, 3)) * rng.uniform(0.5, 2.0, size=(n, 1, 1))
    b0 = b_c - tc[:, None, None] * db
    b1 = b0 + db
    rand = kind == RANDOM
    b0[rand] = rng.uniform(-1.5, 1.5, size=(rand.sum(), 2, 3))
    b1[rand] = b0[rand] + rng.normal(size=(rand.sum(), 2, 3))
    X0 = np.concatenate([a0, b0], axis=1)
    X1 = np.concatenate([a1, b1], axis=1)
    return np.ascontiguousarray(X0), np.ascontiguousarray(X1), kind


def _ipctk_hits(ccd, X0, X1, edge_edge):
    method = ccd.edge_edge_ccd if edge_edge else ccd.point_triangle_ccd
    return np.array([method(*a, *b)[0] for a, b in zip(X0, X1, strict=True)])


@pytest.mark.parametrize("edge_edge", [False, True], ids=["vertex_face", "edge_edge"])
def test_no_false_negatives_on_random_trajectories(edge_edge):
    """Report every robust contact of 100 000 trajectories no later than it happens, and every ipctk contact."""
    ipctk = pytest.importorskip("ipctk")
    rng = np.random.default_rng(20240 + edge_edge)
    X0, X1, kind = (ee_trajectories if edge_edge else vf_trajectories)(rng, N_TRAJECTORIES)
    n = X0.shape[0]
    ref, status = np.empty(n), np.empty(n, np.int64)
    reference_toi(X0, X1, edge_edge, ref, status)
    ours = np.empty(n)
    start = time.perf_counter()
    our_toi(X0, X1, edge_edge, 0.0, DEFAULT_RESCALING, ours)
    seconds = time.perf_counter() - start

    robust = status == ROBUST
    clear = status == CLEAR
    hit = ours <= 1.0
    late = robust & ~(ours <= ref)
    assert robust.mean() >= 0.3, robust.mean()
    assert clear.mean() >= 0.2, clear.mean()
    assert np.all((ours >= 0.0) & ((ours <= 1.0) | (ours == np.inf)))
    ratio = ours[robust] / ref[robust]
    print(
        f"\n{'EE' if edge_edge else 'VF'}: {n} trajectories in {seconds:.2f} s, robust contacts {robust.sum()}, "
        f"false negatives {late.sum()}/{robust.sum()}, toi/true toi median {np.median(ratio):.3f} "
        f"(min {ratio.min():.3g}, 5 % {np.quantile(ratio, 0.05):.3f})"
    )
    for name, group in (("all", clear), ("random", clear & (kind == RANDOM)), ("near-miss", clear & (kind == MISS))):
        print(f"   false positives ({name}, reference-clear): {(hit & group).sum()}/{group.sum()}", end="")
        print(f" = {100 * (hit & group).sum() / group.sum():.2f} %")
    assert not late.any(), np.flatnonzero(late)[:10]
    assert np.all(ours[robust] < 1.0)

    # ipctk additive CCD (same algorithm family, fast): every contact it reports we report as well,
    # except its own false positives where the exact reference is clear
    additive = _ipctk_hits(ipctk.AdditiveCCD(), X0, X1, edge_edge)
    missed = additive & ~hit & ~clear
    print(
        f"   ipctk AdditiveCCD: {additive.sum()} hits, ours {hit.sum()}, "
        f"theirs-only {(additive & ~hit).sum()} (all reference-clear), ours-only {(hit & ~additive).sum()}"
    )
    assert not missed.any(), np.flatnonzero(missed)[:10]
    # ipctk Tight-Inclusion (an independent, interval-based CCD) on a subset: strict containment
    sub = slice(0, N_TIGHT_INCLUSION)
    tight = _ipctk_hits(ipctk.TightInclusionCCD(), X0[sub], X1[sub], edge_edge)
    only = np.flatnonzero(tight & ~hit[sub])
    # Tight-Inclusion's own false positives: grazing misses; their exact minimum distance is positive
    distance2 = ipctk.edge_edge_distance if edge_edge else ipctk.point_triangle_distance
    gaps = [min(distance2(*(X0[i] + t * (X1[i] - X0[i]))) for t in np.linspace(0, 1, 2001)) ** 0.5 for i in only]
    print(
        f"   ipctk TightInclusionCCD on {N_TIGHT_INCLUSION}: {tight.sum()} hits, ours {hit[sub].sum()}, "
        f"theirs-only {len(only)} (closest approach {np.round(gaps, 7).tolist()}, all reference-clear)"
    )
    assert np.all(status[only] == CLEAR) and np.all(np.array(gaps) > 1e-6), only
    assert np.all(tight[robust[sub]])  # the reference's robust contacts are real contacts


@pytest.mark.parametrize("edge_edge", [False, True], ids=["vertex_face", "edge_edge"])
def test_min_distance_kept_up_to_toi(edge_edge):
    """Keep the ipctk-measured distance above min_distance on [0, toi] for 1000 trajectories."""
    ipctk = pytest.importorskip("ipctk")
    rng = np.random.default_rng(7 + edge_edge)
    X0, X1, _ = (ee_trajectories if edge_edge else vf_trajectories)(rng, 1000)
    xi = 0.05
    toi = np.empty(len(X0))
    our_toi(X0, X1, edge_edge, xi, DEFAULT_RESCALING, toi)
    distance2 = ipctk.edge_edge_distance if edge_edge else ipctk.point_triangle_distance
    for n in range(len(X0)):
        end = min(toi[n], 1.0)
        for t in np.linspace(0.0, end, 41)[1:] if end > 0 else ():
            x = X0[n] + t * (X1[n] - X0[n])
            assert distance2(*x) > xi * xi, (n, t, toi[n])
        if toi[n] == 0.0:
            assert distance2(*X0[n]) <= xi * xi * (1 + 1e-12)


@pytest.mark.parametrize("edge_edge", [False, True], ids=["vertex_face", "edge_edge"])
def test_private_distances_match_ipctk(edge_edge):
    """Agree with ipctk's squared distances on random and nearly degenerate configurations."""
    ipctk = pytest.importorskip("ipctk")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 4, 3))
    X[1000:2000, 1] = X[1000:2000, 0] + 1e-7 * rng.normal(size=(1000, 3))  # tiny edge / sliver
    X[2000:, 3] = X[2000:, 2] + (X[2000:, 1] - X[2000:, 0]) * rng.uniform(0.1, 2, (1000, 1))  # parallel edges
    X[2000:, 3] += 1e-9 * rng.normal(size=(1000, 3))
    ours = _edge_edge_distance2 if edge_edge else _point_triangle_distance2
    theirs = ipctk.edge_edge_distance if edge_edge else ipctk.point_triangle_distance
    for x in X:
        assert ours(x) == pytest.approx(theirs(*x), rel=1e-6, abs=1e-12)


# --------------------------------------------------------------------------------------------
# Degenerate and analytic cases
# --------------------------------------------------------------------------------------------

A = np.array
TRI = (A([0.0, 0.0, 0.0]), A([1.0, 0.0, 0.0]), A([0.0, 1.0, 0.0]))


def pt(p0, p1, tri0=TRI, tri1=TRI, **kw):
    return point_triangle_ccd(A(p0, float), *tri0, A(p1, float), *tri1, **kw)


def test_head_on_toi_is_rescaled_true_toi():
    """Return eta times the exact TOI for a point falling straight onto the face (with and without min_distance)."""
    assert pt([0.25, 0.25, 1.0], [0.25, 0.25, -1.0]) == pytest.approx(0.9 * 0.5)
    assert pt([0.25, 0.25, 1.0], [0.25, 0.25, -1.0], rescaling=0.5) == pytest.approx(0.25)
    # min_distance 0.2: the 0.2-shell is reached at t = 0.4
    toi = pt([0.25, 0.25, 1.0], [0.25, 0.25, -1.0], min_distance=0.2)
    assert 0.3 <= toi <= 0.4


def test_already_touching_and_starting_on_an_edge_give_zero():
    """Return 0 when the pair starts within min_distance or exactly on an edge."""
    assert pt([0.25, 0.25, 0.01], [0.25, 0.25, 0.5], min_distance=0.02) == 0.0
    assert pt([0.5, 0.0, 0.0], [0.5, -1.0, 0.0]) == 0.0  # on edge (0,0,0)-(1,0,0), moving away
    assert edge_edge_ccd(*(A([0, 0, 0.0]), A([1, 0, 0.0]), A([0.5, -1, 0.0]), A([0.5, 1, 0.0])) * 2) == 0.0


def test_zero_or_rigid_motion_never_collides():
    """Return inf without motion, and for a common translation of all four points."""
    p = [0.25, 0.25, 0.001]
    assert pt(p, p) == np.inf
    shift = A([3.0, -2.0, 5.0])
    tri1 = tuple(v + shift for v in TRI)
    assert pt(p, A(p) + shift, TRI, tri1) == np.inf
    e = (A([0, 0, 0.0]), A([1, 0, 0.0]), A([0.5, -1, 1e-3]), A([0.5, 1, 1e-3]))
    assert edge_edge_ccd(*e, *(v + shift for v in e)) == np.inf


def test_point_sliding_in_plane_onto_an_edge():
    """Catch a point moving inside the triangle's plane into its hypotenuse edge (true TOI 0.5)."""
    # from (1, 1, 0) towards (0, 0, 0): meets x + y = 1 at (0.5, 0.5), t = 0.5
    toi = pt([1.0, 1.0, 0.0], [0.0, 0.0, 0.0])
    assert 0.0 < toi <= 0.5
    assert toi >= 0.4
    # the same motion 1 mm above the plane passes over the face at distance 1e-3 < 0.1 d_0: reported
    assert pt([1.0, 1.0, 1e-3], [0.0, 0.0, 1e-3]) <= 0.5
    # parallel to the edge at 0.1 (> 0.1 d_0 = 0.07): a near miss, no contact
    assert pt([1.0, 0.1, -0.1], [-1.0, 0.1, -0.1]) == np.inf


def test_only_the_triangle_moves():
    """Catch a triangle sweeping through a static point (true TOI 0.6)."""
    tri0 = tuple(v + A([0.0, 0.0, -0.6]) for v in TRI)
    tri1 = tuple(v + A([0.0, 0.0, 0.4]) for v in TRI)
    toi = pt([0.2, 0.3, 0.0], [0.2, 0.3, 0.0], tri0, tri1)
    assert 0.5 <= toi <= 0.6


def test_huge_velocity_against_a_small_triangle():
    """Catch a point at 50 m/s over h = 1/60 s against a 1 cm triangle (no tunnelling)."""
    tri = tuple(0.01 * v for v in TRI)
    h = 1.0 / 60.0
    p0 = A([0.003, 0.003, 0.4])
    p1 = p0 + A([0.0, 0.0, -50.0 * h])
    true = 0.4 / (50.0 * h)
    toi = pt(p0, p1, tri, tri)
    assert 0.8 * true <= toi <= true
    # edge crossing at the same speed
    e0 = (A([0.0, 0.0, 0.0]), A([0.01, 0.0, 0.0]), A([0.005, -0.005, 0.4]), A([0.005, 0.005, 0.4]))
    e1 = e0[:2] + tuple(v + A([0.0, 0.0, -50.0 * h]) for v in e0[2:])
    assert 0.8 * true <= edge_edge_ccd(*e0, *e1) <= true


def test_parallel_edges():
    """Catch collinear edges sliding into each other; let side-by-side parallel edges slide past."""
    a = (A([0.0, 0.0, 0.0]), A([1.0, 0.0, 0.0]))
    b0 = (A([2.0, 0.0, 0.0]), A([3.0, 0.0, 0.0]))
    b1 = tuple(v - A([1.5, 0.0, 0.0]) for v in b0)
    toi = edge_edge_ccd(*a, *b0, *a, *b1)
    assert 0.9 * 2.0 / 3.0 - 1e-12 <= toi <= 2.0 / 3.0
    # parallel at 1 cm, min_distance 2 cm: contact when the x-gap reaches sqrt(0.02^2 - 0.01^2)
    b0 = tuple(v + A([0.0, 0.01, 0.0]) for v in b0)
    b1 = tuple(v + A([0.0, 0.01, 0.0]) for v in b1)
    true = (1.0 - math.sqrt(0.02**2 - 0.01**2)) / 1.5
    assert 0.5 * true <= edge_edge_ccd(*a, *b0, *a, *b1, min_distance=0.02) <= true
    # overlapping parallel edges 1 cm apart sliding along each other: the distance never changes
    b0 = (A([0.2, 0.01, 0.0]), A([1.2, 0.01, 0.0]))
    b1 = tuple(v + A([0.5, 0.0, 0.0]) for v in b0)
    assert edge_edge_ccd(*a, *b0, *a, *b1) == np.inf


def test_iteration_cap_is_conservative():
    """Return a verified time (<= the true TOI) when the step cap is hit, never inf."""
    x0 = np.stack([A([1.0, 1.0, 1e-4]), *TRI])
    dx = np.zeros((4, 3))
    dx[0] = [-1.2, -1.2, -2e-4]  # grazes along the face, reaches the plane at t = 0.5
    full = additive_ccd(x0, dx, np.empty((4, 3)), False, 0.0, 1.0, 0.9, MAX_ITERATIONS)
    capped = additive_ccd(x0, dx, np.empty((4, 3)), False, 0.0, 1.0, 0.9, 3)
    assert 0.0 <= capped <= full <= 0.5


def _box_mesh(center, size):
    corners = np.array([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)], float) - 0.5
    faces = [
        (0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
        (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3),
    ]  # fmt: skip
    return center + size * corners, np.array(faces, np.int64)


def test_max_collision_free_step_matches_pairwise_minimum():
    """Equal the minimum of the per-pair TOIs over all vertex-face and edge-edge pairs of two boxes."""
    rng = np.random.default_rng(11)
    va, fa = _box_mesh(np.zeros(3), 1.0)
    vb, fb = _box_mesh(np.array([0.3, -0.2, 1.6]), 0.8)
    x0 = np.concatenate([va, vb])
    faces = np.concatenate([fa, fb + 8])
    edges = np.unique(np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1), axis=0)
    step = np.zeros_like(x0)
    step[8:] = [0.1, 0.2, -1.5]
    x1 = x0 + step + 0.05 * rng.normal(size=x0.shape)
    vf = np.array([(v, f) for v in range(16) for f in range(24) if v not in faces[f]], np.int64)
    ee = np.array(
        [(a, b) for a in range(len(edges)) for b in range(a + 1, len(edges)) if not set(edges[a]) & set(edges[b])],
        np.int64,
    )
    expected = 1.0
    for v, f in vf:
        expected = min(expected, point_triangle_ccd(x0[v], *x0[faces[f]], x1[v], *x1[faces[f]]))
    for a, b in ee:
        ea, eb = edges[a], edges[b]
        expected = min(expected, edge_edge_ccd(*x0[ea], *x0[eb], *x1[ea], *x1[eb]))
    alpha = max_collision_free_step(x0, x1, faces, edges, vf, ee, 0.0, DEFAULT_RESCALING)
    assert 0.0 < expected < 1.0
    assert alpha == expected
    # the boxes are 0.6 apart along z before the step, the closing speed is at most ~1.5 + noise
    assert alpha <= 0.6 / 1.2
    assert max_collision_free_step(x0, x0 + 1e-3, faces, edges, vf, ee, 0.0, DEFAULT_RESCALING) == 1.0
    empty = np.zeros((0, 2), np.int64)
    assert max_collision_free_step(x0, x1, faces, edges, empty, empty, 0.0, DEFAULT_RESCALING) == 1.0
