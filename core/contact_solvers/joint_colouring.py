"""Chunks of joints coloured so that a Gauss–Seidel pass can run them on every core and stay deterministic.

A pass over joints (a velocity sweep's blocks, a projection's joints) visits them in a fixed order. Cut that order
into chunks of ``JOINT_CHUNK`` consecutive joints and give each chunk the lowest colour no chunk before it that
shares a body already has (greedy colouring of the chunks' conflict graph). Chunks of one colour touch disjoint
bodies, so they can run at the same time, and the pass that visits the colours in turn, each chunk front to back,
gives the same numbers, bit for bit, on one thread or many. Bodies of infinite mass (the world, passive and
kinematic bodies) do not join chunks: nothing is added to their accumulators but zeros.

Joints built in order (a wall row by row, a chain link by link) give chunks that touch only their neighbours: two
or three colours. The order within a chunk is the pass's own, so a pass differs from the plain one only in which
chunk comes first.
"""

import numpy as np

from ..jit import njit_kernel

JOINT_CHUNK = 128
"""Joints per chunk (a chunk's work, some tens of microseconds, dwarfs the cost of handing it to a thread)."""
MAX_COLOURS = 62
"""More colours than this (a hub body in hundreds of joints): the pass runs in its plain order instead."""


@njit_kernel
def chunk_count(start, end):
    """Chunks of ``JOINT_CHUNK`` joints that cover the positions ``start:end`` of an order."""
    return (end - start + JOINT_CHUNK - 1) // JOINT_CHUNK


@njit_kernel
def colour_chunks(order, start, end, joint_body, body_inv_mass, body_mask, chunk_colour):
    """Colour the chunks of ``order[start:end]`` (joint indices): chunk ``c`` (positions ``start + c JOINT_CHUNK``
    onwards) gets ``chunk_colour[start + c]``. ``joint_body`` (nj, 2), a negative index the world; ``body_inv_mass``
    (nb,) [1/kg]; ``body_mask`` (nb,) int64 scratch (each body's colours so far, as bits). Returns the number of
    colours, or 0 when a chunk would need more than ``MAX_COLOURS`` (the caller then runs the plain pass)."""
    chunks = chunk_count(start, end)
    for p in range(start, end):
        for side in range(2):
            b = joint_body[order[p], side]
            if b >= 0:
                body_mask[b] = 0
    colours = 0
    for c in range(chunks):
        first, last = start + c * JOINT_CHUNK, min(start + (c + 1) * JOINT_CHUNK, end)
        used = np.int64(0)
        for p in range(first, last):
            for side in range(2):
                b = joint_body[order[p], side]
                if b >= 0 and body_inv_mass[b] > 0.0:
                    used |= body_mask[b]
        colour = 0
        while colour < MAX_COLOURS and (used >> colour) & 1:
            colour += 1
        if colour == MAX_COLOURS:
            return 0
        chunk_colour[start + c] = colour
        colours = max(colours, colour + 1)
        bit = np.int64(1) << colour
        for p in range(first, last):
            for side in range(2):
                b = joint_body[order[p], side]
                if b >= 0 and body_inv_mass[b] > 0.0:
                    body_mask[b] |= bit
    return colours
