"""Exact signs of orient3d and orient2d for the intersection checker: float filter, expansions, rationals.

One job: decide the sign of

    orient3d(a, b, c, d) = det[b - a; c - a; d - a]   (> 0: d on the side of (b - a) x (c - a)),
    orient2d_k(a, b, c)  = ((b - a) x (c - a))_k     (the triangle projected along axis k),

exactly, for points given as rows of a (N, 3) float64 array ``P`` [m] and indices into it (the result is
+1, 0, -1 or ``UNCERTAIN``; units do not matter, only signs). Like its only user ``intersection``, this
module shares no code with the IPC distance, CCD or broad-phase modules on purpose. Three stages:

1. *Float filter* (Shewchuk 1997, "Adaptive precision floating-point arithmetic and fast
   robust geometric predicates", static error bound of the difference form): with the
   permanent ``P`` (the same expression with absolute values), the sign is certain if
   ``|det| > 16 eps P + 1e-290`` (``eps = 2^-53``; a first-order bound is ``8 eps P``; the
   absolute term covers gradual underflow). ``P == 0`` certifies an exact zero (every monomial
   has an exactly zero difference factor), e.g. an axis-aligned flat face.
2. *Exact expansion arithmetic in the kernel*: the determinant written as a sum of monomials of
   the raw coordinates (24 of degree 3, resp. 6 of degree 2), each monomial an exact
   4-term (2-term) product by error-free transformations (Dekker's split product, Knuth's
   two-sum), accumulated into a non-overlapping expansion (scratch ``e`` of length
   ``EXPANSION_CAPACITY``) whose largest component carries the exact sign. Exact when every
   nonzero coordinate lies in ``[2^-250, 2^250]`` (no underflow of partial products, no
   overflow). Needed in bulk: flat regions of a rest frame make thousands of predicates exactly
   or nearly zero, far too many for rationals.
3. *Rational fallback in plain Python*: outside that range the kernels return ``UNCERTAIN`` and
   the caller re-decides the whole pair (or tet) with :class:`_RationalPoints`, the same
   predicates in ``fractions.Fraction`` (floats convert exactly).

The underscore names (``_o3``, ``_o3_filter``, ``_o2``, ``_o2_filter``, ``_RationalPoints``) are internal
to the checker: ``intersection`` imports them and they stay reachable there.
"""

from fractions import Fraction

import numpy as np

from ..jit import njit_kernel

UNCERTAIN = 2
"""Predicate / pair status: the kernel could not decide exactly (coordinates out of range)."""

_EPS = 2.0**-53
_O3_FILTER = 16.0 * _EPS
_O2_FILTER = 8.0 * _EPS
_ABS_SLACK = 1.0e-290
_TINY_DIFF = 2.0**-300
_SAFE_LO = 2.0**-250
_SAFE_HI = 2.0**250
_SPLITTER = 134217729.0  # 2^27 + 1: Dekker's split into two 26-bit halves
EXPANSION_CAPACITY = 128
"""Scratch length for one exact determinant (24 monomials x 4 components = 96 at most)."""

# --------------------------------------------------------------------------------------------
# Error-free transformations and expansion arithmetic
# --------------------------------------------------------------------------------------------


@njit_kernel
def _two_sum(a, b):
    """``a + b = s + err`` exactly (Knuth), any magnitudes."""
    s = a + b
    b_virtual = s - a
    a_virtual = s - b_virtual
    return s, (a - a_virtual) + (b - b_virtual)


@njit_kernel
def _split(a):
    """``a = hi + lo`` with both halves of at most 26 significant bits (Dekker)."""
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


@njit_kernel
def _two_product(a, b):
    """``a * b = p + err`` exactly (Dekker), barring underflow and overflow."""
    p = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    err = ((p - a_hi * b_hi) - a_lo * b_hi) - a_hi * b_lo
    return p, a_lo * b_lo - err


@njit_kernel
def _grow(e, n, b):
    """Add the double ``b`` to the non-overlapping expansion ``e[:n]`` in place; new length.

    Components stay sorted by increasing magnitude with zeros removed, so the last one carries
    the sign of the exact sum.
    """
    q = b
    m = 0
    for i in range(n):
        q, h = _two_sum(q, e[i])
        if h != 0.0:
            e[m] = h
            m += 1
    if q != 0.0:
        e[m] = q
        m += 1
    return m


@njit_kernel
def _add_monomial3(e, n, x, y, z):
    """``e += x y z`` exactly (four product components)."""
    if x == 0.0 or y == 0.0 or z == 0.0:
        return n
    p, p_err = _two_product(x, y)
    q, q_err = _two_product(p, z)
    r, r_err = _two_product(p_err, z)
    n = _grow(e, n, q_err)
    n = _grow(e, n, r_err)
    n = _grow(e, n, r)
    return _grow(e, n, q)


