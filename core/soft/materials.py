"""Hyperelastic tet materials: energy density, PK1 stress, tangent, nodal gradient/Hessian, PSD projection.

Notation (row-major flattening, see ``core/fem/__init__.py``):

- ``F`` (3,3) deformation gradient, ``J = det F``, ``I_C = tr(F^T F) = ||F||_F^2``;
- ``cof(F) = dJ/dF`` (3,3), columns ``[f1 x f2, f2 x f0, f0 x f1]`` for columns ``f_j`` of F;
- ``H_J = d^2 J / dF^2`` (9x9), ``H_J[3i+j, 3k+l] = eps_ikm eps_jln F_mn`` (linear in F);
- ``P = dPsi/dF`` (3,3) [Pa] first Piola-Kirchhoff stress, ``dP/dF`` (9,9) [Pa] its tangent.

The per-tet energy is ``E = V Psi(F)`` with rest volume V [m³]; F is linear in the 12 nodal
coordinates, ``vec(F) = D x`` with the constant 9x12 map ``D[3i+j, 3a+i] = G[a, j]``,
``G[a>=1, j] = Dm^-1[a-1, j]``, ``G[0, j] = -sum_k Dm^-1[k, j]``. Hence

    dE/dx = V D^T vec(P),     d2E/dx2 = V D^T (dP/dF) D.

Materials (``MaterialModel``; kernels receive ``int(MaterialModel.X)``). All kernels take the
*Lamé* parameters ``mu``, ``lam`` [Pa] of linear elasticity (see ``tet_mesh.lame_parameters``);
all models reproduce linear elasticity with these (mu, lam) in the small-strain limit.

**STABLE_NEOHOOKEAN** -- Smith, de Goes, Kim 2018, "Stable Neo-Hookean Flesh Simulation", ACM TOG
37(2), the paper's final, recommended energy (with the ``log(I_C + 1)`` term that makes the
rest state stress-free together with the shifted volume term):

    Psi = mu'/2 (I_C - 3) + lam'/2 (J - alpha)^2 - mu'/2 log(I_C + 1),
    alpha = 1 + 3 mu' / (4 lam'),
    mu' = 4/3 mu,   lam' = lam + 5/6 mu          (the paper's Lamé reparametrisation)

so that ``dP/dF(I) = mu (delta + T) + lam tr(x)tr`` (linear elasticity). We expand the square
and drop the constant so that Psi(I) = 0 exactly and no division by lam' occurs:

    Psi = mu'/2 (I_C - 3) + lam'/2 (J - 1)^2 - 3 mu'/4 (J - 1) - mu'/2 log((I_C + 1) / 4).

It is a polynomial in F plus ``log(I_C + 1)`` with ``I_C >= 0``: finite and smooth for every F,
including inverted (J <= 0) and collapsed (F = 0) elements.

**COROTATED** -- fixed corotated (Stomakhin et al. 2012, "Energetically consistent invertible
elasticity"): ``Psi = mu ||F - R||_F^2 + lam/2 (J - 1)^2`` with R the rotation of the polar
decomposition ``F = R S``. R comes from the rotation-variant SVD ``F = U Sigma V^T`` (U, V proper
rotations, the smallest singular value carries the sign of J; McAdams et al. 2011): V from
one-sided cyclic Jacobi on the columns of ``F V`` (sorted by norm descending, det V = +1), U by
Gram-Schmidt on ``F V`` with ``u2 = u0 x u1``, ``sigma_i = u_i . (F V)_i``; ``R = U V^T``. The
tangent uses
``dR = R [w]_x`` with ``(tr(S) I - S) w = axial(R^T dF - dF^T R)``, solved in the V basis where
``tr(S) I - S`` is ``diag(s1+s2, s0+s2, s0+s1)``. At ``s_i + s_j = 0`` (only possible for
inverted elements) R is discontinuous and the tangent unbounded; the denominators are clamped to
``1e-12 * max(|s0|, tiny)`` so results stay finite (large but finite).

**NEOHOOKEAN** -- the classical compressible neo-Hookean with a log barrier (e.g. Bonet & Wood,
"Nonlinear Continuum Mechanics for Finite Element Analysis"), the elastic energy for IPC
(Li et al. 2020), whose promise is that no tet ever inverts:

    Psi = mu/2 (I_C - 3) - mu log J + lam/2 (log J)^2,     P = mu F + (lam log J - mu) F^-T,

with the Lamé parameters used as they are (``dP/dF(I)`` is the linear-elastic tangent). Psi -> +inf
as J -> 0+ and Psi = +inf for J <= 0 (``material_energy`` returns ``np.inf``), so a line search that
rejects non-finite energies never accepts an inverted tet. Stress, tangent and eigensystem are
meant for J > 0 only; at J <= 0 they return NaN / inf (``log`` of a non-positive J, division by
J or by a zero singular value) and callers must not evaluate them there. J is ``det3(F)``
(cofactor expansion, absolute rounding ~1e-16 ``|F|^3``): for a nearly collapsed tet (J below
~1e-14 ``|F|^3``) its sign and the barrier's value are rounding, so "not inverted" means "det3 > 0".

**PSD projection** -- ``elastic_hessian_blocks(project=True)`` projects the 9x9 ``dP/dF``
*before* the chain rule: ``V D^T proj(dP/dF) D`` is PSD (congruence), cheaper (9x9 instead of
12x12) and the usual choice; it is not identical to projecting the 12x12 block. ``proj`` clamps
negative eigenvalues to 0. The eigen-decomposition is analytic (Smith, De Goes, Kim 2019,
"Analytic Eigensystems for Isotropic Distortion Energies"; see ``material_eigensystem``): in the
basis ``u_i v_j^T`` of the SVD, ``dP/dF`` splits into 3 twist and 3 flip modes with closed-form
eigenvalues and a 3x3 block ``d^2 psi / ds^2`` over the singular values (LDL^T when positive
definite, else a 3x3 Jacobi), and the projected modes go straight through the chain rule
(``tet_hessian_from_eigensystem``). The general route, ``project_psd`` (cyclic Jacobi on a
symmetric n x n matrix) on the explicit 9x9 tangent, is kept as the reference
``elastic_hessian_blocks_jacobi``; both agree to rounding relative to ``||dP/dF||``.

Kernels never call BLAS/LAPACK (``np.dot``, the matmul operator, ``np.linalg``): Blender ships no SciPy.
"""

