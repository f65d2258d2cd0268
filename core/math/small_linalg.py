"""Small dense linear algebra of the kernels (FEM materials, contact elements, the IPC Newton system),
hand-written: no BLAS, as Blender ships no SciPy.

- cyclic Jacobi eigensolvers for symmetric n x n (``symmetric_eigen_jacobi``) and 3x3
  (``symmetric_eigen3``) matrices, and the PSD projection ``project_psd`` (negative eigenvalues clamped to 0);
- ``inverse3`` (by cofactors), ``det3``, the cofactor matrix ``cof(F) = dJ/dF`` and ``H_J = d^2 J / dF^2``
  (``add_det_hessian``);
- the rotation-variant SVD ``F = U diag(sigma) V^T`` (McAdams et al. 2011) and the polar rotation.

Matrices are float64; 3x3 matrices are flattened row-major where a 9-vector is needed,
``vec(F)[3*i + j] = F[i, j]``.
"""

import numpy as np

from ..jit import njit_kernel

JACOBI_MAX_SWEEPS = 50
"""Upper bound on cyclic Jacobi sweeps (quadratic convergence: 12x12 needs ~6-10)."""

SVD_MAX_SWEEPS = 12
"""Upper bound on one-sided Jacobi sweeps of ``svd3_rotation_variant`` (typically 3-5)."""

SVD_TOLERANCE = 1.0e-15
"""Columns ``b_p, b_q`` of ``F V`` count as orthogonal when ``|b_p . b_q| <= SVD_TOLERANCE |b_p| |b_q|``."""

SVD_TINY = 1.0e-150
"""Column norms below this (F is dimensionless, ~1) are treated as zero when building U."""


@njit_kernel
def _jacobi_rotation(app, aqq, apq):
    """``(t, c, s)`` of the Jacobi rotation P (P_pp = P_qq = c, P_pq = s, P_qp = -s) zeroing ``a_pq`` in
    P^T A P (Numerical Recipes): ``theta = (a_qq - a_pp) / (2 a_pq)``, ``t = tan(phi)`` the smaller root of
    ``t^2 + 2 t theta - 1 = 0``; ``a_pq != 0``."""
    theta = (aqq - app) / (2.0 * apq)
    if abs(theta) > 1.0e150:
        t = 0.5 / theta
    else:
        t = 1.0 / (abs(theta) + np.sqrt(theta * theta + 1.0))
        if theta < 0.0:
            t = -t
    c = 1.0 / np.sqrt(t * t + 1.0)
    return t, c, t * c


@njit_kernel
def symmetric_eigen_jacobi(A, eigenvalues, eigenvectors, work):
    """Eigen-decomposition of a symmetric n x n matrix by the cyclic Jacobi method.

    ``A = Q diag(eigenvalues) Q^T`` with orthonormal columns ``Q = eigenvectors``; eigenvalues are
    not sorted. Deterministic (fixed sweep order), accurate to ~machine precision relative to
    ``||A||_F``.

    Args:
        A: symmetric matrix, shape (n, n) (only read).
        eigenvalues: shape (n,) (output).
        eigenvectors: shape (n, n), column k is the k-th eigenvector (output).
        work: scratch, shape (n, n); receives the (almost) diagonalised copy of A.

    Returns:
        number of sweeps used.
    """
    n = A.shape[0]
    frob2 = 0.0
    for i in range(n):
        for j in range(n):
            work[i, j] = A[i, j]
            eigenvectors[i, j] = 1.0 if i == j else 0.0
            frob2 += A[i, j] * A[i, j]
    sweeps = 0
    for _ in range(JACOBI_MAX_SWEEPS):
        off2 = 0.0
        for p in range(n - 1):
            for q in range(p + 1, n):
                off2 += work[p, q] * work[p, q]
        if off2 <= 1.0e-30 * frob2 or off2 == 0.0:
            break
        sweeps += 1
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = work[p, q]
                if apq == 0.0:
                    continue
                t, c, s = _jacobi_rotation(work[p, p], work[q, q], apq)
                for k in range(n):
                    akp = work[k, p]
                    akq = work[k, q]
                    work[k, p] = c * akp - s * akq
                    work[k, q] = s * akp + c * akq
                for k in range(n):
                    apk = work[p, k]
                    aqk = work[q, k]
                    work[p, k] = c * apk - s * aqk
                    work[q, k] = s * apk + c * aqk
                work[p, q] = 0.0
                work[q, p] = 0.0
                for k in range(n):
                    vkp = eigenvectors[k, p]
                    vkq = eigenvectors[k, q]
                    eigenvectors[k, p] = c * vkp - s * vkq
                    eigenvectors[k, q] = s * vkp + c * vkq
    for i in range(n):
        eigenvalues[i] = work[i, i]
    return sweeps


