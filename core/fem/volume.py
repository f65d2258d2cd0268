"""Enclosed volume of a closed triangle surface and the volume-change penalty (seed 003, §3.2).

Larionov, Fan, Pai et al., "Frictional contact on smooth elastic solids" (fully implicit
frictional dynamics); equation numbers below are the seed's, as recorded in
``shared/spec/seeds001-004.md`` §3.2.

**Enclosed volume** of a closed, consistently (outward) oriented surface with vertices ``x``
(vertex_count, 3) [m] and triangles ``(a, b, c)`` (divergence theorem, signed tets to the origin):

    V = 1/6 sum_{tri (a,b,c)} x_a . (x_b × x_c)                                  [m³]
    dV/dx_a = 1/6 sum_{tri ∋ a} x_b × x_c     ((a, b, c) cyclic in that triangle)  [m²]
    (d²V/dx²) p |_a = 1/6 sum_{tri ∋ a} (p_b × x_c + x_b × p_c)                    [m]

V is a cubic polynomial of x, translation invariant only for *closed* surfaces (then
``sum_a dV/dx_a = 0`` and ``sum_a x_a × dV/dx_a = 0``). Per triangle the 9x9 Hessian block (local
order ``[x_a, y_a, z_a, x_b, ..., z_c]``) has zero diagonal 3x3 blocks and off-diagonal blocks

    H_ab = -1/6 [x_c]_×,   H_bc = -1/6 [x_a]_×,   H_ca = -1/6 [x_b]_×,   H_ba = H_ab^T, ...

with ``[u]_× w = u × w``. These blocks are indefinite (trace 0).

**Penalty models** (``VolumeModel``; kernels receive ``int(VolumeModel.X)``), all written as the
work relative to the atmosphere ``W(V) = -∫_{V0}^{V} (p(V') - p_atm) dV'`` (eq. 33) with rest
volume V0 [m³], compressibility ``kappa`` [1/Pa] (> 0) and ``r = V/V0``, ``d = r - 1``:

- QUADRATIC (eq. 20):  ``W2 = (V - V0)² / (2 kappa V0)``,       ``W' = d / kappa``,
  ``W'' = 1 / (kappa V0)``;
- IDEAL_GAS (eq. 18, pV = const, ``p0 = 1/kappa``):  ``W = p0 V0 (r - 1 - ln r)``,
  ``W' = p0 (1 - 1/r)``, ``W'' = p0 / (V0 r²)``;
- LIQUID (eq. 19, constant kappa, ``p - p0 = -(1/kappa) ln r``):
  ``W = (V0/kappa) (r ln r - r + 1)``, ``W' = ln(r) / kappa``, ``W'' = 1 / (kappa V0 r)``.

All three agree to second order at V = V0: ``W ≈ V0 d² / (2 kappa)``. The gas law uses
``p0 = 1/kappa`` (an ideal gas has ``kappa_T = 1/p``), so ``kappa = 1 atm^-1`` is air at 1 atm.
IDEAL_GAS and LIQUID are undefined for ``V <= 0``: the energy kernels return ``+inf`` (so a line
search rejects the step) and the derivative kernels return NaN. Excess pressure
``p - p_atm = -W'(V)`` [Pa]; for QUADRATIC it is ``-(V/V0 - 1)/kappa``.

Force (eq. 21) and Jacobian on the vertices, ``g = dV/dx`` (vertex_count*3):

    f_vol = -W'(V) g,       d f_vol/dx = -W''(V) g g^T - W'(V) d²V/dx².

``g g^T`` is dense (rank 1); ``volume_penalty_hessian_matvec`` applies it in O(n) as
``(g . p) g`` (two passes over the triangles, no scratch array), which is what a matrix-free
(BiCGSTAB) solve wants. ``volume_penalty_local_hessian_blocks`` gives only the sparse local term
``W'(V) d²V/dx²`` (the seed's cheap approximation for assembled solvers).

Units: the seed quotes kappa in atm^-1 (air ≈ 1, water ≈ 4.6e-5); the kernels take kappa in
1/Pa -- convert with ``kappa_per_pa(kappa_per_atm)`` (``1 atm = ATMOSPHERE = 101325 Pa``).

Kernels never call BLAS/LAPACK (``np.dot``, the matmul operator, ``np.linalg``) and allocate
nothing; triangle loops run serially in triangle order, so results are bitwise deterministic.
"""

