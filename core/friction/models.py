"""Friction cone generators and limit-surface projections (course ch. 6; seed 001 §1.3).

A generator maps the two surfaces at a contact to a friction set: a frame ``C = [n t b]`` and a
limit surface (disk, ellipse or four-sided box) scaled by the normal impulse.
"""

import math

from ..jit import njit_kernel

TWO_OVER_PI = 2.0 / math.pi


@njit_kernel
def combine_coefficient(a, b, mode):
    """Pair coefficient of two surfaces by :class:`CombineMode` (1 geometric, 2 average, 3 min, 4 max, 5 product)."""
    if mode == 1:
        return math.sqrt(a * b)
    if mode == 2:
        return 0.5 * (a + b)
    if mode == 3:
        return min(a, b)
    if mode == 4:
        return max(a, b)
    return a * b


@njit_kernel
def project_onto_plane(s0, s1, s2, n):
    """Unit direction of ``s - (s.n) n``; returns ``(x, y, z, ok)`` with ok False if it vanishes."""
    d = s0 * n[0] + s1 * n[1] + s2 * n[2]
    x, y, z = s0 - d * n[0], s1 - d * n[1], s2 - d * n[2]
    norm = math.sqrt(x * x + y * y + z * z)
    if not norm > 1e-9:
        return 0.0, 0.0, 0.0, False
    return x / norm, y / norm, z / norm, True


@njit_kernel
def matchstick_coefficients(sa0, sa1, sa2, sb0, sb1, sb2, mu, mu_t_aniso, mu_b_aniso):
    """Matchstick friction generator (course Alg. 21, eq. 300–307).

    Args:
        sa0..sa2, sb0..sb2: unit structure directions of both surfaces in the contact plane.
        mu: isotropic coefficient. mu_t_aniso, mu_b_aniso: the anisotropic extremes ``mu_t^A <= mu_b^A``.

    Returns:
        ``(mu_t, mu_b, t0, t1, t2)``: coefficients along and across the cone's major axis ``t``
        (the bisector of ``sa`` and ``sb``, sign of ``sb`` flipped so the model ignores direction signs).
        ``d = 1 - 2 theta / pi`` interpolates linearly: parallel fields give ``(mu_t^A, mu_b^A)``,
        orthogonal ones the isotropic ``mu``.
    """
    c = sa0 * sb0 + sa1 * sb1 + sa2 * sb2
    sign = 1.0
    if c < 0.0:
        sign = -1.0
        c = -c
    c = min(c, 1.0)  # round-off would make acos NaN
    theta = math.acos(c)
    d = 1.0 - TWO_OVER_PI * theta
    mu_t = d * mu_t_aniso + (1.0 - d) * mu
    mu_b = d * mu_b_aniso + (1.0 - d) * mu
    t0 = sa0 + sign * sb0
    t1 = sa1 + sign * sb1
    t2 = sa2 + sign * sb2
    norm = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    return mu_t, mu_b, t0 / norm, t1 / norm, t2 / norm


@njit_kernel
def ellipse_coefficient(cos_phi, sin_phi, mu_t, mu_b):
    """Friction coefficient of the elliptic cone in the direction at angle phi from ``t``.

    ``mu(phi) = 1 / sqrt(cos^2 phi / mu_t^2 + sin^2 phi / mu_b^2)``: where the ray hits the ellipse
    (the "map of coefficients of friction", course Fig. 27).
    """
    if mu_t <= 0.0 or mu_b <= 0.0:
        if mu_t <= 0.0 and abs(cos_phi) > 0.0:
            return 0.0
        if mu_b <= 0.0 and abs(sin_phi) > 0.0:
            return 0.0
        return mu_t if mu_t > 0.0 else mu_b
    return 1.0 / math.sqrt(cos_phi * cos_phi / (mu_t * mu_t) + sin_phi * sin_phi / (mu_b * mu_b))