@njit_kernel
def _add_det3(e, n, sign, P, i, j, k):
    """``e += sign * det[P_i; P_j; P_k]`` exactly (six monomials)."""
    xi, yi, zi = sign * P[i, 0], sign * P[i, 1], sign * P[i, 2]
    n = _add_monomial3(e, n, xi, P[j, 1], P[k, 2])
    n = _add_monomial3(e, n, -xi, P[j, 2], P[k, 1])
    n = _add_monomial3(e, n, -yi, P[j, 0], P[k, 2])
    n = _add_monomial3(e, n, yi, P[j, 2], P[k, 0])
    n = _add_monomial3(e, n, zi, P[j, 0], P[k, 1])
    return _add_monomial3(e, n, -zi, P[j, 1], P[k, 0])


@njit_kernel
def _add_monomial2(e, n, x, y):
    """``e += x y`` exactly (two product components)."""
    if x == 0.0 or y == 0.0:
        return n
    p, p_err = _two_product(x, y)
    n = _grow(e, n, p_err)
    return _grow(e, n, p)


@njit_kernel
def _expansion_sign(e, n):
    if n == 0:
        return 0
    return 1 if e[n - 1] > 0.0 else -1


@njit_kernel
def _in_exact_range(P, i):
    """All coordinates of point ``i`` are zero or in ``[2^-250, 2^250]``: monomials stay exact."""
    for c in range(3):
        m = abs(P[i, c])
        if m != 0.0 and (m < _SAFE_LO or m > _SAFE_HI):
            return False
    return True


# --------------------------------------------------------------------------------------------
# Orientation predicates
# --------------------------------------------------------------------------------------------


@njit_kernel
def _o3_filter(P, a, b, c, d):
    """Sign of ``orient3d(P_a, P_b, P_c, P_d)`` if the float filter certifies it, else UNCERTAIN."""
    bx, by, bz = P[b, 0] - P[a, 0], P[b, 1] - P[a, 1], P[b, 2] - P[a, 2]
    cx, cy, cz = P[c, 0] - P[a, 0], P[c, 1] - P[a, 1], P[c, 2] - P[a, 2]
    dx, dy, dz = P[d, 0] - P[a, 0], P[d, 1] - P[a, 1], P[d, 2] - P[a, 2]
    m1, m2 = cy * dz, cz * dy
    m3, m4 = cz * dx, cx * dz
    m5, m6 = cx * dy, cy * dx
    det = bx * (m1 - m2) + by * (m3 - m4) + bz * (m5 - m6)
    perm = abs(bx) * (abs(m1) + abs(m2)) + abs(by) * (abs(m3) + abs(m4)) + abs(bz) * (abs(m5) + abs(m6))
    bound = _O3_FILTER * perm + _ABS_SLACK
    if det > bound:
        return 1
    if det < -bound:
        return -1
    if perm == 0.0:
        # Every monomial has a factor that is an exactly zero difference -- unless a product of
        # tiny differences underflowed to zero.
        for v in (bx, by, bz, cx, cy, cz, dx, dy, dz):
            if v != 0.0 and abs(v) < _TINY_DIFF:
                return UNCERTAIN
        return 0
    return UNCERTAIN


@njit_kernel
def _o3(P, a, b, c, d, e):
    """Exact sign of ``orient3d`` (filter, then expansions in scratch ``e``); UNCERTAIN out of range."""
    s = _o3_filter(P, a, b, c, d)
    if s != UNCERTAIN:
        return s
    if not (_in_exact_range(P, a) and _in_exact_range(P, b) and _in_exact_range(P, c) and _in_exact_range(P, d)):
        return UNCERTAIN
    # det[[1, a], [1, b], [1, c], [1, d]] expanded along the column of ones.
    n = _add_det3(e, np.int64(0), 1.0, P, b, c, d)
    n = _add_det3(e, n, -1.0, P, a, c, d)
    n = _add_det3(e, n, 1.0, P, a, b, d)
    n = _add_det3(e, n, -1.0, P, a, b, c)
    return _expansion_sign(e, n)


