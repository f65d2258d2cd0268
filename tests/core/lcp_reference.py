"""Brute-force references for small contact problems, shared by the solver tests."""

import itertools

import numpy as np


def brute_force_lcp(A, b):
    """The LCP ``0 <= x ⊥ A x + b >= 0`` solved by enumerating active sets (a few rows only): ``(x, v = A x + b)``."""
    n = len(b)
    for size in range(n + 1):
        for active in itertools.combinations(range(n), size):
            x = np.zeros(n)
            idx = list(active)
            if idx:
                x[idx] = np.linalg.lstsq(A[np.ix_(idx, idx)], -b[idx], rcond=None)[0]
            v = A @ x + b
            if x.min() >= -1e-10 and v.min() >= -1e-9 and np.all(np.abs(v[idx]) < 1e-9):
                return x, v
    raise AssertionError("no LCP solution found")
