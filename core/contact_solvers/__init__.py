"""Solvers of a contact problem, shared by the engines: Delassus blocks in, impulses out.

- ``dense``: PROX and PGS on an assembled Delassus matrix ``W`` (3n x 3n) with ``q`` and ``mu``
  (the soft engine's Dual contact, the FCLIB problems).
- ``rows``: the matrix-free Delassus operator on contact rows (``v = b + J M^-1 J^T lambda`` through
  body accumulators), which the row solvers below apply.
- ``kernels``: projected Gauss–Seidel (BLCP) and PROX blocked Gauss–Seidel on contact rows, r-factor
  strategies and the merit window.
- ``islands``: contact islands (connected components over finite-mass bodies), which PROX solves one by one.
- ``kernels_newton``: the non-smooth (Fischer–Burmeister) Newton method, local and blocked Gauss–Seidel.

No engine state reaches these kernels: only arrays of rows or matrices and scalars.
"""
