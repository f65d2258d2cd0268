"""The one place that owns numba decorators and the JIT policy.

Every kernel in ``core`` is decorated through this module, so the cache and
floating-point policy is set once: ``cache=True`` (cold compile dominates the
user experience inside Blender), no ``fastmath`` (contact code relies on NaN/inf
checks and reproducible results), ``error_model="numpy"`` (division by zero gives
inf/NaN instead of raising inside kernels).

Inside Blender the add-on points ``numba.config.CACHE_DIR`` at the extension's
user directory *before* any kernel module is imported (see ``addon/warmup/jitcache.py``).
"""

import functools

import numba

njit_kernel = functools.partial(numba.njit, cache=True, fastmath=False, error_model="numpy", nogil=True)
"""Decorator for serial kernels."""

njit_parallel = functools.partial(
    numba.njit, cache=True, fastmath=False, error_model="numpy", nogil=True, parallel=True
)
"""Decorator for loops whose iterations are independent (no scatter-add)."""

prange = numba.prange

__all__ = ["njit_kernel", "njit_parallel", "prange"]
