"""Analytic eigensystem of the material tangent ``dP/dF`` (Smith, De Goes, Kim 2019, "Analytic Eigensystems for
Isotropic Distortion Energies") and the PSD-projected per-tet Hessian built from it.

In the basis ``u_i v_j^T`` of the rotation-variant SVD ``F = U diag(sigma) V^T``, ``dP/dF`` splits into 3 twist
and 3 flip modes with closed-form eigenvalues and a 3x3 block ``d^2 psi / ds^2`` over the singular values
(LDL^T when positive definite, else a 3x3 Jacobi). The projected modes go straight through the chain rule
(``tet_hessian_from_eigensystem``), see :mod:`.materials` for the overview.
"""

import numpy as np

from ..jit import njit_kernel
from ..math.small_linalg import svd3_rotation_variant, symmetric_eigen3
from .tet_mesh import tet_node_weights


@njit_kernel
def singular_value_hessian(F, mu, lam, material, work, U, sigma, V, K, eigenvalues):
    """SVD of F, the 3x3 scaling block ``K = d^2 psi / ds^2`` and the 6 twist/flip eigenvalues.

    The closed forms are listed in ``material_eigensystem``; this is its first half, shared with
    ``elastic_hessian_blocks`` (which factors K with ``scaling_block_factor`` instead).

    Args:
        F: (3, 3) deformation gradient.
        mu, lam: Lamé parameters [Pa]; material: int ``MaterialModel`` (NONE gives zeros).
        work: scratch (WORK_MATRICES, 3, 3); uses work[0].
        U, V: (3, 3) rotations, sigma: (3,) signed singular values of F (output).
        K: (3, 3) [Pa] symmetric scaling block (output).
        eigenvalues: (9,) [Pa]; entries [3:6] twist k = 0, 1, 2 and [6:9] flip are written (output).
    """
    svd3_rotation_variant(F, U, sigma, V, work)
    s0 = sigma[0]
    s1 = sigma[1]
    s2 = sigma[2]
    J = s0 * s1 * s2
    g0 = s1 * s2
    g1 = s0 * s2
    g2 = s0 * s1
    if material == 1:
        mu_s = 4.0 / 3.0 * mu
        lam_s = lam + 5.0 / 6.0 * mu
        Ic1 = s0 * s0 + s1 * s1 + s2 * s2 + 1.0
        diag = mu_s * (1.0 - 1.0 / Ic1)
        c = 2.0 * mu_s / (Ic1 * Ic1)
        b = lam_s * (J - 1.0) - 0.75 * mu_s
        gg = lam_s
        for k in range(3):
            eigenvalues[3 + k] = diag + b * sigma[k]
            eigenvalues[6 + k] = diag - b * sigma[k]
    elif material == 2:
        diag = 2.0 * mu
        c = 0.0
        b = lam * (J - 1.0)
        gg = lam
        # s_i + s_j clamped exactly as in corotated_hessian.
        tiny = 1.0e-12 * max(abs(s0), 1.0e-300)
        for k in range(3):
            d = sigma[(k + 1) % 3] + sigma[(k + 2) % 3]
            if abs(d) < tiny:
                d = tiny if d >= 0.0 else -tiny
            eigenvalues[3 + k] = diag - 4.0 * mu / d + b * sigma[k]
            eigenvalues[6 + k] = diag - b * sigma[k]
    elif material == 3:
        # psi_i = mu s_i + b h_i with h = 1/s = d log J / ds, b = lam log J - mu (J > 0: all s_i > 0).
        b = lam * np.log(J) - mu
        for k in range(3):
            hij = 1.0 / (sigma[(k + 1) % 3] * sigma[(k + 2) % 3])
            eigenvalues[3 + k] = mu + b * hij
            eigenvalues[6 + k] = mu - b * hij
        # K = mu Id - b diag(h^2) + lam h h^T (not the shared form below).
        for i in range(3):
            hi = 1.0 / sigma[i]
            for j in range(3):
                K[i, j] = lam * hi / sigma[j]
            K[i, i] += mu - b * hi * hi
        return
    else:
        diag = 0.0
        c = 0.0
        b = 0.0
        gg = 0.0
        for k in range(3, 9):
            eigenvalues[k] = 0.0
    # K = diag Id + c s s^T + gg g g^T + b [[0, s2, s1], [s2, 0, s0], [s1, s0, 0]]
    K[0, 0] = diag + c * s0 * s0 + gg * g0 * g0
    K[1, 1] = diag + c * s1 * s1 + gg * g1 * g1
    K[2, 2] = diag + c * s2 * s2 + gg * g2 * g2
    K[0, 1] = c * s0 * s1 + gg * g0 * g1 + b * s2
    K[0, 2] = c * s0 * s2 + gg * g0 * g2 + b * s1
    K[1, 2] = c * s1 * s2 + gg * g1 * g2 + b * s0
    K[1, 0] = K[0, 1]
    K[2, 0] = K[0, 2]
    K[2, 1] = K[1, 2]