from enum import IntEnum

import numpy as np

from ..jit import njit_kernel


class VolumeModel(IntEnum):
    """Pressure-volume law of the volume penalty; kernels receive ``int(VolumeModel.X)``. Append-only."""

    NONE = 0
    QUADRATIC = 1
    IDEAL_GAS = 2
    LIQUID = 3


ATMOSPHERE = 101325.0
"""Standard atmosphere ``p_atm`` [Pa]."""

SERIES_THRESHOLD = 1.0e-2
"""Below this ``|V/V0 - 1|`` the gas/liquid energies use their Taylor series (no cancellation)."""

SERIES_TERMS = 14
"""Highest power of ``d = V/V0 - 1`` kept in the series (truncation < 1e-22 relative)."""


def kappa_per_pa(kappa_per_atm):
    """Convert a compressibility from [1/atm] (the seed's unit) to [1/Pa] (the kernels' unit)."""
    return kappa_per_atm / ATMOSPHERE


def pressure_in_atm(pressure):
    """Convert a pressure from [Pa] to [atm]."""
    return pressure / ATMOSPHERE


# --------------------------------------------------------------------------------------------
# Enclosed volume and its derivatives
# --------------------------------------------------------------------------------------------


@njit_kernel
def enclosed_volume(x, triangles):
    """Signed volume enclosed by a closed, consistently oriented triangle surface [m³].

    ``V = 1/6 sum_tri x_a . (x_b × x_c)``; positive for outward-facing (counter-clockwise seen
    from outside) triangles, negative for an inside-out surface.

    Args:
        x: vertex positions, shape (vertex_count, 3) [m].
        triangles: vertex indices, shape (triangle_count, 3), int.

    Returns:
        V [m³] (float).
    """
    six_v = 0.0
    for t in range(triangles.shape[0]):
        a = triangles[t, 0]
        b = triangles[t, 1]
        c = triangles[t, 2]
        # x_a . (x_b × x_c) = det[x_a, x_b, x_c]
        six_v += (
            x[a, 0] * (x[b, 1] * x[c, 2] - x[b, 2] * x[c, 1])
            + x[a, 1] * (x[b, 2] * x[c, 0] - x[b, 0] * x[c, 2])
            + x[a, 2] * (x[b, 0] * x[c, 1] - x[b, 1] * x[c, 0])
        )
    return six_v / 6.0


@njit_kernel
def _add_scaled_cross(u, i, w, j, scale, out, k):
    """``out[k] += scale * (u[i] × w[j])`` for rows of (n, 3) arrays (no temporaries)."""
    out[k, 0] += scale * (u[i, 1] * w[j, 2] - u[i, 2] * w[j, 1])
    out[k, 1] += scale * (u[i, 2] * w[j, 0] - u[i, 0] * w[j, 2])
    out[k, 2] += scale * (u[i, 0] * w[j, 1] - u[i, 1] * w[j, 0])


@njit_kernel
def _dot_cross(p, i, u, j, w, k):
    """``p[i] . (u[j] × w[k])`` for rows of (n, 3) arrays (a 3x3 determinant)."""
    return (
        p[i, 0] * (u[j, 1] * w[k, 2] - u[j, 2] * w[k, 1])
        + p[i, 1] * (u[j, 2] * w[k, 0] - u[j, 0] * w[k, 2])
        + p[i, 2] * (u[j, 0] * w[k, 1] - u[j, 1] * w[k, 0])
    )


@njit_kernel
def _zero(out):
    for v in range(out.shape[0]):
        for i in range(3):
            out[v, i] = 0.0


@njit_kernel
def _scatter_volume_gradient(x, triangles, scale, out):
    """``out += scale * dV/dx`` (serial scatter in triangle order)."""
    s = scale / 6.0
    for t in range(triangles.shape[0]):
        a = triangles[t, 0]
        b = triangles[t, 1]
        c = triangles[t, 2]
        _add_scaled_cross(x, b, x, c, s, out, a)
        _add_scaled_cross(x, c, x, a, s, out, b)
        _add_scaled_cross(x, a, x, b, s, out, c)


