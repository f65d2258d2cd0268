"""Union–find over integer ids, for the islands of the contact graph (sleeping, per-island contact solves)."""

from ..jit import njit_kernel


@njit_kernel
def union_find_root(parent, b):
    """Root of ``b``'s set in the forest ``parent`` (int array, ``parent[r] == r`` at a root), halving the path."""
    while parent[b] != b:
        parent[b] = parent[parent[b]]
        b = parent[b]
    return b
