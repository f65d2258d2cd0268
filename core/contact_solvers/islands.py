"""Contact islands: the connected components of the contact graph over bodies of finite mass.

Two contacts belong to one island when a chain of contacts joins them through bodies with a positive inverse mass.
A body of infinite mass (the ground, a kinematic body) moves no matter what impulse reaches it, so it couples
nothing: a floor does not make every box standing on it one island. Contacts of different islands share no
Delassus entry (``J_i M^-1 J_j^T = 0``), so each island is a contact problem of its own, and a solver that shares a
number across rows (PROX's global r-factor, its back-off, its merit) must share it within an island only.

Deterministic: the islands are numbered in the order of their first contact, and each island keeps its contacts in
their original order, so a scene that is one island gives the identity order.
"""

import numpy as np

from ..jit import njit_kernel
from ..math.union_find import union_find_root


@njit_kernel
def contact_islands(
    contact_body0,
    contact_body1,
    contact_count,
    body_inv_mass,
    # scratch
    parent,
    label,
    contact_island,
    # outputs
    island_contacts,
    island_start,
):
    """Group the first ``contact_count`` contacts into islands; returns the island count.

    Args:
        contact_body0, contact_body1 (c,) int: the contacts' bodies. body_inv_mass (nb,) [1/kg]: a body with 0
            joins no island.
        parent, label (nb,) int; contact_island (c,) int: scratch (union–find parents, island number of a root,
            island number of a contact).
        island_contacts (c,) int: out, the contact indices grouped by island, each island's in increasing order.
        island_start (c + 1,) int: out, island ``i`` holds ``island_contacts[island_start[i]:island_start[i + 1]]``.
    """
    for b in range(parent.shape[0]):
        parent[b] = b
        label[b] = -1
    for k in range(contact_count):
        b0 = contact_body0[k]
        b1 = contact_body1[k]
        if body_inv_mass[b0] > 0.0 and body_inv_mass[b1] > 0.0:
            r0 = union_find_root(parent, np.int64(b0))  # int64 like the sleeping islands' (one compile)
            r1 = union_find_root(parent, np.int64(b1))
            if r0 != r1:
                parent[max(r0, r1)] = min(r0, r1)  # the smaller index is the root: independent of visit order
    count = 0
    for k in range(contact_count):
        # a contact belongs to its finite-mass body's island (both bodies' are the same after the unions);
        # one without any (two infinite masses: the engines make none) joins those of its first body
        b = contact_body0[k] if body_inv_mass[contact_body0[k]] > 0.0 else contact_body1[k]
        if body_inv_mass[b] <= 0.0:
            b = contact_body0[k]
        r = union_find_root(parent, np.int64(b))
        if label[r] < 0:
            label[r] = count
            count += 1
        contact_island[k] = label[r]
    # counting sort by island, stable: island_start holds the sizes, then their prefix sums
    for i in range(count + 1):
        island_start[i] = 0
    for k in range(contact_count):
        island_start[contact_island[k] + 1] += 1
    for i in range(count):
        island_start[i + 1] += island_start[i]
    for i in range(count):
        parent[i] = island_start[i]  # the union–find is done: its array becomes the write cursor (count <= nb)
    for k in range(contact_count):
        i = contact_island[k]
        island_contacts[parent[i]] = k
        parent[i] += 1
    return count