@njit_kernel
def _scatter_volume_hessian_matvec(x, triangles, p, scale, out):
    """``out += scale * (d²V/dx²) p`` (serial scatter in triangle order)."""
    s = scale / 6.0
    for t in range(triangles.shape[0]):
        a = triangles[t, 0]
        b = triangles[t, 1]
        c = triangles[t, 2]
        # d/dx (x_b × x_c) [p] = p_b × x_c + x_b × p_c, and cyclically for b and c.
        _add_scaled_cross(p, b, x, c, s, out, a)
        _add_scaled_cross(x, b, p, c, s, out, a)
        _add_scaled_cross(p, c, x, a, s, out, b)
        _add_scaled_cross(x, c, p, a, s, out, b)
        _add_scaled_cross(p, a, x, b, s, out, c)
        _add_scaled_cross(x, a, p, b, s, out, c)


@njit_kernel
def enclosed_volume_gradient(x, triangles, out):
    """Gradient of ``enclosed_volume``: ``dV/dx_a = 1/6 sum_{tri ∋ a} x_b × x_c`` [m²].

    ``(a, b, c)`` is the triangle's vertex order rotated so that ``a`` comes first (cyclic).

    Args:
        x: vertex positions, shape (vertex_count, 3) [m].
        triangles: vertex indices, shape (triangle_count, 3), int.
        out: dV/dx, shape (vertex_count, 3) [m²] (output, overwritten).
    """
    _zero(out)
    _scatter_volume_gradient(x, triangles, 1.0, out)


@njit_kernel
def enclosed_volume_hessian_matvec(x, triangles, p, out):
    """Hessian-vector product ``(d²V/dx²) p`` [m · (unit of p)].

    ``out_a = 1/6 sum_{tri ∋ a} (p_b × x_c + x_b × p_c)`` (cyclic ``(a, b, c)``); exact, since V is
    cubic in x. O(triangle_count), no allocation.

    Args:
        x: vertex positions, shape (vertex_count, 3) [m].
        triangles: vertex indices, shape (triangle_count, 3), int.
        p: direction, shape (vertex_count, 3).
        out: shape (vertex_count, 3) (output, overwritten; must not alias ``p`` or ``x``).
    """
    _zero(out)
    _scatter_volume_hessian_matvec(x, triangles, p, 1.0, out)


@njit_kernel
def enclosed_volume_hessian_blocks(x, triangles, out):
    """Per-triangle 9x9 blocks of ``d²V/dx²`` [m]; summing them over triangles gives the Hessian.

    Local order ``[x_a, y_a, z_a, x_b, ..., z_c]`` for triangle ``(a, b, c)``. Diagonal 3x3 blocks
    are zero; ``H_ab = -1/6 [x_c]_×`` (``[u]_× w = u × w``), ``H_bc = -1/6 [x_a]_×``,
    ``H_ca = -1/6 [x_b]_×`` and the transposes below the diagonal. Symmetric and indefinite.

    Args:
        x: vertex positions, shape (vertex_count, 3) [m].
        triangles: vertex indices, shape (triangle_count, 3), int.
        out: shape (triangle_count, 9, 9) [m] (output, overwritten).
    """
    for t in range(triangles.shape[0]):
        blk = out[t]
        for i in range(9):
            for j in range(9):
                blk[i, j] = 0.0
        for k in range(3):
            # (row block r, column block s) = (k, k+1), opposite vertex o = k+2 (cyclic):
            # d/dx_s (x_s × x_o) = -[x_o]_×, so H_rs = -1/6 [x_o]_× and H_sr = +1/6 [x_o]_×.
            r = k
            s = (k + 1) % 3
            o = triangles[t, (k + 2) % 3]
            ux = x[o, 0] / 6.0
            uy = x[o, 1] / 6.0
            uz = x[o, 2] / 6.0
            # -[u]_× = [[0, uz, -uy], [-uz, 0, ux], [uy, -ux, 0]]
            blk[3 * r + 0, 3 * s + 1] = uz
            blk[3 * r + 0, 3 * s + 2] = -uy
            blk[3 * r + 1, 3 * s + 0] = -uz
            blk[3 * r + 1, 3 * s + 2] = ux
            blk[3 * r + 2, 3 * s + 0] = uy
            blk[3 * r + 2, 3 * s + 1] = -ux
            for i in range(3):
                for j in range(3):
                    blk[3 * s + j, 3 * r + i] = blk[3 * r + i, 3 * s + j]


