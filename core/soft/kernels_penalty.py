"""Penalty contact on the soft world's contact elements (seed 003 eq. 3, as :mod:`.kernels_contact`).

Energy ``kappa b(d)``, ``b = (delta - d)^3 / delta`` for ``d < delta`` (``d`` the element's signed
distance, :mod:`.contact_elements`). Gradient ``kappa b'(d) c_k g``; Gauss–Newton Hessian
``kappa b''(d) c_k c_l g g^T`` (rank one per element, PSD; the curvature term ``b' d^2 d/dx^2`` is
dropped). Units: ``kappa`` [N/m], ``delta`` and distances [m], energies [J], forces [N].
"""

from ..jit import njit_kernel
from .contact_elements import (
    ELEMENT_NODES,
    KIND_POINT_COLLIDER,
    KIND_POINT_TRIANGLE,
    distance_scratch,
    element_distance,
)
from .kernels_contact import penalty_energy, penalty_force, penalty_stiffness


@njit_kernel
def contact_energy(x, el_count, el_kind, el_nodes, el_weights, el_target, geometry, kappa, delta):
    """``kappa sum_e b(d_e)`` [J] over the first ``el_count`` elements (``geometry``: see
    :mod:`.contact_elements`)."""
    coef, g, scratch = distance_scratch()
    total = 0.0
    for e in range(el_count):
        d = element_distance(e, x, el_kind, el_nodes, el_weights, el_target, geometry, coef, g, scratch)
        if d < delta:
            total += penalty_energy(d, kappa, delta)
    return total


@njit_kernel
def contact_gradient(x, el_count, el_kind, el_nodes, el_weights, el_target, geometry, kappa, delta, node_free,
                     out_grad, el_coef, el_g, el_stiff):  # fmt: skip
    """Add the penalty gradient [N] to ``out_grad`` (N, 3); store per element the masked coefficients
    ``el_coef`` (E, 16), ``el_g`` (E, 3) and ``el_stiff = kappa b''(d)`` (E,) [N/m] for the operator.

    ``geometry``: see :mod:`.contact_elements`. Returns the largest penetration ``max(0, -d)`` [m].
    """
    coef, g, scratch = distance_scratch()
    worst = 0.0
    for e in range(el_count):
        d = element_distance(e, x, el_kind, el_nodes, el_weights, el_target, geometry, coef, g, scratch)
        if -d > worst:
            worst = -d
        for i in range(3):
            el_g[e, i] = g[i]
        if d >= delta:
            el_stiff[e] = 0.0
            for k in range(ELEMENT_NODES):
                el_coef[e, k] = 0.0
            continue
        db = -penalty_force(d, kappa, delta)
        el_stiff[e] = penalty_stiffness(d, kappa, delta)
        for k in range(ELEMENT_NODES):
            node = el_nodes[e, k]
            if node < 0 or not node_free[node]:
                el_coef[e, k] = 0.0
                continue
            el_coef[e, k] = coef[k]
            for i in range(3):
                out_grad[node, i] += db * coef[k] * g[i]
    return worst


@njit_kernel
def contact_normal_forces(x, el_count, el_kind, el_nodes, el_weights, el_target, geometry, kappa, delta, node_body,
                          aff_collider, out, out_pair):  # fmt: skip
    """Accumulate the penalty normal force [N] that soft body ``b`` exerts on collider ``c`` into
    ``out`` (B, C, 3): ``-lambda_e n_e`` summed over the body's contact points (box corners, which
    belong to no soft body, are skipped); and the force soft body ``a`` exerts on soft body ``b``
    through a's points on b's triangles into ``out_pair`` (B, B, 3)."""
    coef, g, scratch = distance_scratch()
    for e in range(el_count):
        body = node_body[el_nodes[e, 0]]
        if body < 0:
            continue
        d = element_distance(e, x, el_kind, el_nodes, el_weights, el_target, geometry, coef, g, scratch)
        if d >= delta:
            continue
        lam = penalty_force(d, kappa, delta)
        if el_kind[e] == KIND_POINT_TRIANGLE:
            other = node_body[el_nodes[e, 4]]
            for i in range(3):
                out_pair[body, other, i] -= lam * g[i]
            continue
        c = el_target[e] if el_kind[e] == KIND_POINT_COLLIDER else aff_collider[el_target[e]]
        for i in range(3):
            out[body, c, i] -= lam * g[i]
