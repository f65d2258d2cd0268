"""Contact islands: the connected components of the contact graph over bodies of finite mass.

Two contacts belong to one island when a chain of contacts joins them through bodies with a positive inverse mass.
A body of infinite mass (the ground, a kinematic body) moves no matter what impulse reaches it, so it couples
nothing: a floor does not make every box standing on it one island. Contacts of different islands share no
Delassus entry (``J_i M^-1 J_j^T = 0``), so each island is a contact problem of its own, and a solver that shares a
number across rows (PROX's global r-factor, its back-off, its merit) must share it within an island only.

A joint couples its two bodies as a contact does: :func:`contact_joint_islands` unites them too, and lists each
island's joints, so a solver that works island by island solves an island's joints with its contacts.

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
    _unite_contacts(contact_body0, contact_body1, contact_count, body_inv_mass, parent, label)
    return _group_contacts(contact_body0, contact_body1, contact_count, body_inv_mass, parent, label, contact_island,
                           island_contacts, island_start)  # fmt: skip


@njit_kernel
def _unite_contacts(contact_body0, contact_body1, contact_count, body_inv_mass, parent, label):
    """Fresh union–find (``parent``, ``label`` (nb,)), then one union per contact between finite masses."""
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


@njit_kernel
def _group_contacts(contact_body0, contact_body1, contact_count, body_inv_mass, parent, label, contact_island,
                    island_contacts, island_start):  # fmt: skip
    """Number the islands in the order of their first contact and group the contacts by island (stable); returns
    the island count. ``parent`` is reused as the write cursor: the union–find is spent afterwards."""
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


@njit_kernel
def contact_joint_islands(contact_body0, contact_body1, contact_count, body_inv_mass, joint_body, parent, label,
                          contact_island, island_contacts, island_start, joint_island, island_joints,
                          island_joint_start):  # fmt: skip
    """:func:`contact_islands` with the joints ``joint_body`` (nj, 2) (-1: the world) uniting bodies too.

    Outputs besides the contacts': ``island_joints`` (nj,) the joint indices grouped by island (increasing within
    one), ``island_joint_start`` (c + 2,): island ``i`` holds ``island_joints[island_joint_start[i]:
    island_joint_start[i + 1]]``; the bucket after the last island holds the joints of no island (no contact
    reaches their bodies). ``joint_island`` (nj,): scratch. Returns the island count.
    """
    _unite_contacts(contact_body0, contact_body1, contact_count, body_inv_mass, parent, label)
    nj = joint_body.shape[0]
    for j in range(nj):
        b0, b1 = joint_body[j, 0], joint_body[j, 1]
        if b0 >= 0 and b1 >= 0 and body_inv_mass[b0] > 0.0 and body_inv_mass[b1] > 0.0:
            r0 = union_find_root(parent, b0)
            r1 = union_find_root(parent, b1)
            if r0 != r1:
                parent[max(r0, r1)] = min(r0, r1)
    # each joint's root before the grouping spends the union-find; the roots' labels exist only after it
    for j in range(nj):
        b = joint_body[j, 0]
        if b < 0 or body_inv_mass[b] <= 0.0:
            b = joint_body[j, 1]
        joint_island[j] = union_find_root(parent, b) if b >= 0 and body_inv_mass[b] > 0.0 else -1
    count = _group_contacts(contact_body0, contact_body1, contact_count, body_inv_mass, parent, label,
                            contact_island, island_contacts, island_start)  # fmt: skip
    for j in range(nj):
        root = joint_island[j]
        joint_island[j] = label[root] if root >= 0 and label[root] >= 0 else count
    for i in range(count + 2):
        island_joint_start[i] = 0
    for j in range(nj):
        island_joint_start[joint_island[j] + 1] += 1
    for i in range(count + 1):
        island_joint_start[i + 1] += island_joint_start[i]
    for i in range(count + 1):
        label[i] = island_joint_start[i]  # the labels are read: their array becomes the write cursor
    for j in range(nj):
        i = joint_island[j]
        island_joints[label[i]] = j
        label[i] += 1
    return count