# --------------------------------------------------------------------------------------------
# Pressure-volume laws W(V) and their derivatives
# --------------------------------------------------------------------------------------------


@njit_kernel
def volume_work(V, V0, kappa, model):
    """Penalty energy ``W(V)`` of one pressure-volume law [J] (see module docstring).

    Args:
        V: current volume [m³].
        V0: rest volume [m³] (> 0).
        kappa: isothermal compressibility [1/Pa] (> 0); IDEAL_GAS uses ``p0 = 1/kappa``.
        model: ``int(VolumeModel.X)``.

    Returns:
        W [J]; ``+inf`` for IDEAL_GAS/LIQUID at ``V <= 0``; 0 for NONE.
    """
    d = (V - V0) / V0
    if model == 1:  # QUADRATIC, eq. 20
        return V0 * d * d / (2.0 * kappa)
    if model == 2 or model == 3:
        if V <= 0.0:
            return np.inf
        if abs(d) < SERIES_THRESHOLD:
            # gas:    r - 1 - ln r        = sum_{k>=2} (-1)^k d^k / k
            # liquid: r ln r - r + 1      = sum_{k>=2} (-1)^k d^k / (k (k - 1))
            acc = 0.0
            dk = -d
            for k in range(2, SERIES_TERMS + 1):
                dk = -dk * d  # (-1)^k d^k
                if model == 2:
                    acc += dk / k
                else:
                    acc += dk / (k * (k - 1))
            return V0 * acc / kappa
        if model == 2:  # IDEAL_GAS, eq. 18
            return V0 * (d - np.log1p(d)) / kappa
        # LIQUID, eq. 19
        return V0 * ((1.0 + d) * np.log1p(d) - d) / kappa
    return 0.0


@njit_kernel
def volume_work_first_derivative(V, V0, kappa, model):
    """``W'(V) = -(p - p_atm)`` [Pa]; NaN for IDEAL_GAS/LIQUID at ``V <= 0``. Args as ``volume_work``."""
    d = (V - V0) / V0
    if model == 1:
        # W2' = (V - V0) / (kappa V0)
        return d / kappa
    if model == 2 or model == 3:
        if V <= 0.0:
            return np.nan
        if model == 2:
            # p0 V0 d/dV (r - 1 - ln r) = p0 (1 - 1/r) = p0 d / (1 + d)
            return d / ((1.0 + d) * kappa)
        # (V0/kappa) d/dV (r ln r - r + 1) = (1/kappa) ln r
        return np.log1p(d) / kappa
    return 0.0


@njit_kernel
def volume_work_second_derivative(V, V0, kappa, model):
    """``W''(V)`` [Pa/m³]; NaN for IDEAL_GAS/LIQUID at ``V <= 0``. Args as ``volume_work``."""
    if model == 1:
        return 1.0 / (kappa * V0)
    if model == 2 or model == 3:
        if V <= 0.0:
            return np.nan
        r = V / V0
        if model == 2:
            # p0 d/dV (1 - V0/V) = p0 V0 / V² = p0 / (V0 r²)
            return 1.0 / (kappa * V0 * r * r)
        # (1/kappa) d/dV ln(V/V0) = 1 / (kappa V)
        return 1.0 / (kappa * V)
    return 0.0


@njit_kernel
def excess_pressure(V, V0, kappa, model):
    """Gauge pressure ``p - p_atm = -W'(V)`` [Pa] of the enclosed medium.

    QUADRATIC: ``-(V/V0 - 1)/kappa`` (10 % compression at ``kappa = 1 atm^-1`` gives +0.1 atm);
    IDEAL_GAS: ``p0 (V0/V - 1)``; LIQUID: ``-ln(V/V0)/kappa``. Args as ``volume_work``.
    """
    return -volume_work_first_derivative(V, V0, kappa, model)


# --------------------------------------------------------------------------------------------
# Penalty on a mesh: energy, gradient, Hessian
# --------------------------------------------------------------------------------------------