@njit_kernel
def material_eigensystem(F, mu, lam, material, work, U, sigma, V, eigenvalues, scaling_vectors):
    """Closed-form eigen-decomposition of the tangent ``dP/dF`` (9x9) of an isotropic material.

    Smith, De Goes, Kim 2019, "Analytic Eigensystems for Isotropic Distortion Energies" (ACM TOG
    38(1)); also Kim & Eberle, "Dynamic Deformables" (SIGGRAPH course notes). With the
    rotation-variant SVD ``F = U diag(s) V^T`` and ``Psi(F) = psi(s0, s1, s2)``, the 9x9 tangent
    is diagonal-by-blocks in the orthonormal basis ``u_i v_j^T`` of 3x3 matrices (row-major vec):

    - **twist** ``T_k = (u_i v_j^T - u_j v_i^T) / sqrt(2)`` and **flip**
      ``L_k = (u_i v_j^T + u_j v_i^T) / sqrt(2)`` for the pair ``(i, j) = (k+1, k+2) mod 3``, with
      ``lambda_T,k = (psi_i + psi_j) / (s_i + s_j)``, ``lambda_L,k = (psi_i - psi_j) / (s_i - s_j)``
      (``psi_i = dpsi/ds_i``);
    - **scaling** ``U diag(q_m) V^T`` for the eigenpairs ``(lambda_m, q_m)`` of the 3x3 Hessian
      ``K = d^2 psi / ds^2`` (``symmetric_eigen3``).

    All materials here give twist/flip eigenvalues free of ``1 / (s_i -+ s_j)`` except the corotated
    twist, so repeated singular values need no limits. With ``g = (s1 s2, s0 s2, s0 s1) = dJ/ds``,
    ``J = s0 s1 s2``, ``I_C = |s|^2`` and k the index outside the pair:

    - stable neo-Hookean: ``psi_i = a s_i + b g_i``, ``a = mu'(1 - 1/(I_C+1))``,
      ``b = lam'(J - 1) - 3 mu'/4``, ``c = 2 mu' / (I_C+1)^2`` (see the module docstring):
      ``lambda_T,k = a + b s_k``, ``lambda_L,k = a - b s_k``,
      ``K = a Id + c s s^T + lam' g g^T + b [[0, s2, s1], [s2, 0, s0], [s1, s0, 0]]``;
    - fixed corotated: ``psi_i = 2 mu (s_i - 1) + b g_i``, ``b = lam (J - 1)``:
      ``lambda_T,k = 2 mu - 4 mu / (s_i + s_j) + b s_k``, ``lambda_L,k = 2 mu - b s_k``,
      ``K = 2 mu Id + lam g g^T + b [[0, s2, s1], [s2, 0, s0], [s1, s0, 0]]``; ``s_i + s_j`` is
      clamped exactly as in ``corotated_hessian`` so the eigensystem reproduces that tangent;
    - neo-Hookean (J > 0, so every s_i > 0): ``psi_i = mu s_i + b / s_i``, ``b = lam log J - mu``:
      ``lambda_T,k = mu + b / (s_i s_j)``, ``lambda_L,k = mu - b / (s_i s_j)``,
      ``K_ii = mu + (lam - b) / s_i^2``, ``K_ij = lam / (s_i s_j)`` (i != j); NaN/inf for J <= 0.

    ``material`` NONE gives all-zero eigenvalues.

    Args:
        F: (3, 3) deformation gradient.
        mu, lam: Lamé parameters [Pa].
        material: int ``MaterialModel``.
        work: scratch (WORK_MATRICES, 3, 3); uses work[0], work[1], work[3].
        U, V: (3, 3) rotations of the SVD (output).
        sigma: (3,) signed singular values (output).
        eigenvalues: (9,) [Pa] (output): [0:3] scaling (eigenvalues of K, unsorted), [3:6] twist
            k = 0, 1, 2, [6:9] flip k = 0, 1, 2. Not clamped.
        scaling_vectors: (3, 3) (output); column m is ``q_m`` for ``eigenvalues[m]``.
    """
    K = work[1]
    singular_value_hessian(F, mu, lam, material, work, U, sigma, V, K, eigenvalues)
    ev3 = work[3, 0]
    symmetric_eigen3(K, ev3, scaling_vectors)
    for m in range(3):
        eigenvalues[m] = ev3[m]


