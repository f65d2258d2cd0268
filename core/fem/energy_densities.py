"""Hyperelastic energy densities ``Psi(F)`` [J/m³], their PK1 stress ``P = dPsi/dF`` [Pa] and tangent ``dP/dF``
(9x9, row-major vec) for the three material models, and the dispatch on ``int(MaterialModel)``.

The models, their parametrisation and their behaviour under inversion are described in :mod:`.materials`
(stable neo-Hookean: Smith, de Goes, Kim 2018; fixed corotated: Stomakhin et al. 2012; neo-Hookean with a
log barrier: Bonet & Wood). Every kernel takes the Lamé parameters ``mu``, ``lam`` [Pa] and a scratch
``work`` (WORK_MATRICES, 3, 3) where it needs one.
"""

import numpy as np

from ..jit import njit_kernel
from ..math.small_linalg import add_det_hessian, cofactor3, det3, polar_rotation

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
# Material dispatch (``material`` = int ``MaterialModel``: 1 stable neo-Hookean, 2 corotated, 3 neo-Hookean)
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
        _zero_matrix(out)


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
        _zero_matrix(out)


@njit_kernel
def _zero_matrix(out):
    """``out[:, :] = 0`` for a 2-D array (NONE material: no stress, no tangent)."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = 0.0
