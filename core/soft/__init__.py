"""Tetrahedral finite elements for soft bodies.

- ``tet_mesh``: rest shape (``tet_Dm_inv``, ``tet_rest_volume``), lumped vertex masses, the
  deformation gradient ``F = Ds Dm^-1`` and Lamé parameters from Young's modulus and Poisson ratio.
- ``materials``: hyperelastic energy densities (stable neo-Hookean, fixed corotated), their PK1
  stress ``P = dPsi/dF`` and tangent ``dP/dF`` (9x9), the chain rule to the 12 nodal coordinates
  of a tet, PSD projection, and batch kernels ``elastic_energy`` / ``elastic_gradient`` /
  ``elastic_hessian_blocks`` over all tets.

Conventions: float64, SI units; vertices ``x`` (vertex_count, 3) [m]; ``tet_indices``
(tet_count, 4) int32; a 3x3 matrix ``F`` is flattened row-major, ``vec(F)[3*i + j] = F[i, j]``;
the 12 nodal coordinates of a tet are ordered ``[x0, y0, z0, x1, ..., z3]``.
"""