@njit_kernel
def _jacobi3_rotate(A, Q, p, q, r):
    """One Jacobi rotation of the symmetric 3x3 ``A`` (in place) zeroing ``A[p, q]``; r is the third index.

    Same rotation as ``symmetric_eigen_jacobi`` (Numerical Recipes form with ``tau = s / (1 + c)``);
    the eigenvector columns ``Q[:, p], Q[:, q]`` are rotated alongside.
    """
    apq = A[p, q]
    if apq == 0.0:
        return
    t, c, s = _jacobi_rotation(A[p, p], A[q, q], apq)
    A[p, p] -= t * apq
    A[q, q] += t * apq
    A[p, q] = 0.0
    A[q, p] = 0.0
    arp = A[r, p]
    arq = A[r, q]
    A[r, p] = c * arp - s * arq
    A[p, r] = A[r, p]
    A[r, q] = s * arp + c * arq
    A[q, r] = A[r, q]
    for k in range(3):
        vkp = Q[k, p]
        vkq = Q[k, q]
        Q[k, p] = c * vkp - s * vkq
        Q[k, q] = s * vkp + c * vkq


@njit_kernel
def symmetric_eigen3(A, eigenvalues, eigenvectors):
    """Cyclic Jacobi eigen-decomposition of a symmetric 3x3 matrix, ``A = Q diag(l) Q^T``.

    The 3x3 specialisation of ``symmetric_eigen_jacobi`` (same rotations and stopping rule
    ``off(A)^2 <= 1e-30 ||A||_F^2``), without the generic loops. Eigenvalues are not sorted.

    Args:
        A: (3, 3) symmetric; overwritten (ends (almost) diagonal).
        eigenvalues: (3,) (output).
        eigenvectors: (3, 3), column k is the k-th eigenvector (output).
    """
    frob2 = 0.0
    for i in range(3):
        for j in range(3):
            eigenvectors[i, j] = 1.0 if i == j else 0.0
            frob2 += A[i, j] * A[i, j]
    for _ in range(JACOBI_MAX_SWEEPS):
        off2 = A[0, 1] * A[0, 1] + A[0, 2] * A[0, 2] + A[1, 2] * A[1, 2]
        if off2 <= 1.0e-30 * frob2 or off2 == 0.0:
            break
        _jacobi3_rotate(A, eigenvectors, np.int64(0), np.int64(1), np.int64(2))
        _jacobi3_rotate(A, eigenvectors, np.int64(0), np.int64(2), np.int64(1))
        _jacobi3_rotate(A, eigenvectors, np.int64(1), np.int64(2), np.int64(0))
    for i in range(3):
        eigenvalues[i] = A[i, i]


@njit_kernel
def project_psd(H, eigenvalues, eigenvectors, work, out):
    """Nearest (Frobenius) positive semi-definite matrix: clamp negative eigenvalues to 0.

    ``out = Q diag(max(l_i, 0)) Q^T`` with ``H = Q diag(l) Q^T`` (cyclic Jacobi). Eigenvectors
    are preserved. ``out`` may alias ``H``.

    Args:
        H: symmetric matrix, shape (n, n).
        eigenvalues: scratch (n,); on return the eigenvalues of H (unclamped).
        eigenvectors: scratch (n, n); on return the eigenvectors of H (columns).
        work: scratch (n, n).
        out: projected matrix, shape (n, n) (output).

    Returns:
        True if any eigenvalue was clamped.
    """
    n = H.shape[0]
    symmetric_eigen_jacobi(H, eigenvalues, eigenvectors, work)
    clamped = False
    for k in range(n):
        if eigenvalues[k] < 0.0:
            clamped = True
    for i in range(n):
        for j in range(i, n):
            acc = 0.0
            for k in range(n):
                lk = eigenvalues[k]
                if lk > 0.0:
                    acc += eigenvectors[i, k] * lk * eigenvectors[j, k]
            out[i, j] = acc
            out[j, i] = acc
    return clamped


