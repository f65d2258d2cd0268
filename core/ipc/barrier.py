"""IPC log barrier on squared distances and the adaptive barrier stiffness (spec D.3.1).

The barrier of the course (Eq.292) is ``b(d, dhat) = -(d - dhat)² ln(d / dhat)`` for ``0 < d < dhat``
and 0 beyond. As in the IPC Toolkit, the kernels evaluate it on **squared** distances,
``b(d², dhat²)``: d² is a polynomial of the coordinates inside each distance case
(:mod:`.distance`), so no square root enters the derivatives. The same formula is used, only the
argument changes (``kappa`` then has units [N m⁻³] instead of [N m⁻¹]; the physical normal force of a
contact is ``kappa |b'(d²)| 2 d``).

Chain rule for a contact with squared distance ``D(x)`` (spec D.3.1, DERIVED)::

    grad [kappa b(D(x))] = kappa b'(D) grad D
    hess [kappa b(D(x))] = kappa (b''(D) grad D grad D^T + b'(D) hess D)

``b'' > 0`` but ``b' < 0`` times an indefinite ``hess D``: project the 12x12 block to PSD (D.3.3).

Adaptive stiffness ([Li et al. 2020] supplement; the rule of ipctk 1.6.1 ``initial_barrier_stiffness``
/ ``update_barrier_stiffness`` with ``dmin = 0`` and the clamped-log barrier): the plain-Python
:func:`initial_barrier_stiffness` and :func:`update_barrier_stiffness` below.
"""

import math

import numpy as np

from ..jit import njit_kernel


@njit_kernel
def barrier(d2, dhat2):
    """Clamped log barrier ``b = -(d2 - dhat2)² ln(d2 / dhat2)`` (Eq.292 on squared distances).

    Args:
        d2: squared distance [m²].
        dhat2: squared activation distance [m²].

    Returns:
        b [m⁴]: +inf for ``d2 <= 0`` (contact / penetration), 0 for ``d2 >= dhat2``.
    """
    if d2 <= 0.0:
        return math.inf
    if d2 >= dhat2:
        return 0.0
    t = d2 - dhat2
    return -t * t * math.log(d2 / dhat2)


@njit_kernel
def barrier_first_derivative(d2, dhat2):
    """``db/d(d2)`` [m²]; 0 outside ``0 < d2 < dhat2`` (as ipctk; ``d2 <= 0`` is infeasible anyway)."""
    if d2 <= 0.0 or d2 >= dhat2:
        return 0.0
    # b' = -2 (d - dh) ln(d/dh) - (d - dh)²/d = (dh - d) (2 ln(d/dh) - dh/d + 1)
    return (dhat2 - d2) * (2.0 * math.log(d2 / dhat2) - dhat2 / d2 + 1.0)


@njit_kernel
def barrier_second_derivative(d2, dhat2):
    """``d²b/d(d2)²`` [1]; 0 outside ``0 < d2 < dhat2``. Positive inside (b is convex)."""
    if d2 <= 0.0 or d2 >= dhat2:
        return 0.0
    # b'' = -2 ln(d/dh) - 4 (d - dh)/d + (d - dh)²/d² = (dh/d)² + 2 dh/d - 3 - 2 ln(d/dh)
    r = dhat2 / d2
    return (r + 2.0) * r - 3.0 - 2.0 * math.log(d2 / dhat2)


def initial_barrier_stiffness(
    bbox_diagonal, dhat, average_mass, grad_energy, grad_barrier, min_barrier_stiffness_scale=1e11
):
    """Initial barrier stiffness kappa and its cap ([Li et al. 2020] supplement; ipctk 1.6.1 rule).

    ``kappa_min = scale * average_mass / (4 d0 b''(d0, dhat²))`` with the tiny squared distance
    ``d0 = (1e-8 bbox_diagonal)²`` (``0.5 dhat²`` if that is not below ``dhat²``), ``kappa_max = 100 kappa_min``.
    kappa balances the energy and barrier gradients in the least-squares sense,
    ``kappa = -(grad_B . grad_E) / |grad_B|²`` (1 if grad_B = 0), clamped to ``[kappa_min, kappa_max]``.

    Args:
        bbox_diagonal: scene bounding-box diagonal [m].
        dhat: activation DISTANCE [m] (not squared; squared here, as ipctk's ``dhat`` argument).
        average_mass: average nodal mass [kg].
        grad_energy: (n,) float64, gradient of the incremental potential without contact.
        grad_barrier: (n,) float64, gradient of the UNSCALED barrier potential ``sum_k b(d_k², dhat²)``.
        min_barrier_stiffness_scale: scale of kappa_min (ipctk default 1e11).

    Returns:
        (kappa, kappa_max).
    """
    dhat2 = dhat * dhat
    d0 = 1e-8 * bbox_diagonal
    d0 *= d0
    if d0 >= dhat2:
        d0 = 0.5 * dhat2
    kappa_min = min_barrier_stiffness_scale * average_mass / (4.0 * d0 * barrier_second_derivative(d0, dhat2))
    kappa_max = 100.0 * kappa_min
    gb = np.asarray(grad_barrier, dtype=np.float64)
    ge = np.asarray(grad_energy, dtype=np.float64)
    gb2 = float(np.sum(gb * gb))
    kappa = 1.0
    if gb2 > 0.0:
        kappa = -float(np.sum(gb * ge)) / gb2  # negative values end up at kappa_min
    return min(max(kappa, kappa_min), kappa_max), kappa_max


def update_barrier_stiffness(
    prev_min_distance2, min_distance2, kappa_max, kappa, bbox_diagonal, dhat_epsilon_scale=1e-9
):
    """Double kappa (up to kappa_max) when the barrier is losing: the minimum SQUARED distance keeps
    decreasing while both values are below ``(dhat_epsilon_scale * bbox_diagonal)²`` (ipctk 1.6.1 rule).

    Args:
        prev_min_distance2: minimum squared distance [m²] at the previous Newton iteration / step.
        min_distance2: current minimum squared distance [m²].
        kappa_max: cap from :func:`initial_barrier_stiffness`.
        kappa: current stiffness.
        bbox_diagonal: scene bounding-box diagonal [m].
        dhat_epsilon_scale: threshold as a fraction of the diagonal.

    Returns:
        The updated kappa.
    """
    eps2 = (dhat_epsilon_scale * bbox_diagonal) ** 2
    if prev_min_distance2 < eps2 and min_distance2 < eps2 and min_distance2 < prev_min_distance2:
        return min(kappa_max, 2.0 * kappa)
    return kappa