@njit_kernel
def scaling_block_factor(K, weights, vectors):
    """``K = S diag(d) S^T`` for the 3x3 scaling block: LDL^T if K is positive definite, else eigen.

    If all three LDL^T pivots are positive, K needs no projection and ``S`` is the unit lower
    triangular factor, ``d`` the pivots (no iteration; ``sum_m d_m y_m y_m^T`` with ``d > 0`` is
    PSD by construction). Otherwise ``S, d`` are the eigenvectors and eigenvalues
    (``symmetric_eigen3``) and the caller clamps ``d``. Either way ``sum_m d_m s_m s_m^T = K``,
    and ``sum_m max(d_m, 0) s_m s_m^T`` is the PSD projection of K.

    Args:
        K: (3, 3) symmetric; overwritten only on the eigen path.
        weights: (3,) ``d`` (output). vectors: (3, 3) ``S``, columns ``s_m`` (output).

    Returns:
        True if the LDL^T path was taken (K positive definite).
    """
    d0 = K[0, 0]
    if d0 > 0.0:
        l10 = K[1, 0] / d0
        l20 = K[2, 0] / d0
        d1 = K[1, 1] - l10 * K[1, 0]
        if d1 > 0.0:
            l21 = (K[2, 1] - l20 * K[1, 0]) / d1
            d2 = K[2, 2] - l20 * K[2, 0] - l21 * l21 * d1
            if d2 > 0.0:
                weights[0] = d0
                weights[1] = d1
                weights[2] = d2
                vectors[0, 0] = 1.0
                vectors[1, 0] = l10
                vectors[2, 0] = l20
                vectors[0, 1] = 0.0
                vectors[1, 1] = 1.0
                vectors[2, 1] = l21
                vectors[0, 2] = 0.0
                vectors[1, 2] = 0.0
                vectors[2, 2] = 1.0
                return True
    symmetric_eigen3(K, weights, vectors)
    return False


@njit_kernel
def eigen_modes(U, V, scaling_vectors, modes):
    """The 9 orthonormal eigenmatrices of ``material_eigensystem`` as rows ``modes[m] = vec(Q_m)``.

    Order as ``eigenvalues``: scaling ``U diag(q_m) V^T``, twist ``T_k``, flip ``L_k``.

    Args:
        U, V: (3, 3) rotations; scaling_vectors: (3, 3) columns ``q_m``.
        modes: (9, 9) (output), row-major vec of each 3x3 eigenmatrix.
    """
    h = np.sqrt(0.5)
    for r in range(3):
        for c in range(3):
            e = 3 * r + c
            for m in range(3):
                modes[m, e] = (
                    scaling_vectors[0, m] * U[r, 0] * V[c, 0]
                    + scaling_vectors[1, m] * U[r, 1] * V[c, 1]
                    + scaling_vectors[2, m] * U[r, 2] * V[c, 2]
                )
            for k in range(3):
                i = (k + 1) % 3
                j = (k + 2) % 3
                a = U[r, i] * V[c, j]
                b = U[r, j] * V[c, i]
                modes[3 + k, e] = h * (a - b)
                modes[6 + k, e] = h * (a + b)


@njit_kernel
def tangent_from_eigensystem(U, V, eigenvalues, scaling_vectors, project, modes, out):
    """9x9 ``sum_m l_m vec(Q_m) vec(Q_m)^T`` [Pa] with ``l_m = max(lambda_m, 0)`` if ``project``.

    Without ``project`` this reconstructs ``dP/dF``; with it, its PSD projection.

    Args:
        U, V, eigenvalues, scaling_vectors: from ``material_eigensystem``.
        project: bool, clamp negative eigenvalues to 0.
        modes: scratch (9, 9).
        out: (9, 9) (output).
    """
    eigen_modes(U, V, scaling_vectors, modes)
    for r in range(9):
        for s in range(r, 9):
            acc = 0.0
            for m in range(9):
                lm = eigenvalues[m]
                if project and lm <= 0.0:
                    continue
                acc += lm * modes[m, r] * modes[m, s]
            out[r, s] = acc
            out[s, r] = acc