@njit_kernel
def det3(F):
    """Determinant of a 3x3 matrix (cofactor expansion along the first row)."""
    return (
        F[0, 0] * (F[1, 1] * F[2, 2] - F[1, 2] * F[2, 1])
        - F[0, 1] * (F[1, 0] * F[2, 2] - F[1, 2] * F[2, 0])
        + F[0, 2] * (F[1, 0] * F[2, 1] - F[1, 1] * F[2, 0])
    )


@njit_kernel
def cofactor3(F, out):
    """Cofactor matrix ``cof(F) = dJ/dF = J F^-T`` (valid for singular F), shape (3, 3) (output)."""
    out[0, 0] = F[1, 1] * F[2, 2] - F[1, 2] * F[2, 1]
    out[0, 1] = F[1, 2] * F[2, 0] - F[1, 0] * F[2, 2]
    out[0, 2] = F[1, 0] * F[2, 1] - F[1, 1] * F[2, 0]
    out[1, 0] = F[0, 2] * F[2, 1] - F[0, 1] * F[2, 2]
    out[1, 1] = F[0, 0] * F[2, 2] - F[0, 2] * F[2, 0]
    out[1, 2] = F[0, 1] * F[2, 0] - F[0, 0] * F[2, 1]
    out[2, 0] = F[0, 1] * F[1, 2] - F[0, 2] * F[1, 1]
    out[2, 1] = F[0, 2] * F[1, 0] - F[0, 0] * F[1, 2]
    out[2, 2] = F[0, 0] * F[1, 1] - F[0, 1] * F[1, 0]


@njit_kernel
def _levi_civita_sign(i, k):
    """eps_{i k m} for i != k with m = 3 - i - k: +1 for cyclic (i, k, m), -1 otherwise."""
    return 1.0 if (k - i) % 3 == 1 else -1.0


@njit_kernel
def add_det_hessian(F, scale, out):
    """``out += scale * d^2 det(F) / dF^2`` (9x9), ``H_J[3i+j, 3k+l] = eps_ikm eps_jln F_mn``."""
    for i in range(3):
        for k in range(3):
            if i == k:
                continue
            m = 3 - i - k
            sik = _levi_civita_sign(i, k)
            for j in range(3):
                for ell in range(3):
                    if j == ell:
                        continue
                    n = 3 - j - ell
                    out[3 * i + j, 3 * k + ell] += scale * sik * _levi_civita_sign(j, ell) * F[m, n]


@njit_kernel
def svd3_rotation_variant(F, U, sigma, V, work):
    """Rotation-variant SVD ``F = U diag(sigma) V^T`` with det U = det V = +1 (McAdams et al. 2011).

    ``sigma`` is sorted by magnitude, ``|s0| >= |s1| >= |s2|``; only ``s2`` may be negative (when
    det F < 0). V: one-sided (Hestenes) cyclic Jacobi on the columns of ``B = F V`` -- plane
    rotations of column pairs until ``|b_p . b_q| <= SVD_TOLERANCE |b_p| |b_q|`` -- then columns
    sorted by norm and ``v2 = -v2`` if det V < 0. U: ``u0 = b0 / |b0|``, ``u1`` Gram-Schmidt of
    ``b1`` against ``u0``, ``u2 = u0 x u1``; ``sigma_i = u_i . b_i``. Unlike eigenvectors of
    ``F^T F`` (whose rounding is relative to ``s0^2``), the columns ``b_i`` are orthogonal relative
    to their own norms, so ``F - U diag(sigma) V^T`` is ~1e-16 ``|s_i|`` per singular pair even
    for near-rank-1 F. A zero ``b0`` (F = 0) takes ``u0 = e_x``; a zero ``b1`` any unit vector
    orthogonal to ``u0``.

    Args:
        F: (3, 3).
        U, V: (3, 3) rotations (output).
        sigma: (3,) (output).
        work: scratch (WORK_MATRICES, 3, 3); uses work[0].
    """
    B = work[0]
    _one_sided_jacobi(F, B, V)
    _sort_columns_by_norm(B, V, sigma)
    if det3(V) < 0.0:
        for r in range(3):
            V[r, 2] = -V[r, 2]
            B[r, 2] = -B[r, 2]
    _left_singular_vectors(B, U, sigma)


