"""Convex hulls for the CONVEX shape: construction (builder time) and the flat arrays the kernels read.

CONTRACT (fixed; the narrow phase and the builder both depend on it):

:class:`HullArrays` holds every hull of a model in CSR form, all coordinates in the owning shape's frame [m]:

- ``hull_vert_start`` (H+1,) int32: hull h owns vertices ``hull_verts[hull_vert_start[h]:hull_vert_start[h+1]]``;
- ``hull_verts`` (V, 3) float64;
- ``hull_face_start`` (H+1,) int32: hull h owns faces ``hull_face_start[h]:hull_face_start[h+1]`` (global ids);
- ``hull_face_plane`` (F, 4) float64: outward unit normal n and offset d, ``n · x = d`` on the face plane,
  ``n · x <= d`` inside;
- ``hull_face_vert_start`` (F+1,) int32 and ``hull_face_verts`` (K,) int32: the face polygon's vertices as
  *global* indices into ``hull_verts``, counter-clockwise seen from outside (right-handed about n); coplanar
  triangles are merged, so a box hull has six quads;
- ``hull_edge_start`` (H+1,) int32 and ``hull_edges`` (E, 2) int32: every hull edge once, global vertex indices.

An empty model has H = 0 and zero-length arrays of the same dtypes (one Numba specialization).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class HullArrays(NamedTuple):
    """Flat arrays of every convex hull of a model (see the module docstring for the layout)."""

    hull_vert_start: np.ndarray
    hull_verts: np.ndarray
    hull_face_start: np.ndarray
    hull_face_plane: np.ndarray
    hull_face_vert_start: np.ndarray
    hull_face_verts: np.ndarray
    hull_edge_start: np.ndarray
    hull_edges: np.ndarray


def empty_hull_arrays() -> HullArrays:
    """The :class:`HullArrays` of a model without hulls (zero-length arrays, the kernels' dtypes)."""
    return HullArrays(
        np.zeros(1, np.int32),
        np.zeros((0, 3)),
        np.zeros(1, np.int32),
        np.zeros((0, 4)),
        np.zeros(1, np.int32),
        np.zeros(0, np.int32),
        np.zeros(1, np.int32),
        np.zeros((0, 2), np.int32),
    )
