"""Procedural test meshes (a box of tets, an icosphere), shared with the IPC engine: they live in
:mod:`contact_lab.core.fem.primitives`.

Scripts written against the soft engine import these names from here.
"""

from ..fem.primitives import box_tet_mesh, icosphere

__all__ = ["box_tet_mesh", "icosphere"]
