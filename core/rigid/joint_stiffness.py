"""Geometric stiffness of loaded joints: the inertia a step adds to bodies that joints pull on hard.

A joint carrying force ``f`` [N] at an anchor ``r`` [m] from the centre of mass, or torque ``t`` [N·m], stiffens the
body's turning by about ``|f| |r| + |t|`` [N·m/rad] (Andrews, Erleben and Ferguson 2017). The velocity rows leave
that stiffness out, so a link under a heavy load (the top of a long hanging chain) oscillates at ``sqrt(k_g / I)``,
and when that is above ``2 / h`` each step amplifies the zig-zag of the links until the chain blows up. A body
turning about a joint's anchor ``r`` swings with the inertia ``m r^2`` besides its own, so only the excess
``h^2 k_g - m r^2`` (``r`` its joints' longest arm) is added: every such mode then stays below about ``1 / h``, and
a body whose load is its own weight and swing (a pendulum's bob, a door) gets nothing. The added inertia resists
only the step's change of the angular velocity (the impulses' ``I'^-1 J^T lambda``), not the free turning, so a
steady spin keeps its energy.
"""

import math

from ..jit import njit_kernel


@njit_kernel
def _inverse3_into(a, b, out):
    """``out[b]`` = the inverse of ``a[b]`` (3, 3) by its adjugate: the rows of the adjugate are the cross products
    of ``a``'s columns, over the determinant (``a`` and ``out`` may be the same array)."""
    c00, c01, c02 = a[b, 0, 0], a[b, 1, 0], a[b, 2, 0]  # column 0
    c10, c11, c12 = a[b, 0, 1], a[b, 1, 1], a[b, 2, 1]  # column 1
    c20, c21, c22 = a[b, 0, 2], a[b, 1, 2], a[b, 2, 2]  # column 2
    r00, r01, r02 = c11 * c22 - c12 * c21, c12 * c20 - c10 * c22, c10 * c21 - c11 * c20  # c1 × c2
    r10, r11, r12 = c21 * c02 - c22 * c01, c22 * c00 - c20 * c02, c20 * c01 - c21 * c00  # c2 × c0
    r20, r21, r22 = c01 * c12 - c02 * c11, c02 * c10 - c00 * c12, c00 * c11 - c01 * c10  # c0 × c1
    det = c00 * r00 + c01 * r01 + c02 * r02
    out[b, 0, 0], out[b, 0, 1], out[b, 0, 2] = r00 / det, r01 / det, r02 / det
    out[b, 1, 0], out[b, 1, 1], out[b, 1, 2] = r10 / det, r11 / det, r12 / det
    out[b, 2, 0], out[b, 2, 1], out[b, 2, 2] = r20 / det, r21 / det, r22 / det


@njit_kernel
def stiffen_inertias(joint_body, joint_frame_pos, joint_broken, lam, body_inv_mass, dt, inv_inertia_world, stiff,
                     reach, inertia):  # fmt: skip
    """Raise each jointed body's inertia by the excess ``h^2 k_g - m r^2`` (module docstring), in place in
    ``inv_inertia_world`` (nb, 3, 3) [1/(kg·m²)]. ``lam`` (nj, R): the last step's row impulses [N·s] (rows 0–2
    linear, 3–5 angular); ``dt`` [s]; ``stiff``, ``reach`` (nb,), ``inertia`` (nb, 3, 3): scratch. A body that cannot
    turn (its inverse inertia singular) or has infinite mass gets nothing."""
    nj, nb = joint_body.shape[0], body_inv_mass.shape[0]
    loaded = False
    for j in range(nj):
        for r in range(6):
            if lam[j, r] != 0.0:
                loaded = True
    if not loaded:
        return
    stiff[:] = 0.0
    reach[:] = 0.0
    for side in range(2):
        for j in range(nj):
            b = joint_body[j, side]
            if joint_broken[j] or b < 0:
                continue
            force = math.sqrt(lam[j, 0] ** 2 + lam[j, 1] ** 2 + lam[j, 2] ** 2) / dt
            torque = math.sqrt(lam[j, 3] ** 2 + lam[j, 4] ** 2 + lam[j, 5] ** 2) / dt
            p = joint_frame_pos[j, side]
            arm = math.sqrt(p[0] ** 2 + p[1] ** 2 + p[2] ** 2)
            stiff[b] += force * arm + torque
            reach[b] = max(reach[b], arm)
    for b in range(nb):
        if body_inv_mass[b] <= 0.0:
            continue
        extra = dt * dt * stiff[b] - (1.0 / body_inv_mass[b]) * reach[b] ** 2
        if not extra > 0.0:
            continue
        a = inv_inertia_world
        det = (
            a[b, 0, 0] * (a[b, 1, 1] * a[b, 2, 2] - a[b, 2, 1] * a[b, 1, 2])
            + a[b, 1, 0] * (a[b, 2, 1] * a[b, 0, 2] - a[b, 0, 1] * a[b, 2, 2])
            + a[b, 2, 0] * (a[b, 0, 1] * a[b, 1, 2] - a[b, 1, 1] * a[b, 0, 2])
        )
        if not det > 0.0:
            continue
        _inverse3_into(inv_inertia_world, b, inertia)
        for i in range(3):
            inertia[b, i, i] += extra
        _inverse3_into(inertia, b, inv_inertia_world)