@njit_kernel
def project_ellipse(zt, zb, a, b):
    """Closest point of the ellipse ``(x/a)^2 + (y/b)^2 <= 1`` to ``(zt, zb)`` (course Alg. 13 in 2D).

    Points inside are returned unchanged. Otherwise the KKT point ``x_i = z_i a_i^2 / (a_i^2 + t)``
    with the unique root ``t > 0`` of ``g(t) = a^2 z1^2/(a^2+t)^2 + b^2 z2^2/(b^2+t)^2 - 1``, found by
    bisection after scaling into the unit box (errata E10, E11 applied). Degenerate axes (a or b = 0)
    reduce to a segment; both zero to the origin.
    """
    if a <= 0.0 and b <= 0.0:
        return 0.0, 0.0
    if a <= 0.0:
        return 0.0, min(max(zb, -b), b)
    if b <= 0.0:
        return min(max(zt, -a), a), 0.0
    if (zt / a) ** 2 + (zb / b) ** 2 <= 1.0:
        return zt, zb
    if a == b:
        norm = math.sqrt(zt * zt + zb * zb)
        return zt * a / norm, zb * a / norm
    s = 1.0 / max(1.0, a, b, abs(zt), abs(zb))
    sa, sb, st, sbz = a * s, b * s, zt * s, zb * s
    a2, b2 = sa * sa, sb * sb
    lo = 0.0
    hi = max(sa, sb) * math.sqrt(st * st + sbz * sbz)
    while a2 * st * st / (a2 + hi) ** 2 + b2 * sbz * sbz / (b2 + hi) ** 2 - 1.0 > 0.0:
        hi *= 1.5
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        g = a2 * st * st / (a2 + mid) ** 2 + b2 * sbz * sbz / (b2 + mid) ** 2 - 1.0
        if g > 0.0:
            lo = mid
        else:
            hi = mid
    t = 0.5 * (lo + hi) / (s * s)  # back to the unscaled problem
    return zt * a * a / (a * a + t), zb * b * b / (b * b + t)


@njit_kernel
def tensor_ellipse(l00, l01, l10, l11):
    """Elliptic cone of a friction tensor map ``L`` (2x2, non-singular; course eq. 321–325).

    ``f = -lambda_n L v_hat`` lies on ``f^T (L^-T L^-1) f = lambda_n^2``. The eigen-decomposition of
    ``C_P = L^-T L^-1`` gives the ellipse: ``mu_i = 1 / sqrt(eig_i)`` along its eigenvectors.

    Returns:
        ``(mu_t, mu_b, cos_a, sin_a)``: coefficients along the axis at angle ``a`` from the input
        basis' first vector and along the perpendicular one.
    """
    det = l00 * l11 - l01 * l10
    # L^-1 = [[l11, -l01], [-l10, l00]] / det ;  C = L^-T L^-1
    i00, i01, i10, i11 = l11 / det, -l01 / det, -l10 / det, l00 / det
    c00 = i00 * i00 + i10 * i10
    c01 = i00 * i01 + i10 * i11
    c11 = i01 * i01 + i11 * i11
    # symmetric 2x2 eigenvalues: angle of the first eigenvector
    angle = 0.5 * math.atan2(2.0 * c01, c00 - c11)
    ca, sa = math.cos(angle), math.sin(angle)
    e0 = ca * ca * c00 + 2.0 * ca * sa * c01 + sa * sa * c11
    e1 = sa * sa * c00 - 2.0 * ca * sa * c01 + ca * ca * c11
    return 1.0 / math.sqrt(e0), 1.0 / math.sqrt(e1), ca, sa


@njit_kernel
def tensor_force(lambda_n, kappa, qa, qb, cos_r, sin_r, vt, vb):
    """Direct friction force of friction tensors (course eq. 320): ``f = -lambda_n kappa (Q_A + R Q_B R^T) v_hat``.

    Args:
        lambda_n: normal force or impulse. kappa: scale. qa, qb: 2x2 tensors in A's tangent basis and
        B's own basis; ``R`` (angle with cosine ``cos_r``, sine ``sin_r``) rotates B's basis onto A's.
        vt, vb: sliding velocity in A's basis.

    Returns:
        ``(f_t, f_b)``; zero when not sliding.
    """
    speed = math.sqrt(vt * vt + vb * vb)
    if speed == 0.0:
        return 0.0, 0.0
    ut, ub = vt / speed, vb / speed
    # R Q_B R^T
    r00, r01, r10, r11 = cos_r, -sin_r, sin_r, cos_r
    m00 = r00 * qb[0, 0] + r01 * qb[1, 0]
    m01 = r00 * qb[0, 1] + r01 * qb[1, 1]
    m10 = r10 * qb[0, 0] + r11 * qb[1, 0]
    m11 = r10 * qb[0, 1] + r11 * qb[1, 1]
    b00 = m00 * r00 + m01 * r01
    b01 = m00 * r10 + m01 * r11
    b10 = m10 * r00 + m11 * r01
    b11 = m10 * r10 + m11 * r11
    l00 = kappa * (qa[0, 0] + b00)
    l01 = kappa * (qa[0, 1] + b01)
    l10 = kappa * (qa[1, 0] + b10)
    l11 = kappa * (qa[1, 1] + b11)
    return -lambda_n * (l00 * ut + l01 * ub), -lambda_n * (l10 * ut + l11 * ub)