@njit_kernel
def _one_sided_jacobi(F, B, V):
    """``B = F V`` with orthogonal columns: cyclic plane rotations of column pairs (``V`` accumulates them,
    starting from identity) until ``|b_p . b_q| <= SVD_TOLERANCE |b_p| |b_q|`` or ``SVD_MAX_SWEEPS``."""
    for i in range(3):
        for j in range(3):
            B[i, j] = F[i, j]
            V[i, j] = 1.0 if i == j else 0.0
    for _ in range(SVD_MAX_SWEEPS):
        rotated = False
        for pair in range(3):
            p = 0 if pair < 2 else 1
            q = 2 if pair > 0 else 1
            alpha = B[0, p] * B[0, p] + B[1, p] * B[1, p] + B[2, p] * B[2, p]
            beta = B[0, q] * B[0, q] + B[1, q] * B[1, q] + B[2, q] * B[2, q]
            gamma = B[0, p] * B[0, q] + B[1, p] * B[1, q] + B[2, p] * B[2, q]
            if gamma == 0.0 or abs(gamma) <= SVD_TOLERANCE * np.sqrt(alpha * beta):
                continue
            rotated = True
            # Jacobi rotation of the Gram matrix [[alpha, gamma], [gamma, beta]] applied to the columns
            # (same convention as ``symmetric_eigen_jacobi``).
            _, c, s = _jacobi_rotation(alpha, beta, gamma)
            for k in range(3):
                bkp = B[k, p]
                bkq = B[k, q]
                B[k, p] = c * bkp - s * bkq
                B[k, q] = s * bkp + c * bkq
                vkp = V[k, p]
                vkq = V[k, q]
                V[k, p] = c * vkp - s * vkq
                V[k, q] = s * vkp + c * vkq
        if not rotated:
            break


@njit_kernel
def _sort_columns_by_norm(B, V, sigma):
    """Sort the columns of ``B`` and ``V`` together by ``|b_i|``, descending; ``sigma`` (3,) gets ``|b_i|^2``
    (3-element bubble sort)."""
    for i in range(3):
        sigma[i] = B[0, i] * B[0, i] + B[1, i] * B[1, i] + B[2, i] * B[2, i]
    for a in range(2):
        for b in range(2 - a):
            if sigma[b] < sigma[b + 1]:
                tmp = sigma[b]
                sigma[b] = sigma[b + 1]
                sigma[b + 1] = tmp
                for r in range(3):
                    tmp = V[r, b]
                    V[r, b] = V[r, b + 1]
                    V[r, b + 1] = tmp
                    tmp = B[r, b]
                    B[r, b] = B[r, b + 1]
                    B[r, b + 1] = tmp


