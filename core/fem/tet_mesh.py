"""Rest shape, lumped masses, deformation gradient and Lamé parameters for linear tetrahedra.

For a tet with rest vertices ``X0..X3`` and current vertices ``x0..x3``:

- ``Dm = [X1 - X0, X2 - X0, X3 - X0]`` (edge vectors as *columns*), rest volume ``det(Dm) / 6``;
- ``Ds = [x1 - x0, x2 - x0, x3 - x0]``, deformation gradient ``F = Ds Dm^-1`` (constant per tet).

Only positively oriented rest tets (``det(Dm) > 0``) are accepted, so ``J = det(F) > 0`` means
"not inverted".
"""

import numpy as np

from ..config import FLOAT, INDEX
from ..jit import njit_kernel

DEGENERATE_TET_TOLERANCE = 1.0e-12
"""A rest tet is degenerate if ``6 V <= tol * L_max^3`` (L_max: longest edge) [dimensionless]."""


def compute_rest_shape(vertices, tet_indices):
    """Inverse rest edge matrices and rest volumes of all tets.

    Args:
        vertices: rest positions X, shape (vertex_count, 3), float64 [m].
        tet_indices: shape (tet_count, 4), int32; vertex indices of each tet.

    Returns:
        (tet_Dm_inv, tet_rest_volume):
        ``tet_Dm_inv`` shape (tet_count, 3, 3) [1/m], ``Dm^-1`` with ``Dm = [X1-X0, X2-X0, X3-X0]``;
        ``tet_rest_volume`` shape (tet_count,) [m³], ``det(Dm) / 6``.

    Raises:
        ValueError: bad shapes / indices, or a degenerate or inverted rest tet (named by index).
    """
    X = np.ascontiguousarray(vertices, dtype=FLOAT)
    tets = np.ascontiguousarray(tet_indices, dtype=INDEX)
    if X.ndim != 2 or X.shape[1] != 3:
        raise ValueError(f"vertices must have shape (vertex_count, 3), got {X.shape}")
    if tets.ndim != 2 or tets.shape[1] != 4:
        raise ValueError(f"tet_indices must have shape (tet_count, 4), got {tets.shape}")
    if tets.size and (tets.min() < 0 or tets.max() >= X.shape[0]):
        raise ValueError("tet_indices reference vertices out of range")
    e1 = X[tets[:, 1]] - X[tets[:, 0]]
    e2 = X[tets[:, 2]] - X[tets[:, 0]]
    e3 = X[tets[:, 3]] - X[tets[:, 0]]
    c23 = np.cross(e2, e3)
    det = np.einsum("ti,ti->t", e1, c23)
    edges = np.stack([e1, e2, e3, e2 - e1, e3 - e1, e3 - e2], axis=1)
    longest = np.sqrt(np.einsum("tei,tei->te", edges, edges).max(axis=1)) if len(tets) else np.zeros(0)
    for t in range(len(tets)):
        if not np.isfinite(det[t]) or abs(det[t]) <= DEGENERATE_TET_TOLERANCE * longest[t] ** 3:
            raise ValueError(f"rest tet {t} (vertices {tets[t].tolist()}) is degenerate (6V = {det[t]:.3e})")
        if det[t] < 0.0:
            raise ValueError(f"rest tet {t} (vertices {tets[t].tolist()}) is inverted (6V = {det[t]:.3e})")
    # The inverse of a matrix with columns (a, b, c) has rows (b x c, c x a, a x b) / det.
    tet_Dm_inv = np.empty((len(tets), 3, 3), dtype=FLOAT)
    tet_Dm_inv[:, 0, :] = c23 / det[:, None]
    tet_Dm_inv[:, 1, :] = np.cross(e3, e1) / det[:, None]
    tet_Dm_inv[:, 2, :] = np.cross(e1, e2) / det[:, None]
    tet_rest_volume = det / 6.0
    return tet_Dm_inv, tet_rest_volume


