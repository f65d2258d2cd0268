"""Brute-force references for small contact problems, shared by the solver tests."""

import itertools

import numpy as np
from contact_lab.core.contact_solvers import fclib


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


def brute_force_box_friction(W, q, mu):
    """The box-friction BLCP of ``u = W r + q`` (normals ``0 <= u_n ⊥ r_n >= 0``, each tangent within ``±μ r_n`` with
    zero velocity inside, at ``−μ r_n`` with ``u >= 0``, at ``+μ r_n`` with ``u <= 0``) by enumerating every label
    of every row (2 per normal, 3 per tangent: a few contacts only): ``r`` (3m,)."""
    return brute_force_mixed(W, q, mu, np.zeros(0), np.zeros(0))


def random_local_problem(seed: int, contacts: int, mu: float):
    """A random FCLIB local problem: ``W = J Jᵀ / cols + 0.1 I`` (SPD) for a normal ``J`` (3c, 3c + 3), ``q`` normal
    with the first tangent rows tripled (sliding more often), every contact's coefficient ``mu``."""
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(3 * contacts, 3 * contacts + 3))
    W = J @ J.T / J.shape[1] + 0.1 * np.eye(3 * contacts)
    q = rng.normal(size=3 * contacts)
    q[1::3] *= 3.0
    return fclib.LocalProblem(W, q, np.full(contacts, mu))


def brute_force_mixed(W, q, mu, lo, hi):
    """The contacts' box-friction BLCP of :func:`brute_force_box_friction` over the first ``3m`` rows of ``u = W r +
    q`` together with ``p`` joint rows after them, each an impulse in its box ``[lo, hi]`` (zero velocity inside,
    ``u >= 0`` at a finite ``lo``, ``u <= 0`` at a finite ``hi``), by enumerating every row's label: ``r`` (3m + p,)."""
    nc, n = 3 * len(mu), q.shape[0]
    choices = [(0, 1) if i % 3 == 0 else (0, 1, 2) for i in range(nc)]
    for i in range(n - nc):  # a bound is a label only where it is finite
        choices.append((0,) + ((1,) if np.isfinite(lo[i]) else ()) + ((2,) if np.isfinite(hi[i]) else ()))
    for labels in itertools.product(*choices):
        M, rhs = np.zeros((n, n)), np.zeros(n)
        for i, label in enumerate(labels):
            k = 3 * (i // 3)
            if label == 0:
                M[i], rhs[i] = W[i], -q[i]
            elif i >= nc:
                M[i, i], rhs[i] = 1.0, (lo if label == 1 else hi)[i - nc]
            elif i % 3 == 0:
                M[i, i] = 1.0
            else:
                M[i, i], M[i, k] = 1.0, (mu[i // 3] if label == 1 else -mu[i // 3])
        try:
            r = np.linalg.solve(M, rhs)
        except np.linalg.LinAlgError:
            continue
        u = W @ r + q
        ok = True
        for i, label in enumerate(labels):
            if i >= nc:
                ok &= lo[i - nc] - 1e-12 <= r[i] <= hi[i - nc] + 1e-12
            elif i % 3 == 0:
                ok &= r[i] >= -1e-12
            elif label == 0:
                ok &= abs(r[i]) <= mu[i // 3] * r[3 * (i // 3)] + 1e-12
            if label == 1:
                ok &= u[i] >= -1e-12
            elif label == 2:
                ok &= u[i] <= 1e-12
        if ok:
            return r
    raise AssertionError("no solution of the mixed problem found")
