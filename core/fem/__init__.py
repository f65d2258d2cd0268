"""The FEM layer the soft and the IPC engines share: tetrahedral meshes, materials and the world of FEM bodies.

Neither engine imports the other; both build on this package:

- ``tet_mesh`` (rest shape ``tet_Dm_inv``/``tet_rest_volume``, lumped masses, ``F = Ds Dm^-1``, Lamé
  parameters, the chain rule to a tet's 12 coordinates), ``energy_densities`` (stable neo-Hookean, fixed
  corotated, classical neo-Hookean: ``Psi``, ``P = dPsi/dF``, ``dP/dF`` 9x9), ``eigensystem`` (analytic PSD
  projection), ``materials`` (the model enum and the batch kernels), ``kernels_elastic`` (energy, gradient and
  Hessian blocks over all tets of a world);
- ``lattice`` (embedded lattice tetrahedralization), ``volume`` (volume penalty), ``primitives`` (procedural
  test meshes);
- ``world`` (the builder and the flattened model of FEM bodies, colliders and pins), ``stepping`` (what both
  frame loops do around a step: set-up, substep targets, divergence check), ``trajectory`` (the result).

The small 3x3 linear algebra the kernels use is in :mod:`contact_lab.core.math.small_linalg`.

Conventions: float64, SI units; vertices ``x`` (vertex_count, 3) [m]; ``tet_indices`` (tet_count, 4) int32; a
3x3 matrix ``F`` is flattened row-major, ``vec(F)[3*i + j] = F[i, j]``; the 12 nodal coordinates of a tet are
ordered ``[x0, y0, z0, x1, ..., z3]``.
"""
