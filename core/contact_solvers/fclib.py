"""FCLIB files: frictional contact problems in HDF5, read and written as the FCLIB collection lays them out.

FCLIB (Acary, Brémond, Koziara and Pérignon, "FCLIB: a collection of discrete 3D frictional contact problems") is
the exchange format of Siconos, LMGC90 and their benchmark collections. Two formulations:

- **local**: find the contact impulses ``r`` and velocities ``u = W r + q`` with ``r`` in the Coulomb cone
  ``K = {‖r_T‖ <= μ r_N}`` per contact and ``û = u + μ‖u_T‖ e_N`` in its dual (De Saxcé's modified velocity).
  ``W`` is the Delassus matrix (3m × 3m), each contact's unknowns packed as ``[normal, tangent 1, tangent 2]``.
- **global**: ``M v = H r + f`` and ``u = Hᵀ v + w`` with the same cone conditions (``M`` n × n, ``H`` n × 3m), plus
  optional equality rows ``G`` (``Gᵀ v + b = 0``).

Layout (one HDF5 file): ``/fclib_local/{spacedim, W/, V/, R/, vectors/{q, s, mu}, info/}`` or
``/fclib_global/{spacedim, M/, H/, G/, vectors/{f, w, b, mu}, info/}``, a solution in ``/solution/{v, u, r, l}``,
starting guesses in ``/guesses/{number_of_guesses, 1/, 2/, ...}``. Each matrix is a group ``nzmax, m, n, nz, p, i, x``
in CSparse's conventions: ``nz >= 0`` triplets (``i`` rows, ``p`` columns), ``nz = -1`` compressed columns,
``nz = -2`` compressed rows. Matrices are read into dense arrays (the problems the collection holds for study fit;
a scene's local problem is written from its dense Delassus matrix) and written as compressed columns.

Needs ``h5py`` (a developer and test dependency, not bundled with the extension): every function that touches a file
imports it and says how to install it when it is missing. Set-up code, not a kernel: NumPy only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SPACEDIM = 3
"""Contact space dimension the solvers take: normal and two tangents per contact."""


class FclibError(ValueError):
    """A file that is not an FCLIB problem this reader takes; the message says what is wrong."""


@dataclass
class Info:
    """The ``info`` group: free text about the problem."""

    title: str = ""
    description: str = ""
    math_info: str = ""


@dataclass
class LocalProblem:
    """FC(W, q, μ): ``W`` (3m, 3m) Delassus matrix [m/(N·s)], ``q`` (3m,) free contact velocity [m/s], ``mu`` (m,)
    friction coefficients. ``V``, ``R``, ``s`` are the optional mixed rows of the format (kept when read)."""

    W: np.ndarray
    q: np.ndarray
    mu: np.ndarray
    spacedim: int = SPACEDIM
    V: np.ndarray | None = None
    R: np.ndarray | None = None
    s: np.ndarray | None = None
    info: Info = field(default_factory=Info)

    @property
    def contact_count(self) -> int:
        return int(self.mu.shape[0])


@dataclass
class GlobalProblem:
    """GM3DFC: ``M`` (n, n) mass matrix, ``H`` (n, 3m) contact directions, ``f`` (n,) momentum terms, ``w`` (3m,)
    contact velocity offsets, ``mu`` (m,); ``G`` (n, p) and ``b`` (p,) the optional equality rows."""

    M: np.ndarray
    H: np.ndarray
    f: np.ndarray
    w: np.ndarray
    mu: np.ndarray
    spacedim: int = SPACEDIM
    G: np.ndarray | None = None
    b: np.ndarray | None = None
    info: Info = field(default_factory=Info)


@dataclass
class Solution:
    """``/solution`` or one guess: ``v`` (n,) global velocities, ``u`` (3m,) contact velocities, ``r`` (3m,) contact
    impulses, ``l`` (p,) equality multipliers; each None when absent."""

    v: np.ndarray | None = None
    u: np.ndarray | None = None
    r: np.ndarray | None = None
    l: np.ndarray | None = None  # noqa: E741 (FCLIB's name)


def _h5py():
    try:
        import h5py
    except ImportError as exc:  # not bundled with the extension
        raise FclibError("reading and writing FCLIB files needs h5py: pip install h5py") from exc
    return h5py


# ---- matrices ---------------------------------------------------------------------------------------------------


def _scalar(group, name: str) -> int:
    return int(np.asarray(group[name][()]).reshape(-1)[0])


def read_matrix(group) -> np.ndarray:
    """A CSparse matrix group (triplets, compressed columns or compressed rows) as a dense (m, n) array."""
    m, n, nz = _scalar(group, "m"), _scalar(group, "n"), _scalar(group, "nz")
    p, i = np.asarray(group["p"][()], np.int64), np.asarray(group["i"][()], np.int64)
    x = np.asarray(group["x"][()], np.float64)
    out = np.zeros((m, n))
    if nz >= 0:  # triplets: entry k at (i[k], p[k]); repeated entries add up
        np.add.at(out, (i[:nz], p[:nz]), x[:nz])
    elif nz in (-1, -2):
        major = n if nz == -1 else m
        if p.shape[0] != major + 1 or p[0] != 0 or np.any(np.diff(p) < 0) or p[-1] > min(i.shape[0], x.shape[0]):
            raise FclibError(f"matrix {group.name}: its pointers p do not describe {major} compressed vectors")
        count = int(p[-1])
        outer = np.repeat(np.arange(major), np.diff(p))
        rows, cols = (i[:count], outer) if nz == -1 else (outer, i[:count])
        np.add.at(out, (rows, cols), x[:count])
    else:
        raise FclibError(f"matrix {group.name}: nz = {nz} is none of CSparse's layouts (>= 0, -1, -2)")
    return out


def write_matrix(parent, name: str, A: np.ndarray) -> None:
    """``A`` (m, n) as compressed columns (``nz = -1``) of its non-zero entries, in group ``parent/name``."""
    A = np.asarray(A, np.float64)
    cols, rows = np.nonzero(A.T)  # column-major order
    p = np.zeros(A.shape[1] + 1, np.int32)
    np.cumsum(np.bincount(cols, minlength=A.shape[1]), out=p[1:])
    g = parent.create_group(name)
    for key, value in (("nzmax", rows.shape[0]), ("m", A.shape[0]), ("n", A.shape[1]), ("nz", -1)):
        g.create_dataset(key, data=np.array([value], np.int32))
    g.create_dataset("p", data=p)
    g.create_dataset("i", data=rows.astype(np.int32))
    g.create_dataset("x", data=A[rows, cols])


# ---- problems ---------------------------------------------------------------------------------------------------


def _text(group, name: str) -> str:
    if name not in group:
        return ""
    value = group[name][()]
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _read_info(group) -> Info:
    info = group.get("info")
    if info is None:
        return Info()
    return Info(_text(info, "title"), _text(info, "description"), _text(info, "math_info"))


def _write_info(group, info: Info) -> None:
    g = group.create_group("info")
    for key in ("title", "description", "math_info"):
        g.create_dataset(key, data=np.bytes_(getattr(info, key).encode("utf-8")))


def _vector(group, name: str) -> np.ndarray:
    if name not in group:
        raise FclibError(f"{group.name} has no {name}")
    return np.asarray(group[name][()], np.float64).reshape(-1)


def _maybe_vector(group, name: str) -> np.ndarray | None:
    return _vector(group, name) if name in group else None


def _check_friction(mu: np.ndarray, contacts: int, where: str) -> None:
    if mu.shape[0] != contacts:
        raise FclibError(f"{where}: {mu.shape[0]} friction coefficients for {contacts} contacts")
    if not np.all(np.isfinite(mu)) or np.any(mu < 0.0):
        raise FclibError(f"{where}: the friction coefficients mu must be finite and not negative")


def _open_file(path) -> Any:
    """FCLIB file ``path`` opened for reading (an ``h5py.File``), or :class:`FclibError` naming the problem."""
    h5py = _h5py()
    if not os.path.isfile(path):
        raise FclibError(f"{path}: no such file")
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise FclibError(f"{path} is not an HDF5 file ({exc})") from exc


def _open_group(f, name: str, path) -> Any:
    if name not in f:
        found = ", ".join(sorted(f.keys())) or "nothing"
        raise FclibError(f"{path} holds no /{name} problem (found: {found})")
    g: Any = f[name]  # an h5py Group
    spacedim = _scalar(g, "spacedim")
    if spacedim != SPACEDIM:
        raise FclibError(f"{path}: a {spacedim}D problem; only 3D contact problems are solved here")
    return g


def read_local(path) -> LocalProblem:
    """The local problem of FCLIB file ``path``; :class:`FclibError` says what is wrong with a file it refuses."""
    f = _open_file(path)
    with f:
        g = _open_group(f, "fclib_local", path)
        W = read_matrix(g["W"])
        q = _vector(g["vectors"], "q")
        mu = _vector(g["vectors"], "mu")
        if W.shape[0] != W.shape[1] or W.shape[0] != q.shape[0] or W.shape[0] % SPACEDIM:
            raise FclibError(f"{path}: W is {W.shape[0]} × {W.shape[1]} and q has {q.shape[0]} entries")
        _check_friction(mu, W.shape[0] // SPACEDIM, str(path))
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(q))):
            raise FclibError(f"{path}: W or q holds NaN or infinite entries")
        mixed = {name: read_matrix(g[name]) if name in g else None for name in ("V", "R")}
        s = _maybe_vector(g["vectors"], "s")
        return LocalProblem(W, q, mu, SPACEDIM, mixed["V"], mixed["R"], s, _read_info(g))


def _write_problem(path, name: str, spacedim: int, matrices: dict, vectors: dict, info: Info, solution, guesses):
    """One FCLIB file: group ``name`` with its matrices and vectors (None entries left out), then the solutions."""
    h5py = _h5py()
    with h5py.File(path, "w") as f:
        g = f.create_group(name)
        g.create_dataset("spacedim", data=np.array([spacedim], np.int32))
        for key, matrix in matrices.items():
            if matrix is not None:
                write_matrix(g, key, matrix)
        group = g.create_group("vectors")
        for key, vector in vectors.items():
            if vector is not None:
                group.create_dataset(key, data=np.asarray(vector, np.float64))
        _write_info(g, info)
        _write_solutions(f, solution, guesses)


def write_local(path, problem: LocalProblem, solution: Solution | None = None, guesses=()) -> None:
    """``problem`` (and its solution and guesses, if given) as FCLIB file ``path`` (overwritten)."""
    matrices = {"W": problem.W, "V": problem.V, "R": problem.R}
    vectors = {"q": problem.q, "mu": problem.mu, "s": problem.s}
    _write_problem(path, "fclib_local", problem.spacedim, matrices, vectors, problem.info, solution, guesses)


def read_global(path) -> GlobalProblem:
    """The global problem of FCLIB file ``path``."""
    f = _open_file(path)
    with f:
        g = _open_group(f, "fclib_global", path)
        M, H = read_matrix(g["M"]), read_matrix(g["H"])
        v = g["vectors"]
        f_, w, mu = _vector(v, "f"), _vector(v, "w"), _vector(v, "mu")
        if M.shape != (H.shape[0], H.shape[0]) or f_.shape[0] != M.shape[0] or w.shape[0] != H.shape[1]:
            raise FclibError(f"{path}: M {M.shape}, H {H.shape}, f {f_.shape} and w {w.shape} do not fit together")
        _check_friction(mu, H.shape[1] // SPACEDIM, str(path))
        G = read_matrix(g["G"]) if "G" in g else None
        return GlobalProblem(M, H, f_, w, mu, SPACEDIM, G, _maybe_vector(v, "b"), _read_info(g))


def write_global(path, problem: GlobalProblem, solution: Solution | None = None, guesses=()) -> None:
    """``problem`` (and its solution and guesses, if given) as FCLIB file ``path`` (overwritten)."""
    matrices = {"M": problem.M, "H": problem.H, "G": problem.G}
    vectors = {"f": problem.f, "w": problem.w, "mu": problem.mu, "b": problem.b}
    _write_problem(path, "fclib_global", problem.spacedim, matrices, vectors, problem.info, solution, guesses)


# ---- solutions --------------------------------------------------------------------------------------------------


def _read_solution_group(g) -> Solution:
    return Solution(*(_maybe_vector(g, name) for name in ("v", "u", "r", "l")))


def _write_solution_group(g, solution: Solution) -> None:
    for name in ("v", "u", "r", "l"):
        value = getattr(solution, name)
        if value is not None:
            g.create_dataset(name, data=np.asarray(value, np.float64))


def _write_solutions(f, solution: Solution | None, guesses) -> None:
    if solution is not None:
        _write_solution_group(f.create_group("solution"), solution)
    guesses = list(guesses)
    if guesses:
        g = f.create_group("guesses")
        g.create_dataset("number_of_guesses", data=np.array([len(guesses)], np.int32))
        for k, guess in enumerate(guesses, start=1):
            _write_solution_group(g.create_group(str(k)), guess)


def read_solution(path) -> tuple[Solution | None, list[Solution]]:
    """``(solution or None, guesses)`` stored in FCLIB file ``path``."""
    with _open_file(path) as f:
        solution = _read_solution_group(f["solution"]) if "solution" in f else None
        guesses = []
        if "guesses" in f:
            g: Any = f["guesses"]
            guesses = [_read_solution_group(g[str(k)]) for k in range(1, _scalar(g, "number_of_guesses") + 1)]
        return solution, guesses


def write_solution(path, solution: Solution) -> None:
    """``solution`` alone as ``/solution`` of a new FCLIB file ``path`` (overwritten)."""
    h5py = _h5py()
    with h5py.File(path, "w") as f:
        _write_solution_group(f.create_group("solution"), solution)


# ---- merit ------------------------------------------------------------------------------------------------------


def project_coulomb_cone(x: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Each contact's ``x[c] = (n, t1, t2)`` projected on ``{‖t‖ <= μ n}``: (m, 3) in and out."""
    n, t = x[:, 0], np.linalg.norm(x[:, 1:], axis=1)
    out = x.copy()
    below = mu * t <= -n  # inside the polar cone: the apex
    out[below] = 0.0
    between = ~below & (t > mu * n)  # outside both cones: onto the cone's surface
    scale = (n[between] + mu[between] * t[between]) / (1.0 + mu[between] ** 2)
    out[between, 0] = scale
    direction = x[between, 1:] / np.maximum(t[between], 1e-300)[:, None]
    out[between, 1:] = (mu[between] * scale)[:, None] * direction
    return out


def natural_map_error(r: np.ndarray, u: np.ndarray, mu: np.ndarray) -> float:
    """``sqrt(Σ_c ‖r_c − Π_K(r_c − û_c)‖²)`` with ``û = u + μ‖u_T‖ e_N``: zero exactly at a solution of the cone
    complementarity. ``r``, ``u`` (3m,), ``mu`` (m,)."""
    R, U = np.asarray(r, np.float64).reshape(-1, 3), np.asarray(u, np.float64).reshape(-1, 3).copy()
    U[:, 0] += mu * np.linalg.norm(U[:, 1:], axis=1)
    return float(np.linalg.norm(R - project_coulomb_cone(R - U, mu)))


def local_merit(problem: LocalProblem, r: np.ndarray) -> float:
    """FCLIB's merit of impulses ``r`` (3m,) for a local problem: the natural-map error of ``r`` and
    ``u = W r + q``, divided by ``1 + sqrt(‖q‖)`` as FCLIB's own ``fclib_merit_local`` divides it."""
    u = problem.W @ r + problem.q
    return natural_map_error(r, u, problem.mu) / (1.0 + np.sqrt(np.linalg.norm(problem.q)))
