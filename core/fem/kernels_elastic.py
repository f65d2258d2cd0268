"""Elastic energy, gradient and Hessian blocks over all tets of a world with per-tet materials (the soft and the
IPC engines' elastic terms).

Conventions: positions ``x`` (N, 3) [m]; tets (T, 4); per-tet ``mu``, ``lam`` [Pa] and ``material`` (T,);
``Dm_inv`` (T, 3, 3), rest ``volume`` (T,) [m³].
"""

import numpy as np

from ..jit import njit_kernel, njit_parallel, prange
from .energy_densities import material_energy, pk1_stress
from .materials import HESSIAN_CHUNKS, WORK_MATRICES, hessian_chunk_scratch, tet_hessian_block
from .tet_mesh import deformation_gradient, tet_gradient_from_stress


@njit_kernel
def world_elastic_energy(x, tets, Dm_inv, volume, mu, lam, material):
    """``sum_t V_t Psi_t(F_t)`` [J] with per-tet ``mu``, ``lam`` [Pa] and ``material`` (T,)."""
    work = np.empty((WORK_MATRICES, 3, 3))
    F = np.empty((3, 3))
    total = 0.0
    for t in range(tets.shape[0]):
        deformation_gradient(x, tets[t], Dm_inv[t], F)
        total += volume[t] * material_energy(F, mu[t], lam[t], material[t], work)
    return total


@njit_kernel
def world_elastic_gradient(x, tets, Dm_inv, volume, mu, lam, material, out):
    """Overwrite ``out`` (N, 3) with ``dPsi/dx`` [N] (serial scatter: deterministic)."""
    work = np.empty((WORK_MATRICES, 3, 3))
    F = np.empty((3, 3))
    P = np.empty((3, 3))
    G = np.empty((4, 3))
    g = np.empty(12)
    out[:, :] = 0.0
    for t in range(tets.shape[0]):
        deformation_gradient(x, tets[t], Dm_inv[t], F)
        pk1_stress(F, mu[t], lam[t], material[t], work, P)
        tet_gradient_from_stress(P, Dm_inv[t], volume[t], G, g)
        for a in range(4):
            for i in range(3):
                out[tets[t, a], i] += g[3 * a + i]


@njit_parallel
def world_elastic_hessian_blocks(x, tets, Dm_inv, volume, mu, lam, material, project, out):
    """Per-tet 12x12 Hessians [N/m] into ``out`` (T, 12, 12), PSD-projected if ``project`` (analytic
    eigensystem, see ``materials.tet_hessian_block``); parallel over chunks of tets."""
    count = tets.shape[0]
    n_chunks = min(count, HESSIAN_CHUNKS)
    work, F, G, dPdF, evals = hessian_chunk_scratch(n_chunks)
    coef = np.empty((n_chunks, 9))
    Z = np.empty((n_chunks, 9, 12))
    for c in prange(n_chunks):
        for t in range(c * count // n_chunks, (c + 1) * count // n_chunks):
            deformation_gradient(x, tets[t], Dm_inv[t], F[c])
            tet_hessian_block(F[c], mu[t], lam[t], material[t], project, Dm_inv[t], volume[t], work[c], G[c],
                              dPdF[c], evals[c], coef[c], Z[c], out[t])  # fmt: skip