def lumped_vertex_mass(vertices, tet_indices, density):
    """Lumped (diagonal) vertex masses: each tet gives ``density * V / 4`` to each of its nodes.

    Args:
        vertices: rest positions, shape (vertex_count, 3) [m].
        tet_indices: shape (tet_count, 4), int32.
        density: rho [kg/m³], scalar or per-tet array of shape (tet_count,).

    Returns:
        vertex_mass, shape (vertex_count,) [kg]; vertices in no tet get 0. Deterministic (np.add.at).
    """
    X = np.asarray(vertices, dtype=FLOAT)
    tets = np.asarray(tet_indices, dtype=INDEX)
    _, volume = compute_rest_shape(X, tets)
    tet_mass = np.broadcast_to(np.asarray(density, dtype=FLOAT), volume.shape) * volume
    vertex_mass = np.zeros(X.shape[0], dtype=FLOAT)
    for k in range(4):
        np.add.at(vertex_mass, tets[:, k], 0.25 * tet_mass)
    return vertex_mass


MIN_NODE_MASS_FRACTION = 0.01
"""Smallest mass of a vertex of a partly filled tet mesh, as a fraction of its mass were every tet full
(:func:`filled_vertex_mass`) [dimensionless]."""


def filled_vertex_mass(vertices, tet_indices, density, tet_fraction):
    """Lumped vertex masses of a tet mesh the body fills only in part (a lattice around a mesh).

    Each tet gives ``density * fraction * V / 4`` to each of its nodes, so the total is the filled volume times
    the density. A vertex whose tets are all (nearly) empty, outside the body, still gets
    :data:`MIN_NODE_MASS_FRACTION` of its full mass: it carries no body but keeps its elastic tets (they hold the
    embedded surface), and a massless node would leave the implicit step's matrix ``M + h² K`` resting on a
    projected stiffness that can be singular. All masses are then scaled by one factor so that the total stays
    exactly ``density * sum(fraction * V)``; the floor is small, so the centre of mass moves by a small fraction of
    a cell (measured in ``tests/core/soft/test_mass.py``).

    Args:
        vertices: rest positions, shape (vertex_count, 3) [m].
        tet_indices: shape (tet_count, 4), int32.
        density: rho [kg/m³], scalar or shape (tet_count,).
        tet_fraction: part of each tet inside the body, shape (tet_count,), in [0, 1], not all 0.

    Returns:
        vertex_mass, shape (vertex_count,) [kg]; vertices in no tet get 0. Deterministic (np.add.at).
    """
    X = np.asarray(vertices, dtype=FLOAT)
    tets = np.asarray(tet_indices, dtype=INDEX)
    _, volume = compute_rest_shape(X, tets)
    full_tet = np.broadcast_to(np.asarray(density, dtype=FLOAT), volume.shape) * volume
    full = np.zeros(X.shape[0], dtype=FLOAT)
    filled = np.zeros(X.shape[0], dtype=FLOAT)
    fraction = np.asarray(tet_fraction, dtype=FLOAT)
    for k in range(4):
        np.add.at(full, tets[:, k], 0.25 * full_tet)
        np.add.at(filled, tets[:, k], 0.25 * fraction * full_tet)
    floored = np.maximum(filled, MIN_NODE_MASS_FRACTION * full)
    return floored * (filled.sum() / floored.sum())


def lame_parameters(youngs_modulus, poisson_ratio):
    """Lamé parameters from Young's modulus E [Pa] and Poisson ratio nu [dimensionless].

    ``mu = E / (2 (1 + nu))``, ``lambda = E nu / ((1 + nu)(1 - 2 nu))``, both [Pa].
    Requires ``E > 0`` and ``-1 < nu < 0.5``.
    """
    E = float(youngs_modulus)
    nu = float(poisson_ratio)
    if not E > 0.0:
        raise ValueError(f"youngs_modulus must be > 0, got {E}")
    if not -1.0 < nu < 0.5:
        raise ValueError(f"poisson_ratio must be in (-1, 0.5), got {nu}")
    mu = E / (2.0 * (1.0 + nu))
    lam = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    return mu, lam