@njit_kernel
def volume_penalty_energy(x, triangles, V0, kappa, model):
    """Volume-change penalty ``W(V(x))`` of a closed surface [J].

    Args:
        x: vertex positions, shape (vertex_count, 3) [m].
        triangles: closed, outward-oriented surface, shape (triangle_count, 3), int.
        V0: rest volume [m³] (> 0).
        kappa: compressibility [1/Pa] (> 0); see ``kappa_per_pa``.
        model: ``int(VolumeModel.X)``.

    Returns:
        W [J]; ``+inf`` for IDEAL_GAS/LIQUID if ``V(x) <= 0``.
    """
    return volume_work(enclosed_volume(x, triangles), V0, kappa, model)


@njit_kernel
def volume_penalty_gradient(x, triangles, V0, kappa, model, out):
    """Gradient ``dW/dx = W'(V) dV/dx`` [N]; the volume force (eq. 21) is ``f_vol = -out``.

    Args: as ``volume_penalty_energy``, plus
        out: shape (vertex_count, 3) [N] (output, overwritten; NaN for IDEAL_GAS/LIQUID at V <= 0).
    """
    dW = volume_work_first_derivative(enclosed_volume(x, triangles), V0, kappa, model)
    _zero(out)
    _scatter_volume_gradient(x, triangles, dW, out)


@njit_kernel
def volume_penalty_hessian_matvec(x, triangles, V0, kappa, model, p, out):
    """Full Hessian-vector product ``(W''(V) g g^T + W'(V) d²V/dx²) p`` [N/m · (unit of p)].

    ``g = dV/dx``; the dense rank-1 term is applied as ``W'' (g . p) g`` in O(n): pass 1 forms V
    and ``g . p = 1/6 sum_tri [p_a . (x_b × x_c) + p_b . (x_c × x_a) + p_c . (x_a × x_b)]``
    without storing g, pass 2 scatters both terms. The Jacobian of the force is ``-out``.

    Args: as ``volume_penalty_energy``, plus
        p: direction, shape (vertex_count, 3).
        out: shape (vertex_count, 3) (output, overwritten; must not alias ``p`` or ``x``).
    """
    six_v = 0.0
    six_gp = 0.0
    for t in range(triangles.shape[0]):
        a = triangles[t, 0]
        b = triangles[t, 1]
        c = triangles[t, 2]
        six_v += _dot_cross(x, a, x, b, x, c)
        six_gp += _dot_cross(p, a, x, b, x, c) + _dot_cross(p, b, x, c, x, a) + _dot_cross(p, c, x, a, x, b)
    V = six_v / 6.0
    d1 = volume_work_first_derivative(V, V0, kappa, model)
    d2 = volume_work_second_derivative(V, V0, kappa, model)
    _zero(out)
    _scatter_volume_gradient(x, triangles, d2 * six_gp / 6.0, out)
    _scatter_volume_hessian_matvec(x, triangles, p, d1, out)


@njit_kernel
def volume_penalty_local_hessian_blocks(x, triangles, V0, kappa, model, out):
    """Per-triangle 9x9 blocks of the sparse local term ``W'(V) d²V/dx²`` [N/m].

    This omits the dense rank-1 term ``W''(V) g g^T`` (the seed's approximation for assembled
    solvers; use ``volume_penalty_hessian_matvec`` for the exact product). The blocks are
    indefinite. Local order as ``enclosed_volume_hessian_blocks``.

    Args: as ``volume_penalty_energy``, plus
        out: shape (triangle_count, 9, 9) [N/m] (output, overwritten).
    """
    dW = volume_work_first_derivative(enclosed_volume(x, triangles), V0, kappa, model)
    enclosed_volume_hessian_blocks(x, triangles, out)
    for t in range(out.shape[0]):
        for i in range(9):
            for j in range(9):
                out[t, i, j] *= dW


def is_closed_oriented_surface(triangles):
    """True if every directed edge occurs once and its reverse once (closed, consistently oriented).

    Plain numpy check for inputs of the volume kernels (which assume it but do not verify it).

    Args:
        triangles: shape (triangle_count, 3), int.
    """
    tri = np.asarray(triangles, dtype=np.int64)
    if tri.ndim != 2 or tri.shape[1] != 3 or tri.shape[0] == 0:
        return False
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    if np.any(edges[:, 0] == edges[:, 1]):
        return False
    n = int(tri.max()) + 1
    directed = edges[:, 0] * n + edges[:, 1]
    reverse = edges[:, 1] * n + edges[:, 0]
    if np.unique(directed).size != directed.size:
        return False
    return bool(np.array_equal(np.sort(directed), np.sort(reverse)))
