"""The IPC step's elastic terms: gradient and Hessian of ``sum_t V_t Psi_t(F_t)`` straight into the block matrix.

IPC's soft tets are classical neo-Hookean (course §4, ``Psi = mu/2 (I_C - 3) - mu log J + lam/2 (log J)^2``;
its energy is infinite at inversion, which the line search needs). Its exact tangent (the ``dP/dF`` of
:func:`..fem.energy_densities.neohookean_hessian`, with ``A = F^-T`` and ``beta = lam log J - mu``)

    dP_ij / dF_kl = mu delta_ik delta_jl + lam A_ij A_kl - beta A_il A_kj

becomes, through ``F = sum_a x_a n_a^T`` (``n_a`` the rest gradient of node a's shape function, the rows of
``tet_node_weights``), a closed form for the 3x3 block of nodes ``(a, b)``:

    H_ab = V (mu (n_a . n_b) I3 + lam m_a m_b^T - beta m_b m_a^T),    m_a = F^-T n_a

(the deformed shape-function gradients). That costs about a tenth of the generic 9x9-tangent chain rule, and
no eigen-decomposition: the Newton loop (:mod:`.ipc_solver`) uses this exact Hessian first and asks for the
PSD-projected one (the soft engine's analytic eigensystem, ``tet_hessian_block(project=True)``) only when the
linear solve meets negative curvature. Other materials (the stiff corotated virtual tets of dynamic boxes) go
through the generic per-tet kernel either way.
"""

import numpy as np

from ..fem.energy_densities import pk1_stress
from ..fem.materials import WORK_MATRICES, MaterialModel, tet_hessian_block
from ..fem.tet_mesh import deformation_gradient, tet_node_weights
from ..jit import njit_kernel
from ..math.small_linalg import cofactor3, det3

NEOHOOKEAN = int(MaterialModel.NEOHOOKEAN)
"""The material with the closed-form exact Hessian (IPC's soft tets)."""


@njit_kernel
def elastic_gradient_and_hessian(x, tets, Dm_inv, volume, mu, lam, material, scale, project, element_index,
                                 out_grad, out_blocks):  # fmt: skip
    """Add ``scale`` times the elastic gradient [N] and Hessian [N/m] of every tet.

    Args:
        x: (N, 3) node positions [m] (every tet with ``J > 0``: the line search keeps iterates there).
        tets: (T, 4); Dm_inv: (T, 3, 3) [1/m]; volume: (T,) rest volumes [m³]; mu, lam: (T,) [Pa];
        material: (T,) int ``MaterialModel``.
        scale: factor on both (``h^2`` in the IPC objective).
        project: False: the exact Hessian (closed form for neo-Hookean); True: each tet's Hessian projected
            to PSD through the analytic eigensystem.
        element_index: (T, 4, 4) block indices of the tets' node pairs (``BlockPattern.element_index``).
        out_grad: (N, 3), added to. out_blocks: (B, 3, 3) node blocks, added to.

    Serial in tet order, so the sums are reproducible bit for bit.
    """
    work = np.empty((WORK_MATRICES, 3, 3))
    F = np.empty((3, 3))
    P = np.empty((3, 3))
    A = np.empty((3, 3))
    n = np.empty((4, 3))
    m = np.empty((4, 3))
    G = np.empty((4, 3))
    dPdF = np.empty((9, 9))
    evals = np.empty(9)
    coef = np.empty(9)
    Z = np.empty((9, 12))
    H = np.empty((12, 12))
    for t in range(tets.shape[0]):
        tet = tets[t]
        deformation_gradient(x, tet, Dm_inv[t], F)
        pk1_stress(F, mu[t], lam[t], material[t], work, P)
        tet_node_weights(Dm_inv[t], n)
        sv = scale * volume[t]
        for a in range(4):
            for i in range(3):
                out_grad[tet[a], i] += sv * (P[i, 0] * n[a, 0] + P[i, 1] * n[a, 1] + P[i, 2] * n[a, 2])
        if material[t] == NEOHOOKEAN and not project:
            cofactor3(F, A)  # cof(F) = J F^-T
            J = det3(F)
            beta = lam[t] * np.log(J) - mu[t]
            for a in range(4):
                for i in range(3):
                    m[a, i] = (A[i, 0] * n[a, 0] + A[i, 1] * n[a, 1] + A[i, 2] * n[a, 2]) / J
            c_mu = sv * mu[t]
            c_lam = sv * lam[t]
            c_beta = sv * beta
            for a in range(4):
                for b in range(4):
                    blk = out_blocks[element_index[t, a, b]]
                    nn = c_mu * (n[a, 0] * n[b, 0] + n[a, 1] * n[b, 1] + n[a, 2] * n[b, 2])
                    for r in range(3):
                        for c in range(3):
                            blk[r, c] += c_lam * m[a, r] * m[b, c] - c_beta * m[b, r] * m[a, c]
                        blk[r, r] += nn
        else:
            tet_hessian_block(F, mu[t], lam[t], material[t], project, Dm_inv[t], volume[t], work, G, dPdF, evals,
                              coef, Z, H)  # fmt: skip
            for a in range(4):
                for b in range(4):
                    blk = out_blocks[element_index[t, a, b]]
                    for r in range(3):
                        for c in range(3):
                            blk[r, c] += scale * H[3 * a + r, 3 * b + c]