@njit_kernel
def deformation_gradient(x, tet, Dm_inv, out):
    """Deformation gradient ``F = Ds Dm^-1`` of one tet.

    Args:
        x: current positions, shape (vertex_count, 3) [m].
        tet: the tet's 4 vertex indices, shape (4,), int32.
        Dm_inv: the tet's ``Dm^-1``, shape (3, 3) [1/m].
        out: F, shape (3, 3) [dimensionless] (output).
    """
    i0 = tet[0]
    for i in range(3):
        d1 = x[tet[1], i] - x[i0, i]
        d2 = x[tet[2], i] - x[i0, i]
        d3 = x[tet[3], i] - x[i0, i]
        for j in range(3):
            # F_ij = sum_k Ds_ik (Dm^-1)_kj
            out[i, j] = d1 * Dm_inv[0, j] + d2 * Dm_inv[1, j] + d3 * Dm_inv[2, j]


# --------------------------------------------------------------------------------------------
# Chain rule from F to the 12 nodal coordinates of a tet
# --------------------------------------------------------------------------------------------


@njit_kernel
def deformation_gradient_jacobian(Dm_inv, out):
    """The constant map ``D = d vec(F) / dx`` (9x12), ``D[3i+j, 3a+i] = G[a, j]`` (output).

    ``G[a, j] = Dm^-1[a-1, j]`` for nodes a = 1..3 and ``G[0, j] = -sum_k Dm^-1[k, j]``.
    """
    for r in range(9):
        for c in range(12):
            out[r, c] = 0.0
    for j in range(3):
        g0 = -(Dm_inv[0, j] + Dm_inv[1, j] + Dm_inv[2, j])
        for i in range(3):
            out[3 * i + j, i] = g0
            for a in range(1, 4):
                out[3 * i + j, 3 * a + i] = Dm_inv[a - 1, j]


@njit_kernel
def tet_node_weights(Dm_inv, G):
    """``G[a, j] = dF_ij / dx_a,i`` for the 4 nodes, shape (4, 3) (output; uses a (3,3)+ view)."""
    for j in range(3):
        G[0, j] = -(Dm_inv[0, j] + Dm_inv[1, j] + Dm_inv[2, j])
        G[1, j] = Dm_inv[0, j]
        G[2, j] = Dm_inv[1, j]
        G[3, j] = Dm_inv[2, j]


@njit_kernel
def tet_gradient_from_stress(P, Dm_inv, rest_volume, G, out):
    """Nodal gradient ``dE/dx = V D^T vec(P)`` [N], shape (12,) (output); G scratch (4, 3)."""
    tet_node_weights(Dm_inv, G)
    for a in range(4):
        for i in range(3):
            out[3 * a + i] = rest_volume * (P[i, 0] * G[a, 0] + P[i, 1] * G[a, 1] + P[i, 2] * G[a, 2])


@njit_kernel
def tet_hessian_from_tangent(dPdF, Dm_inv, rest_volume, G, out):
    """Nodal Hessian ``V D^T (dP/dF) D`` [N/m], shape (12, 12) (output); G scratch (4, 3).

    ``H[3a+i, 3b+k] = V sum_{j,l} dPdF[3i+j, 3k+l] G[a, j] G[b, l]``.
    """
    tet_node_weights(Dm_inv, G)
    for i in range(3):
        for k in range(3):
            for a in range(4):
                for b in range(4):
                    acc = 0.0
                    for j in range(3):
                        gaj = G[a, j]
                        for ell in range(3):
                            acc += dPdF[3 * i + j, 3 * k + ell] * gaj * G[b, ell]
                    out[3 * a + i, 3 * b + k] = rest_volume * acc
