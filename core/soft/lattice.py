"""The embedded lattice tetrahedralization of soft bodies, shared with the IPC engine: it lives in
:mod:`contact_lab.core.fem.lattice`.

The Blender bridge imports these names from here.
"""

from ..fem.lattice import LatticeMesh, compute_winding_numbers, tetrahedralize_lattice

__all__ = ["LatticeMesh", "compute_winding_numbers", "tetrahedralize_lattice"]