@njit_kernel
def _o2_filter(P, k, a, b, c):
    """Filtered sign of ``orient2d`` of the points projected along axis ``k``, or UNCERTAIN."""
    u = (k + 1) % 3
    w = (k + 2) % 3
    bu, bw = P[b, u] - P[a, u], P[b, w] - P[a, w]
    cu, cw = P[c, u] - P[a, u], P[c, w] - P[a, w]
    m1, m2 = bu * cw, bw * cu
    det = m1 - m2
    perm = abs(m1) + abs(m2)
    bound = _O2_FILTER * perm + _ABS_SLACK
    if det > bound:
        return 1
    if det < -bound:
        return -1
    if perm == 0.0:
        for v in (bu, bw, cu, cw):
            if v != 0.0 and abs(v) < _TINY_DIFF:
                return UNCERTAIN
        return 0
    return UNCERTAIN


@njit_kernel
def _o2(P, k, a, b, c, e):
    """Exact sign of ``orient2d_k`` (filter, then expansions); UNCERTAIN out of range."""
    s = _o2_filter(P, k, a, b, c)
    if s != UNCERTAIN:
        return s
    if not (_in_exact_range(P, a) and _in_exact_range(P, b) and _in_exact_range(P, c)):
        return UNCERTAIN
    u = (k + 1) % 3
    w = (k + 2) % 3
    # det[[1, au, aw], [1, bu, bw], [1, cu, cw]] = (bu cw - bw cu) - (au cw - aw cu) + (au bw - aw bu)
    n = np.int64(0)  # not the literal 0: _add_monomial2 would be compiled for Literal[int](0) too
    for x, y in ((P[b, u], P[c, w]), (-P[b, w], P[c, u]), (-P[a, u], P[c, w])):
        n = _add_monomial2(e, n, x, y)
    for x, y in ((P[a, w], P[c, u]), (P[a, u], P[b, w]), (-P[a, w], P[b, u])):
        n = _add_monomial2(e, n, x, y)
    return _expansion_sign(e, n)


# --------------------------------------------------------------------------------------------
# Rational fallback (plain Python)
# --------------------------------------------------------------------------------------------


def _sign(value):
    return (value > 0) - (value < 0)


class _RationalPoints:
    """Exact ``Fraction`` coordinates of a few vertices, converted on first use."""

    def __init__(self, points):
        self.points = points
        self.cache = {}

    def __getitem__(self, index):
        index = int(index)
        if index not in self.cache:
            self.cache[index] = tuple(Fraction(float(c)) for c in self.points[index])
        return self.cache[index]

    def o3(self, a, b, c, d):
        pa, pb, pc, pd = self[a], self[b], self[c], self[d]
        u = [pb[i] - pa[i] for i in range(3)]
        v = [pc[i] - pa[i] for i in range(3)]
        w = [pd[i] - pa[i] for i in range(3)]
        det = (
            u[0] * (v[1] * w[2] - v[2] * w[1]) + u[1] * (v[2] * w[0] - v[0] * w[2]) + u[2] * (v[0] * w[1] - v[1] * w[0])
        )
        return _sign(det)

    def o2(self, k, a, b, c):
        u, w = (k + 1) % 3, (k + 2) % 3
        pa, pb, pc = self[a], self[b], self[c]
        return _sign((pb[u] - pa[u]) * (pc[w] - pa[w]) - (pb[w] - pa[w]) * (pc[u] - pa[u]))

    def projection(self, a, b, c):
        for k in range(3):
            s = self.o2(k, a, b, c)
            if s != 0:
                return k, s
        return 0, 0

    def segments_2d(self, k, p, q, r, s):
        d1, d2 = self.o2(k, p, q, r), self.o2(k, p, q, s)
        if d1 * d2 > 0:
            return False
        d3, d4 = self.o2(k, r, s, p), self.o2(k, r, s, q)
        if d3 * d4 > 0:
            return False
        if d1 == 0 and d2 == 0:
            pp, pq, pr, ps = self[p], self[q], self[r], self[s]
            return all(
                max(pp[c], pq[c]) >= min(pr[c], ps[c]) and max(pr[c], ps[c]) >= min(pp[c], pq[c]) for c in range(3)
            )
        return True

    def segment_triangle(self, p, q, a, b, c):
        sp, sq = self.o3(a, b, c, p), self.o3(a, b, c, q)
        if sp * sq > 0:
            return False
        if sp == 0 and sq == 0:
            k, s0 = self.projection(a, b, c)
            if s0 == 0:
                return False
            for x in (p, q):
                if all(self.o2(k, i, j, x) * s0 >= 0 for i, j in ((a, b), (b, c), (c, a))):
                    return True
            return any(self.segments_2d(k, p, q, i, j) for i, j in ((a, b), (b, c), (c, a)))
        signs = (self.o3(p, q, a, b), self.o3(p, q, b, c), self.o3(p, q, c, a))
        return not (max(signs) > 0 and min(signs) < 0)
