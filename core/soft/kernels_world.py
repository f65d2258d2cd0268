"""Kernels of the soft-world step (:mod:`.world_solver`) over all tets: Rayleigh damping, the dynamic boxes'
consistent-mass inertia and the PSD projection of small blocks.

The other kernels of the step live in modules of one job each: the elastic terms over all tets
(:mod:`contact_lab.core.fem.kernels_elastic`, shared with the IPC engine), contact elements and signed distances
(:mod:`.contact_elements`), candidate collection
(:mod:`.contact_collection`), penalty contact (:mod:`.kernels_penalty`), lagged friction and the DUAL
contact Jacobian (:mod:`.kernels_friction`), the matrix-free Newton operator, preconditioner and PCG
(:mod:`.kernels_operator`).

Conventions: positions ``x`` (N, 3) [m]; tets (T, 4); per-tet ``mu``, ``lam`` [Pa] and ``material`` (T,);
``Dm_inv`` (T, 3, 3), rest ``volume`` (T,) [m³].
"""

import numpy as np

from ..jit import njit_kernel
from ..math.small_linalg import project_psd


@njit_kernel
def damping_energy_gradient(x, x_start, tets, damp_blocks, damp_scale, out_grad):
    """Rayleigh damping potential ``sum_t (beta_t / 2h) dx_t^T K_t^n dx_t`` [J] (``damp_scale = beta/h``
    per tet, ``K^n`` the projected tet Hessians at ``x^n``); adds its gradient to ``out_grad``."""
    dx = np.empty(12)
    total = 0.0
    for t in range(tets.shape[0]):
        s = damp_scale[t]
        if s == 0.0:
            continue
        for a in range(4):
            for i in range(3):
                dx[3 * a + i] = x[tets[t, a], i] - x_start[tets[t, a], i]
        for r in range(12):
            acc = 0.0
            for q in range(12):
                acc += damp_blocks[t, r, q] * dx[q]
            total += 0.5 * s * dx[r] * acc
            out_grad[tets[t, r // 3], r % 3] += s * acc
    return total


@njit_kernel
def damping_csr_energy_gradient(indptr, indices, data, x, x_start, out_grad):
    """The Rayleigh damping potential of :func:`damping_energy_gradient` with its matrix assembled once per
    step: ``1/2 dx^T D dx`` [J] for ``D = sum_t (beta_t / h) K_t^n`` in CSR (``indptr``, ``indices``, ``data``
    over the 3N flat dofs, [N/m]) and ``dx = x - x_start`` (N, 3) [m]; adds ``D dx`` [N] to ``out_grad`` (N, 3).

    The same numbers as the per-tet sum (up to rounding): a CSR row costs about 15 neighbours x 3 products
    against the 144 of every tet block, so this is ~5x cheaper on a lattice.
    """
    xf = x.reshape(-1)
    sf = x_start.reshape(-1)
    gf = out_grad.reshape(-1)
    total = 0.0
    for i in range(indptr.shape[0] - 1):
        acc = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            acc += data[p] * (xf[j] - sf[j])
        gf[i] += acc
        total += 0.5 * (xf[i] - sf[i]) * acc
    return total


@njit_kernel
def affine_inertia(aff_nodes, aff_mass, v, v_start, gravity, h, out_r):
    """Add ``M_a (v - v^n - h g)`` [N s] of every dynamic box to the flat residual ``out_r``; return
    the inertia energy ``1/2 (v - v^n - h g)^T M_a (v - v^n - h g)`` [J]."""
    total = 0.0
    for a in range(aff_nodes.shape[0]):
        for k in range(4):
            nk = aff_nodes[a, k]
            for j in range(4):
                nl = aff_nodes[a, j]
                m = aff_mass[a, k, j]
                for i in range(3):
                    wl = v[nl, i] - v_start[nl, i] - h * gravity[i]
                    wk = v[nk, i] - v_start[nk, i] - h * gravity[i]
                    total += 0.5 * m * wk * wl
                    out_r[3 * nk + i] += m * wl
    return total


@njit_kernel
def project_blocks_psd(blocks):
    """Project every (n, n) block of ``blocks`` (K, n, n) to PSD in place (Jacobi, ``project_psd``)."""
    n = blocks.shape[1]
    evals = np.empty(n)
    evecs = np.empty((n, n))
    work = np.empty((n, n))
    for k in range(blocks.shape[0]):
        project_psd(blocks[k], evals, evecs, work, blocks[k])


__all__ = [
    "affine_inertia",
    "damping_csr_energy_gradient",
    "damping_energy_gradient",
    "project_blocks_psd",
]
