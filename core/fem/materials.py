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

Modules: :mod:`.energy_densities` (Psi, P, dP/dF per model and the dispatch), :mod:`..math.small_linalg`
(Jacobi eigensolvers, ``project_psd``, det/cofactor, SVD, polar), :mod:`.eigensystem` (the analytic
eigensystem), :mod:`.tet_mesh` (F and the chain rule to nodal coordinates); this module holds the model enum
and the batch kernels over all tets, and re-exports the per-tet kernels the tests and the IPC engine use.

Kernels never call BLAS/LAPACK (``np.dot``, the matmul operator, ``np.linalg``): Blender ships no SciPy.
"""

from enum import IntEnum

import numpy as np

from ..config import FLOAT
from ..jit import njit_kernel, njit_parallel, prange
from ..math.small_linalg import (
    polar_rotation,
    project_psd,
    svd3_rotation_variant,
    symmetric_eigen3,
    symmetric_eigen_jacobi,
)
from .eigensystem import (
    eigen_modes,
    material_eigensystem,
    projected_pk1_stress_derivative,
    scaling_block_factor,
    singular_value_hessian,
    tangent_from_eigensystem,
    tet_hessian_from_eigensystem,
)
from .energy_densities import material_energy, pk1_stress, pk1_stress_derivative
from .tet_mesh import (
    deformation_gradient,
    deformation_gradient_jacobian,
    tet_gradient_from_stress,
    tet_hessian_from_tangent,
)


class MaterialModel(IntEnum):
    """Hyperelastic energy of a tet; kernels receive ``int(MaterialModel.X)``. Append-only."""

    NONE = 0
    STABLE_NEOHOOKEAN = 1
    COROTATED = 2
    NEOHOOKEAN = 3


WORK_MATRICES = 8
"""Per-tet scratch for the material kernels: ``work`` has shape (WORK_MATRICES, 3, 3), float64."""

HESSIAN_CHUNKS = 256
"""Parallel chunks of ``elastic_hessian_blocks``; each chunk owns its scratch (no races)."""


# --------------------------------------------------------------------------------------------
# Batch kernels over all tets
# --------------------------------------------------------------------------------------------


@njit_kernel
def hessian_chunk_scratch(n_chunks):
    """Per-chunk scratch of the parallel Hessian kernels: ``(work (n, WORK_MATRICES, 3, 3), F (n, 3, 3),
    G (n, 4, 3), dPdF (n, 9, 9), evals (n, 9))`` for ``n = n_chunks``."""
    return (
        np.empty((n_chunks, WORK_MATRICES, 3, 3), dtype=np.float64),
        np.empty((n_chunks, 3, 3), dtype=np.float64),
        np.empty((n_chunks, 4, 3), dtype=np.float64),
        np.empty((n_chunks, 9, 9), dtype=np.float64),
        np.empty((n_chunks, 9), dtype=np.float64),
    )


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
    work, F, G, dPdF, evals = hessian_chunk_scratch(n_chunks)
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
        tet_hessian_from_eigensystem(U, V, evals, Q, Dm_inv, rest_volume, np.bool_(True), G, Z, coef, out)
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
    work, F, G, dPdF, evals = hessian_chunk_scratch(n_chunks)
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


__all__ = [
    "HESSIAN_CHUNKS",
    "WORK_MATRICES",
    "MaterialModel",
    "deformation_gradient_jacobian",
    "eigen_modes",
    "elastic_energy",
    "elastic_gradient",
    "elastic_hessian_blocks",
    "elastic_hessian_blocks_jacobi",
    "hessian_chunk_scratch",
    "material_eigensystem",
    "material_energy",
    "pk1_stress",
    "pk1_stress_derivative",
    "polar_rotation",
    "project_psd",
    "projected_pk1_stress_derivative",
    "scaling_block_factor",
    "svd3_rotation_variant",
    "symmetric_eigen3",
    "symmetric_eigen_jacobi",
    "tangent_from_eigensystem",
    "tet_gradient_from_stress",
    "tet_hessian_block",
    "tet_hessian_from_eigensystem",
    "tet_hessian_from_tangent",
    "tet_workspace",
]