from enum import IntEnum

import numpy as np

from ..config import FLOAT
from ..jit import njit_kernel, njit_parallel, prange
from .tet_mesh import deformation_gradient


class MaterialModel(IntEnum):
    """Hyperelastic energy of a tet; kernels receive ``int(MaterialModel.X)``. Append-only."""

    NONE = 0
    STABLE_NEOHOOKEAN = 1
    COROTATED = 2
    NEOHOOKEAN = 3


WORK_MATRICES = 8
"""Per-tet scratch for the material kernels: ``work`` has shape (WORK_MATRICES, 3, 3), float64."""

JACOBI_MAX_SWEEPS = 50
"""Upper bound on cyclic Jacobi sweeps (quadratic convergence: 12x12 needs ~6-10)."""

SVD_MAX_SWEEPS = 12
"""Upper bound on one-sided Jacobi sweeps of ``svd3_rotation_variant`` (typically 3-5)."""

SVD_TOLERANCE = 1.0e-15
"""Columns ``b_p, b_q`` of ``F V`` count as orthogonal when ``|b_p . b_q| <= SVD_TOLERANCE |b_p| |b_q|``."""

SVD_TINY = 1.0e-150
"""Column norms below this (F is dimensionless, ~1) are treated as zero when building U."""

HESSIAN_CHUNKS = 256
"""Parallel chunks of ``elastic_hessian_blocks``; each chunk owns its scratch (no races)."""


