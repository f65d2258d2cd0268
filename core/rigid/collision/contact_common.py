"""Building blocks shared by the narrow-phase pair kernels (seed 000 §2.1): contact output and closest points.

One job: what ``narrow_phase`` (sphere, plane and capsule pairs, dispatch) and ``box_contacts`` (box-box,
box-capsule) both build on -- the contact record convention and its writer ``emit_contact``, the feature-id
range, small scalar/tuple helpers, and the closest points of two segments (Ericson, Real-Time Collision
Detection §5.1.9). Lengths in metres; points and directions are tuples of three floats (registers, no heap).

Contact conventions (shared by every ``collide_*`` kernel):

- A contact is (point, normal, gap, feature). ``normal`` is a unit vector pointing from the first shape of the
  kernel's name to the second; the dispatcher ``generate_contacts`` negates it when it swapped the pair, so the
  stored normal always points from ``pairs[p, 0]`` to ``pairs[p, 1]``.
- ``gap`` is the signed distance phi [m]: positive when apart, negative when penetrating, the distance to move
  the second shape along the normal to just touch (seed §2.0). Contacts are kept while ``gap <= margin``
  (speculative contacts).
- ``point`` is midway between the two surface points (seed §2.1.1), so it does not depend on the pair order.
- ``feature`` in [0, FEATURE_MAX) names the touching feature pair, so it stays the same while the same
  features touch (warm starting matches contacts by (shape0, shape1, feature)).
"""

from ...jit import njit_kernel
from ...math.vec import dot3, sub3

FEATURE_MAX = 256
"""Feature ids lie in [0, FEATURE_MAX)."""

INF = 1.0e30
"""Stand-in for infinity [m]: a plane's AABB half-width along unbounded axes, the SAT start value."""

PARALLEL_CROSS = 1.0e-6
"""``|a x b|`` below this: edge directions treated as parallel and their SAT axis skipped [dimensionless]."""


# ---------------------------------------------------------------------------------------------------------------
# Scalar and tuple helpers
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def clamp(x, lo, hi):
    """``x`` limited to [lo, hi]."""
    return lo if x < lo else (hi if x > hi else x)


@njit_kernel
def sign(x):
    """+1 for x >= 0, else -1 (a fixed choice at 0 keeps degenerate cases deterministic)."""
    return 1.0 if x >= 0.0 else -1.0


@njit_kernel
def component(v, k):
    """``v[k]`` for a tuple ``v`` and a runtime index ``k`` in {0, 1, 2}."""
    return v[0] if k == 0 else (v[1] if k == 1 else v[2])


@njit_kernel
def with_component(v, k, x):
    """Copy of ``v`` with component ``k`` replaced by ``x``."""
    if k == 0:
        return (x, v[1], v[2])
    if k == 1:
        return (v[0], x, v[2])
    return (v[0], v[1], x)


@njit_kernel
def unit_axis(k, s):
    """``s * e_k``."""
    return with_component((0.0, 0.0, 0.0), k, s)


# ---------------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def emit_contact(out, pair_index, point, normal, sgn, gap, feature):
    """Append one contact to ``out = (pair, point, normal, gap, feature, counts)``; count it when full.

    ``normal`` is multiplied by ``sgn`` (+1 or -1) to restore the caller's pair order.
    """
    out_pair, out_point, out_normal, out_gap, out_feature, counts = out
    c = counts[0]
    cap = min(out_pair.shape[0], out_point.shape[0], out_normal.shape[0], out_gap.shape[0], out_feature.shape[0])
    if c >= cap:
        counts[1] += 1
        return
    out_pair[c] = pair_index
    for k in range(3):
        out_point[c, k] = point[k]
        out_normal[c, k] = sgn * normal[k]
    out_gap[c] = gap
    out_feature[c] = feature
    counts[0] = c + 1


# ---------------------------------------------------------------------------------------------------------------
# Closest points of two segments
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def closest_segment_segment_params(p0, d0, q0, d1):
    """Parameters (s, t) in [0, 1] of the closest points ``p0 + s d0`` and ``q0 + t d1`` of two segments.

    Ericson, Real-Time Collision Detection §5.1.9. Parallel segments return s = 0 (any point is closest).
    """
    eps = 1.0e-20
    r = sub3(p0, q0)
    a = dot3(d0, d0)
    e = dot3(d1, d1)
    f = dot3(d1, r)
    if a <= eps and e <= eps:
        return 0.0, 0.0
    if a <= eps:
        return 0.0, clamp(f / e, 0.0, 1.0)
    c = dot3(d0, r)
    if e <= eps:
        return clamp(-c / a, 0.0, 1.0), 0.0
    b = dot3(d0, d1)
    denom = a * e - b * b
    s = clamp((b * f - c * e) / denom, 0.0, 1.0) if denom > 1.0e-14 * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t = 0.0
        s = clamp(-c / a, 0.0, 1.0)
    elif t > 1.0:
        t = 1.0
        s = clamp((b - c) / a, 0.0, 1.0)
    return s, t