@njit_kernel
def projected_pk1_stress_derivative(F, mu, lam, material, work, out):
    """PSD projection of the tangent ``dP/dF`` [Pa], shape (9, 9) (output), from the analytic
    eigensystem (``material_eigensystem``); equals ``project_psd`` of ``pk1_stress_derivative``.

    Uses work[0], work[1], work[3..6] and work[7, 0] (U, V, scaling vectors and sigma in work[4],
    work[5], work[6], work[7, 0]); allocates its 9 eigenvalues and 9x9 modes (per-tet convenience
    and test kernel, not the batch path).
    """
    U = work[4]
    V = work[5]
    Q = work[6]
    sigma = work[7, 0]
    ev = np.empty(9, dtype=np.float64)
    modes = np.empty((9, 9), dtype=np.float64)
    material_eigensystem(F, mu, lam, material, work, U, sigma, V, ev, Q)
    tangent_from_eigensystem(U, V, ev, Q, np.bool_(True), modes, out)


@njit_kernel
def tet_hessian_from_eigensystem(U, V, eigenvalues, scaling_vectors, Dm_inv, rest_volume, project, G, Z, coef, out):
    """Nodal Hessian ``V_t D^T (sum_m l_m vec(Q_m) vec(Q_m)^T) D`` [N/m], shape (12, 12) (output).

    ``l_m = max(lambda_m, 0)`` if ``project`` (PSD block), else ``lambda_m`` (the exact Hessian).
    Never forms the 9x9: each eigenmatrix is pushed through the chain rule, ``z_m = D^T vec(Q_m)``,
    using ``D^T vec(u_i v_j^T) = w_j (x) u_i`` i.e. ``[3a + r] -> w_j[a] u_i[r]`` with
    ``w_j = G v_j`` (4,), then ``H = V_t sum_m l_m z_m z_m^T`` over the modes with ``l_m != 0``
    (9 x 78 multiply-adds for the upper triangle).

    The scaling modes only need ``sum_m l_m q_m q_m^T`` to be the (projected) 3x3 block, so
    ``eigenvalues[0:3], scaling_vectors`` may also be the LDL^T factor of ``scaling_block_factor``.

    Args:
        U, V, eigenvalues, scaling_vectors: from ``material_eigensystem`` (or
            ``singular_value_hessian`` + ``scaling_block_factor``).
        Dm_inv: (3, 3) [1/m]; rest_volume: V_t [m³]; project: bool.
        G: scratch (4, 3). Z: scratch (9, 12). coef: scratch (9,).
        out: (12, 12) (output).
    """
    tet_node_weights(Dm_inv, G)
    W = G  # in place, row by row: W[a, j] = (G v_j)[a]
    for a in range(4):
        g0 = G[a, 0]
        g1 = G[a, 1]
        g2 = G[a, 2]
        for j in range(3):
            W[a, j] = g0 * V[0, j] + g1 * V[1, j] + g2 * V[2, j]
    h = np.sqrt(0.5)
    # Active modes packed into Z[0:n] with weights coef[0:n] = V_t l_m.
    n = 0
    for m in range(9):
        lm = eigenvalues[m]
        if lm == 0.0 or (project and lm < 0.0):
            continue
        coef[n] = rest_volume * lm
        if m < 3:
            q0 = scaling_vectors[0, m]
            q1 = scaling_vectors[1, m]
            q2 = scaling_vectors[2, m]
            for a in range(4):
                wa0 = q0 * W[a, 0]
                wa1 = q1 * W[a, 1]
                wa2 = q2 * W[a, 2]
                for r in range(3):
                    Z[n, 3 * a + r] = wa0 * U[r, 0] + wa1 * U[r, 1] + wa2 * U[r, 2]
        else:
            k = (m - 3) % 3
            i = (k + 1) % 3
            j = (k + 2) % 3
            sign = -h if m < 6 else h
            for a in range(4):
                wj = h * W[a, j]
                wi = sign * W[a, i]
                for r in range(3):
                    Z[n, 3 * a + r] = wj * U[r, i] + wi * U[r, j]
        n += 1
    for p in range(12):
        for q in range(p, 12):
            out[p, q] = 0.0
    for m in range(n):
        cm = coef[m]
        for p in range(12):
            yp = cm * Z[m, p]
            for q in range(p, 12):
                out[p, q] += yp * Z[m, q]
    for p in range(1, 12):
        for q in range(p):
            out[p, q] = out[q, p]