# --------------------------------------------------------------------------------------------
# Small dense linear algebra (hand-written, no BLAS)
# --------------------------------------------------------------------------------------------


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
        _jacobi3_rotate(A, eigenvectors, 0, 1, 2)
        _jacobi3_rotate(A, eigenvectors, 0, 2, 1)
        _jacobi3_rotate(A, eigenvectors, 1, 2, 0)
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
            theta = (beta - alpha) / (2.0 * gamma)
            if abs(theta) > 1.0e150:
                t = 0.5 / theta
            else:
                t = 1.0 / (abs(theta) + np.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
            c = 1.0 / np.sqrt(t * t + 1.0)
            s = t * c
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
    # Sort the columns by norm, descending (3-element bubble sort, B and V together).
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
    if det3(V) < 0.0:
        for r in range(3):
            V[r, 2] = -V[r, 2]
            B[r, 2] = -B[r, 2]
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


# --------------------------------------------------------------------------------------------
# Stable neo-Hookean (Smith, de Goes, Kim 2018)
# --------------------------------------------------------------------------------------------


@njit_kernel
def stable_neohookean_energy(F, mu, lam):
    """Energy density Psi(F) [J/m³] of stable neo-Hookean; (mu, lam) are Lamé parameters [Pa].

    See the module docstring for the reparametrisation ``mu' = 4/3 mu``, ``lam' = lam + 5/6 mu``.
    """
    mu_s = 4.0 / 3.0 * mu
    lam_s = lam + 5.0 / 6.0 * mu
    Ic = 0.0
    for i in range(3):
        for j in range(3):
            Ic += F[i, j] * F[i, j]
    Jm1 = det3(F) - 1.0
    # Psi = mu'/2 (Ic - 3) + lam'/2 (J-1)^2 - 3mu'/4 (J-1) - mu'/2 log((Ic+1)/4)
    return 0.5 * mu_s * (Ic - 3.0) + 0.5 * lam_s * Jm1 * Jm1 - 0.75 * mu_s * Jm1 - 0.5 * mu_s * np.log((Ic + 1.0) / 4.0)


@njit_kernel
def stable_neohookean_gradient(F, mu, lam, work, out):
    """PK1 stress ``P = dPsi/dF`` [Pa] of stable neo-Hookean, shape (3, 3) (output).

    ``P = mu' (1 - 1/(I_C + 1)) F + (lam' (J - 1) - 3 mu'/4) cof(F)``. Uses work[0].
    """
    mu_s = 4.0 / 3.0 * mu
    lam_s = lam + 5.0 / 6.0 * mu
    Ic = 0.0
    for i in range(3):
        for j in range(3):
            Ic += F[i, j] * F[i, j]
    cof = work[0]
    cofactor3(F, cof)
    a = mu_s * (1.0 - 1.0 / (Ic + 1.0))
    b = lam_s * (det3(F) - 1.0) - 0.75 * mu_s
    for i in range(3):
        for j in range(3):
            out[i, j] = a * F[i, j] + b * cof[i, j]


@njit_kernel
def stable_neohookean_hessian(F, mu, lam, work, out):
    """Tangent ``dP/dF`` [Pa] of stable neo-Hookean, shape (9, 9) (output), not projected.

    ``dP/dF = mu'(1 - 1/(I_C+1)) Id + 2 mu'/(I_C+1)^2 f f^T + lam' g g^T + (lam'(J-1) - 3mu'/4) H_J``
    with ``f = vec(F)``, ``g = vec(cof F)``. Uses work[0].
    """
    mu_s = 4.0 / 3.0 * mu
    lam_s = lam + 5.0 / 6.0 * mu
    Ic = 0.0
    for i in range(3):
        for j in range(3):
            Ic += F[i, j] * F[i, j]
    cof = work[0]
    cofactor3(F, cof)
    a = mu_s * (1.0 - 1.0 / (Ic + 1.0))
    c = 2.0 * mu_s / ((Ic + 1.0) * (Ic + 1.0))
    b = lam_s * (det3(F) - 1.0) - 0.75 * mu_s
    for r in range(9):
        fr = F[r // 3, r % 3]
        gr = cof[r // 3, r % 3]
        for s in range(9):
            out[r, s] = c * fr * F[s // 3, s % 3] + lam_s * gr * cof[s // 3, s % 3]
        out[r, r] += a
    add_det_hessian(F, b, out)


# --------------------------------------------------------------------------------------------
# Fixed corotated (Stomakhin et al. 2012)
# --------------------------------------------------------------------------------------------


@njit_kernel
def corotated_energy(F, mu, lam, work):
    """Energy density ``Psi = mu ||F - R||^2 + lam/2 (J - 1)^2`` [J/m³]; uses work[0..5]."""
    R = work[3]
    V = work[4]
    sigma = work[5, 0]
    polar_rotation(F, R, sigma, V, work)
    d2 = 0.0
    for i in range(3):
        for j in range(3):
            d = F[i, j] - R[i, j]
            d2 += d * d
    Jm1 = det3(F) - 1.0
    return mu * d2 + 0.5 * lam * Jm1 * Jm1


@njit_kernel
def corotated_gradient(F, mu, lam, work, out):
    """PK1 stress ``P = 2 mu (F - R) + lam (J - 1) cof(F)`` [Pa], shape (3, 3) (output); uses work[0..5]."""
    R = work[3]
    V = work[4]
    sigma = work[5, 0]
    polar_rotation(F, R, sigma, V, work)
    cof = work[0]
    cofactor3(F, cof)
    b = lam * (det3(F) - 1.0)
    for i in range(3):
        for j in range(3):
            out[i, j] = 2.0 * mu * (F[i, j] - R[i, j]) + b * cof[i, j]


@njit_kernel
def corotated_hessian(F, mu, lam, work, out):
    """Tangent ``dP/dF`` [Pa] of fixed corotated, shape (9, 9) (output), not projected.

    ``dP = 2 mu (dF - dR) + lam (cof F : dF) cof F + lam (J - 1) H_J : dF``, with ``dR = R [w]_x``,
    ``w = V diag(1/(s1+s2), 1/(s0+s2), 1/(s0+s1)) V^T axial(R^T dF - dF^T R)`` (derivation: F = R S
    gives ``R^T dF - dF^T R = W S + S W`` for the skew ``W = R^T dR``, whose axial vector is
    ``(tr(S) I - S) w``). Evaluated for the 9 unit directions ``dF = E_kl``. Uses work[0..5].
    """
    R = work[3]
    V = work[4]
    sigma = work[5, 0]
    polar_rotation(F, R, sigma, V, work)
    cof = work[0]
    cofactor3(F, cof)
    s0 = sigma[0]
    s1 = sigma[1]
    s2 = sigma[2]
    tiny = 1.0e-12 * max(abs(s0), 1.0e-300)
    inv_d = work[5, 1]
    inv_d[0] = s1 + s2
    inv_d[1] = s0 + s2
    inv_d[2] = s0 + s1
    for m in range(3):
        d = inv_d[m]
        if abs(d) < tiny:
            d = tiny if d >= 0.0 else -tiny
        inv_d[m] = 1.0 / d
    b = lam * (det3(F) - 1.0)
    a = work[5, 2]
    W = work[6]
    for k in range(3):
        for ell in range(3):
            col = 3 * k + ell
            # M = R^T E_kl - E_kl^T R, (R^T E_kl)[p, q] = R[k, p] delta_ql; axial(M) = (M21, M02, M10).
            for m in range(3):
                a[m] = 0.0
            # M[2,1] = R[k,2] d_1l - R[k,1] d_2l ; M[0,2] = R[k,0] d_2l - R[k,2] d_0l ;
            # M[1,0] = R[k,1] d_0l - R[k,0] d_1l
            if ell == 1:
                a[0] += R[k, 2]
                a[2] -= R[k, 0]
            elif ell == 2:
                a[0] -= R[k, 1]
                a[1] += R[k, 0]
            else:
                a[1] -= R[k, 2]
                a[2] += R[k, 1]
            # w = V diag(inv_d) V^T a, stored in W[0, :]
            for m in range(3):
                acc = 0.0
                for q in range(3):
                    acc += V[q, m] * a[q]
                W[1, m] = acc * inv_d[m]
            for m in range(3):
                W[0, m] = V[m, 0] * W[1, 0] + V[m, 1] * W[1, 1] + V[m, 2] * W[1, 2]
            w0 = W[0, 0]
            w1 = W[0, 1]
            w2 = W[0, 2]
            for i in range(3):
                # dR[i, :] = R[i, :] [w]_x, [w]_x = [[0,-w2,w1],[w2,0,-w0],[-w1,w0,0]]
                dR0 = R[i, 1] * w2 - R[i, 2] * w1
                dR1 = -R[i, 0] * w2 + R[i, 2] * w0
                dR2 = R[i, 0] * w1 - R[i, 1] * w0
                out[3 * i + 0, col] = -2.0 * mu * dR0 + lam * cof[k, ell] * cof[i, 0]
                out[3 * i + 1, col] = -2.0 * mu * dR1 + lam * cof[k, ell] * cof[i, 1]
                out[3 * i + 2, col] = -2.0 * mu * dR2 + lam * cof[k, ell] * cof[i, 2]
            out[col, col] += 2.0 * mu
    add_det_hessian(F, b, out)
    # Symmetrise (the exact tangent is symmetric; removes rounding asymmetry).
    for r in range(9):
        for s in range(r + 1, 9):
            avg = 0.5 * (out[r, s] + out[s, r])
            out[r, s] = avg
            out[s, r] = avg


# --------------------------------------------------------------------------------------------
# Classical neo-Hookean with a log barrier (J > 0 only)
# --------------------------------------------------------------------------------------------


@njit_kernel
def neohookean_energy(F, mu, lam):
    """Energy density ``Psi = mu/2 (I_C - 3) - mu log J + lam/2 (log J)^2`` [J/m³]; ``+inf`` for J <= 0.

    The barrier is the point of this material: +inf (not NaN) lets a line search reject the step.
    """
    J = det3(F)
    if not J > 0.0:
        return np.inf
    Ic = 0.0
    for i in range(3):
        for j in range(3):
            Ic += F[i, j] * F[i, j]
    log_J = np.log(J)
    return 0.5 * mu * (Ic - 3.0) - mu * log_J + 0.5 * lam * log_J * log_J


@njit_kernel
def neohookean_gradient(F, mu, lam, work, out):
    """PK1 stress ``P = mu F + (lam log J - mu) F^-T`` [Pa], shape (3, 3) (output); J > 0.

    ``F^-T = cof(F) / J``. NaN for J < 0, inf/NaN for J = 0. Uses work[0].
    """
    cof = work[0]
    cofactor3(F, cof)
    J = det3(F)
    b = (lam * np.log(J) - mu) / J
    for i in range(3):
        for j in range(3):
            out[i, j] = mu * F[i, j] + b * cof[i, j]


@njit_kernel
def neohookean_hessian(F, mu, lam, work, out):
    """Tangent ``dP/dF`` [Pa] of neo-Hookean, shape (9, 9) (output), not projected; J > 0.

    With ``A = F^-T`` (so ``d log J = A : dF`` and ``dA_ij / dF_kl = -A_il A_kj``):
    ``dP_ij / dF_kl = mu delta_ik delta_jl + lam A_ij A_kl - (lam log J - mu) A_il A_kj``.
    NaN/inf for J <= 0. Uses work[0].
    """
    A = work[0]
    cofactor3(F, A)
    J = det3(F)
    inv_J = 1.0 / J
    for i in range(3):
        for j in range(3):
            A[i, j] *= inv_J
    b = lam * np.log(J) - mu
    for i in range(3):
        for j in range(3):
            r = 3 * i + j
            aij = lam * A[i, j]
            for k in range(3):
                bak = b * A[k, j]
                for ell in range(3):
                    out[r, 3 * k + ell] = aij * A[k, ell] - bak * A[i, ell]
            out[r, r] += mu


# --------------------------------------------------------------------------------------------
# Material dispatch and per-tet chain rule
# --------------------------------------------------------------------------------------------


@njit_kernel
def material_energy(F, mu, lam, material, work):
    """Energy density Psi(F) [J/m³] of ``material`` (int ``MaterialModel``); NONE gives 0, NEOHOOKEAN
    gives ``+inf`` for J <= 0."""
    if material == 1:
        return stable_neohookean_energy(F, mu, lam)
    elif material == 2:
        return corotated_energy(F, mu, lam, work)
    elif material == 3:
        return neohookean_energy(F, mu, lam)
    return 0.0


@njit_kernel
def pk1_stress(F, mu, lam, material, work, out):
    """First Piola-Kirchhoff stress ``P = dPsi/dF`` [Pa], shape (3, 3) (output); NEOHOOKEAN needs J > 0."""
    if material == 1:
        stable_neohookean_gradient(F, mu, lam, work, out)
    elif material == 2:
        corotated_gradient(F, mu, lam, work, out)
    elif material == 3:
        neohookean_gradient(F, mu, lam, work, out)
    else:
        for i in range(3):
            for j in range(3):
                out[i, j] = 0.0


@njit_kernel
def pk1_stress_derivative(F, mu, lam, material, work, out):
    """Tangent ``dP/dF`` [Pa], shape (9, 9) (output), row-major vec; not projected. NEOHOOKEAN needs J > 0."""
    if material == 1:
        stable_neohookean_hessian(F, mu, lam, work, out)
    elif material == 2:
        corotated_hessian(F, mu, lam, work, out)
    elif material == 3:
        neohookean_hessian(F, mu, lam, work, out)
    else:
        for r in range(9):
            for s in range(9):
                out[r, s] = 0.0


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
def _node_weights(Dm_inv, G):
    """``G[a, j] = dF_ij / dx_a,i`` for the 4 nodes, shape (4, 3) (output; uses a (3,3)+ view)."""
    for j in range(3):
        G[0, j] = -(Dm_inv[0, j] + Dm_inv[1, j] + Dm_inv[2, j])
        G[1, j] = Dm_inv[0, j]
        G[2, j] = Dm_inv[1, j]
        G[3, j] = Dm_inv[2, j]


@njit_kernel
def tet_gradient_from_stress(P, Dm_inv, rest_volume, G, out):
    """Nodal gradient ``dE/dx = V D^T vec(P)`` [N], shape (12,) (output); G scratch (4, 3)."""
    _node_weights(Dm_inv, G)
    for a in range(4):
        for i in range(3):
            out[3 * a + i] = rest_volume * (P[i, 0] * G[a, 0] + P[i, 1] * G[a, 1] + P[i, 2] * G[a, 2])


@njit_kernel
def tet_hessian_from_tangent(dPdF, Dm_inv, rest_volume, G, out):
    """Nodal Hessian ``V D^T (dP/dF) D`` [N/m], shape (12, 12) (output); G scratch (4, 3).

    ``H[3a+i, 3b+k] = V sum_{j,l} dPdF[3i+j, 3k+l] G[a, j] G[b, l]``.
    """
    _node_weights(Dm_inv, G)
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


# --------------------------------------------------------------------------------------------
# Analytic eigensystem of dP/dF (Smith, De Goes, Kim 2019) and the projected Hessian
# --------------------------------------------------------------------------------------------


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
    tangent_from_eigensystem(U, V, ev, Q, True, modes, out)


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
    _node_weights(Dm_inv, G)
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


# --------------------------------------------------------------------------------------------
# Batch kernels over all tets
# --------------------------------------------------------------------------------------------


@njit_kernel
def elastic_energy(x, tet_indices, tet_Dm_inv, tet_rest_volume, mu, lam, material):
    """Total elastic energy ``sum_t V_t Psi(F_t)`` [J] (serial, deterministic).

    Args:
        x: current positions, shape (vertex_count, 3) [m].
        tet_indices: (tet_count, 4) int32.
        tet_Dm_inv: (tet_count, 3, 3) [1/m].
        tet_rest_volume: (tet_count,) [m³].
        mu, lam: Lamé parameters [Pa].
        material: int ``MaterialModel``.
    """
    work = np.empty((WORK_MATRICES, 3, 3), dtype=np.float64)
    F = np.empty((3, 3), dtype=np.float64)
    total = 0.0
    for t in range(tet_indices.shape[0]):
        deformation_gradient(x, tet_indices[t], tet_Dm_inv[t], F)
        total += tet_rest_volume[t] * material_energy(F, mu, lam, material, work)
    return total


@njit_kernel
def elastic_gradient(x, tet_indices, tet_Dm_inv, tet_rest_volume, mu, lam, material, out):
    """Gradient of ``elastic_energy`` w.r.t. x [N] (= minus the elastic forces).

    Same inputs as ``elastic_energy``; ``out`` shape (vertex_count, 3) is overwritten (output).
    Serial scatter in tet order: bitwise deterministic.
    """
    work = np.empty((WORK_MATRICES, 3, 3), dtype=np.float64)
    F = np.empty((3, 3), dtype=np.float64)
    P = np.empty((3, 3), dtype=np.float64)
    G = np.empty((4, 3), dtype=np.float64)
    g = np.empty(12, dtype=np.float64)
    for v in range(out.shape[0]):
        for i in range(3):
            out[v, i] = 0.0
    for t in range(tet_indices.shape[0]):
        deformation_gradient(x, tet_indices[t], tet_Dm_inv[t], F)
        pk1_stress(F, mu, lam, material, work, P)
        tet_gradient_from_stress(P, tet_Dm_inv[t], tet_rest_volume[t], G, g)
        for a in range(4):
            v = tet_indices[t, a]
            for i in range(3):
                out[v, i] += g[3 * a + i]


@njit_parallel
def elastic_hessian_blocks(x, tet_indices, tet_Dm_inv, tet_rest_volume, mu, lam, material, project, out):
    """Per-tet 12x12 Hessian blocks ``V_t D_t^T (dP/dF) D_t`` [N/m] (parallel over tets).

    With ``project`` the 9x9 ``dP/dF`` is projected to PSD first (see module docstring), so every
    block is PSD: from the analytic eigensystem (``singular_value_hessian``,
    ``scaling_block_factor``, ``tet_hessian_from_eigensystem``), equal up to rounding to the Jacobi
    reference ``elastic_hessian_blocks_jacobi`` and ~10x faster. Without ``project``: the exact
    tangent through the chain rule. Block rows/columns follow the tet's local node order ``[x0,y0,z0,...,z3]``.

    Args: as ``elastic_energy``, plus
        project: bool.
        out: (tet_count, 12, 12) (output).
    """
    tet_count = tet_indices.shape[0]
    n_chunks = min(tet_count, HESSIAN_CHUNKS)
    work = np.empty((n_chunks, WORK_MATRICES, 3, 3), dtype=np.float64)
    F = np.empty((n_chunks, 3, 3), dtype=np.float64)
    G = np.empty((n_chunks, 4, 3), dtype=np.float64)
    dPdF = np.empty((n_chunks, 9, 9), dtype=np.float64)
    evals = np.empty((n_chunks, 9), dtype=np.float64)
    coef = np.empty((n_chunks, 9), dtype=np.float64)
    Z = np.empty((n_chunks, 9, 12), dtype=np.float64)
    for c in prange(n_chunks):
        begin = c * tet_count // n_chunks
        end = (c + 1) * tet_count // n_chunks
        Fc = F[c]
        wc = work[c]
        for t in range(begin, end):
            deformation_gradient(x, tet_indices[t], tet_Dm_inv[t], Fc)
            tet_hessian_block(
                Fc, mu, lam, material, project, tet_Dm_inv[t], tet_rest_volume[t], wc, G[c], dPdF[c], evals[c],
                coef[c], Z[c], out[t],
            )  # fmt: skip


@njit_kernel
def tet_hessian_block(F, mu, lam, material, project, Dm_inv, rest_volume, work, G, dPdF, evals, coef, Z, out):
    """One tet's 12x12 Hessian [N/m] at deformation gradient ``F`` into ``out`` (PSD-projected through
    the analytic eigensystem if ``project``). Scratch: ``work`` (WORK_MATRICES, 3, 3), ``G`` (4, 3),
    ``dPdF`` (9, 9), ``evals``/``coef`` (9,), ``Z`` (9, 12)."""
    if project:
        U = work[4]
        V = work[5]
        Q = work[6]
        K = work[1]
        sigma = work[7, 0]
        singular_value_hessian(F, mu, lam, material, work, U, sigma, V, K, evals)
        scaling_block_factor(K, evals[:3], Q)
        tet_hessian_from_eigensystem(U, V, evals, Q, Dm_inv, rest_volume, True, G, Z, coef, out)
    else:
        pk1_stress_derivative(F, mu, lam, material, work, dPdF)
        tet_hessian_from_tangent(dPdF, Dm_inv, rest_volume, G, out)


@njit_parallel
def elastic_hessian_blocks_jacobi(x, tet_indices, tet_Dm_inv, tet_rest_volume, mu, lam, material, project, out):
    """Reference for ``elastic_hessian_blocks``: the 9x9 ``dP/dF`` is formed explicitly and, with
    ``project``, projected by cyclic Jacobi (``project_psd``) before the chain rule (~17 µs per tet).

    Same arguments and output as ``elastic_hessian_blocks``.
    """
    tet_count = tet_indices.shape[0]
    n_chunks = min(tet_count, HESSIAN_CHUNKS)
    work = np.empty((n_chunks, WORK_MATRICES, 3, 3), dtype=np.float64)
    F = np.empty((n_chunks, 3, 3), dtype=np.float64)
    G = np.empty((n_chunks, 4, 3), dtype=np.float64)
    dPdF = np.empty((n_chunks, 9, 9), dtype=np.float64)
    evals = np.empty((n_chunks, 9), dtype=np.float64)
    evecs = np.empty((n_chunks, 9, 9), dtype=np.float64)
    jac_work = np.empty((n_chunks, 9, 9), dtype=np.float64)
    for c in prange(n_chunks):
        begin = c * tet_count // n_chunks
        end = (c + 1) * tet_count // n_chunks
        for t in range(begin, end):
            deformation_gradient(x, tet_indices[t], tet_Dm_inv[t], F[c])
            pk1_stress_derivative(F[c], mu, lam, material, work[c], dPdF[c])
            if project:
                project_psd(dPdF[c], evals[c], evecs[c], jac_work[c], dPdF[c])
            tet_hessian_from_tangent(dPdF[c], tet_Dm_inv[t], tet_rest_volume[t], G[c], out[t])


def tet_workspace():
    """Scratch for the per-tet material kernels: shape (WORK_MATRICES, 3, 3), float64."""
    return np.zeros((WORK_MATRICES, 3, 3), dtype=FLOAT)