@njit_kernel
def _left_singular_vectors(B, U, sigma):
    """``U`` from the sorted orthogonal columns of ``B = F V``: ``u0 = b0 / |b0|`` (``e_x`` if ``b0 = 0``),
    ``u1`` Gram-Schmidt of ``b1`` against ``u0`` (any orthogonal unit vector if ``b1 ~ 0``), ``u2 = u0 x u1``;
    then ``sigma_i = u_i . b_i`` (signed). ``sigma`` holds ``|b_i|^2`` on entry."""
    n0 = np.sqrt(sigma[0])
    if n0 > SVD_TINY:
        for r in range(3):
            U[r, 0] = B[r, 0] / n0
    else:
        U[0, 0] = 1.0
        U[1, 0] = 0.0
        U[2, 0] = 0.0
    d = U[0, 0] * B[0, 1] + U[1, 0] * B[1, 1] + U[2, 0] * B[2, 1]
    for r in range(3):
        U[r, 1] = B[r, 1] - d * U[r, 0]
    n1 = np.sqrt(U[0, 1] ** 2 + U[1, 1] ** 2 + U[2, 1] ** 2)
    if n1 > SVD_TINY:
        for r in range(3):
            U[r, 1] /= n1
    else:
        # b1 ~ 0: any unit vector orthogonal to u0 (cross with the least aligned axis).
        ax = 0
        if abs(U[1, 0]) < abs(U[ax, 0]):
            ax = 1
        if abs(U[2, 0]) < abs(U[ax, 0]):
            ax = 2
        e0 = 1.0 if ax == 0 else 0.0
        e1 = 1.0 if ax == 1 else 0.0
        e2 = 1.0 if ax == 2 else 0.0
        c0 = U[1, 0] * e2 - U[2, 0] * e1
        c1 = U[2, 0] * e0 - U[0, 0] * e2
        c2 = U[0, 0] * e1 - U[1, 0] * e0
        nc = np.sqrt(c0 * c0 + c1 * c1 + c2 * c2)
        U[0, 1] = c0 / nc
        U[1, 1] = c1 / nc
        U[2, 1] = c2 / nc
    U[0, 2] = U[1, 0] * U[2, 1] - U[2, 0] * U[1, 1]
    U[1, 2] = U[2, 0] * U[0, 1] - U[0, 0] * U[2, 1]
    U[2, 2] = U[0, 0] * U[1, 1] - U[1, 0] * U[0, 1]
    for j in range(3):
        sigma[j] = U[0, j] * B[0, j] + U[1, j] * B[1, j] + U[2, j] * B[2, j]


@njit_kernel
def polar_rotation(F, R, sigma, V, work):
    """Rotation R (det +1) of the polar decomposition ``F = R S`` via the rotation-variant SVD.

    Args:
        F: (3, 3).
        R: (3, 3) rotation ``U V^T`` (output).
        sigma: (3,) signed singular values (output).
        V: (3, 3) right singular vectors (output); ``S = V diag(sigma) V^T``.
        work: scratch (WORK_MATRICES, 3, 3); uses work[0..2].
    """
    U = work[2]
    svd3_rotation_variant(F, U, sigma, V, work)
    for i in range(3):
        for j in range(3):
            R[i, j] = U[i, 0] * V[j, 0] + U[i, 1] * V[j, 1] + U[i, 2] * V[j, 2]


@njit_kernel
def inverse3(M, out):
    """``out = M^-1`` (3x3) by cofactors; returns det(M)."""
    c00 = M[1, 1] * M[2, 2] - M[1, 2] * M[2, 1]
    c01 = M[1, 2] * M[2, 0] - M[1, 0] * M[2, 2]
    c02 = M[1, 0] * M[2, 1] - M[1, 1] * M[2, 0]
    det = M[0, 0] * c00 + M[0, 1] * c01 + M[0, 2] * c02
    inv = 1.0 / det
    out[0, 0] = c00 * inv
    out[1, 0] = c01 * inv
    out[2, 0] = c02 * inv
    out[0, 1] = (M[0, 2] * M[2, 1] - M[0, 1] * M[2, 2]) * inv
    out[1, 1] = (M[0, 0] * M[2, 2] - M[0, 2] * M[2, 0]) * inv
    out[2, 1] = (M[0, 1] * M[2, 0] - M[0, 0] * M[2, 1]) * inv
    out[0, 2] = (M[0, 1] * M[1, 2] - M[0, 2] * M[1, 1]) * inv
    out[1, 2] = (M[0, 2] * M[1, 0] - M[0, 0] * M[1, 2]) * inv
    out[2, 2] = (M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]) * inv
    return det