@njit_kernel
def project_disk(zt, zb, radius):
    """Closest point of the disk ``||(t, b)|| <= radius`` to ``(zt, zb)`` (course eq. 226)."""
    norm = math.sqrt(zt * zt + zb * zb)
    if norm <= radius:
        return zt, zb
    if norm == 0.0 or radius <= 0.0:
        return 0.0, 0.0
    s = radius / norm
    return zt * s, zb * s


@njit_kernel
def project_friction(friction_set, mu_t, mu_b, mu_neg_t, mu_neg_b, lambda_n, zt, zb):
    """Closest point of the contact's friction set ``F(lambda_n)`` to ``(zt, zb)`` (course eq. 225–226, 310).

    ``friction_set`` is a :class:`FrictionSet` value: CONE → disk of radius ``mu lambda_n``; ELLIPSE →
    ellipse with semi-axes ``(mu_t, mu_b) lambda_n`` (bisection, Alg. 13); BOX → clamp each component
    to its directional bounds (exact for an axis-aligned box). The coefficients are a contact's ``mu4 = [+t, +b,
    -t, -b]``, passed as scalars: a kernel's inner loop then hands this call no array (each array handed to a call
    takes an atomic reference count up and down).
    """
    if friction_set == 2:
        return project_disk(zt, zb, mu_t * lambda_n)
    if friction_set == 3:
        return project_ellipse(zt, zb, mu_t * lambda_n, mu_b * lambda_n)
    return (
        min(max(zt, -mu_neg_t * lambda_n), mu_t * lambda_n),
        min(max(zb, -mu_neg_b * lambda_n), mu_b * lambda_n),
    )


@njit_kernel
def project_ellipsoid(z0, z1, z2, a, b, c):
    """Closest point of the ellipsoid ``(x/a)^2 + (y/b)^2 + (z/c)^2 <= 1`` to ``z`` (course Alg. 13, errata E10–E11).

    The Coulomb–Contensou limit surface (seed 001 eq. 16): semi-axes ``(mu_t, mu_b, mu_tau) lambda_n`` for
    the two friction impulses and the spin (torsion) impulse. Points inside are returned unchanged;
    otherwise ``x_i = z_i a_i^2 / (a_i^2 + t)`` with the root ``t > 0`` of
    ``g(t) = sum a_i^2 z_i^2 / (a_i^2 + t)^2 - 1``, bisection in the unit-scaled problem (bracket growth 1.5).
    A zero semi-axis pins that component to 0 and projects onto the remaining ellipse.
    """
    if c <= 0.0:
        x0, x1 = project_ellipse(z0, z1, a, b)
        return x0, x1, 0.0
    if a <= 0.0:
        x1, x2 = project_ellipse(z1, z2, b, c)
        return 0.0, x1, x2
    if b <= 0.0:
        x0, x2 = project_ellipse(z0, z2, a, c)
        return x0, 0.0, x2
    if (z0 / a) ** 2 + (z1 / b) ** 2 + (z2 / c) ** 2 <= 1.0:
        return z0, z1, z2
    s = 1.0 / max(1.0, a, b, c, abs(z0), abs(z1), abs(z2))
    sa, sb, sc = a * s, b * s, c * s
    w0, w1, w2 = z0 * s, z1 * s, z2 * s
    a2, b2, c2 = sa * sa, sb * sb, sc * sc
    lo = 0.0
    hi = max(sa, sb, sc) * math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    while a2 * w0 * w0 / (a2 + hi) ** 2 + b2 * w1 * w1 / (b2 + hi) ** 2 + c2 * w2 * w2 / (c2 + hi) ** 2 > 1.0:
        hi *= 1.5
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        g = a2 * w0 * w0 / (a2 + mid) ** 2 + b2 * w1 * w1 / (b2 + mid) ** 2 + c2 * w2 * w2 / (c2 + mid) ** 2 - 1.0
        if g > 0.0:
            lo = mid
        else:
            hi = mid
    t = 0.5 * (lo + hi) / (s * s)
    return z0 * a * a / (a * a + t), z1 * b * b / (b * b + t), z2 * c * c / (c * c + t)
