"""IPC kernels side by side with the IPC Toolkit (ipctk 1.6.1) on the same candidate sets.

Run: ``.venv/bin/python tests/benchmarks/bench_ipc_kernels.py [--levels 4,5] [--dhat 4e-3] [--repeats 3]``.

Scene per level ``L``: two concentric icospheres of ``20 * 4^L`` triangles each (the outer one of
radius ~1 m, randomly rotated) whose surfaces are ``gap = dhat / 2`` apart at the closest (the outer
radius accounts for the flat faces), so every inner vertex is within dhat of the outer shell: a
large, uniform contact set; self-contact candidates within each sphere are kept, as in a solver.
The CCD end positions add a random displacement (normal, ``sigma = gap`` per coordinate) to every
vertex, so many pairs collide within the step.

Candidates are built once on each side (ours: ``collision_candidates`` with inflation ``dhat / 2``,
the rule of ipctk's ``NormalCollisions.build``; ipctk: ``Candidates.build``) and OUR candidate set is
fed to ipctk (``Candidates.fv_candidates`` / ``ee_candidates``), so the narrow-phase rows compare
the kernels on identical pairs. The pipeline rows then run each side from the positions (own broad
phase + narrow phase). Per row: ours cold (first call in this process: JIT compile or Numba cache
load; "-" when already compiled), ours warm and ipctk warm (best of ``--repeats``), candidate pairs
per second and the speed-up ``ipctk / ours`` (> 1: ours faster).

What each side does per row (ipctk works on "collisions": candidates closer than dhat, classified by
distance type and merged, with integer weights):

- min distance: ours, a batch loop of ``point_triangle_distance2`` / ``edge_edge_distance2`` over every
  candidate; ipctk, ``NormalCollisions.build(candidates, ...)`` (distance of every candidate) plus
  ``compute_minimum_distance``.
- barrier value: ours ``barrier_energy``; ipctk ``NormalCollisions.build`` plus ``BarrierPotential``.
- gradient + PSD Hessian: ours ``barrier_assemble`` (gradient, per-pair 12x12 blocks clamped to PSD,
  no global matrix); ipctk ``build`` plus ``gradient`` plus ``hessian(..., CLAMP)``, which also
  assembles the global sparse matrix and hands it to SciPy (extra work ours leaves to the solver).
- CCD: ours ``max_collision_free_step`` (additive CCD, rescaling 0.9); ipctk
  ``Candidates.compute_collision_free_stepsize`` with ``AdditiveCCD()`` (rescaling 0.9) and with the
  default ``TightInclusionCCD()`` (rescaling 0.8). The algorithms differ, so the steps differ.

Threads: our distance and barrier kernels are serial, the broad phase and CCD use Numba threads;
ipctk uses TBB threads. Both counts are printed. Timings on a shared machine are noisy (run-to-run
variation of tens of percent is normal). The cold column depends on the Numba cache: the first run
after a change of ``core`` compiles (tens of seconds), later runs only load the cache. Not part of
``make test``.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
from contact_lab.core.ipc.distance import edge_edge_distance2, point_triangle_distance2
from contact_lab.core.ipc.kernels import PAIR_PT
from contact_lab.core.jit import njit_kernel


@njit_kernel
def min_distance2(xs, quads, kinds, dhat2):
    """``(min_k d_k^2, number of pairs with d_k^2 < dhat2)`` over the pairs (P, 4) of kinds (P,)."""
    dmin = np.inf
    active = 0
    for k in range(quads.shape[0]):
        q = quads[k]
        if kinds[k] == PAIR_PT:
            d2 = point_triangle_distance2(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]])
        else:
            d2 = edge_edge_distance2(xs[q[0]], xs[q[1]], xs[q[2]], xs[q[3]])
        dmin = min(dmin, d2)
        if d2 < dhat2:
            active += 1
    return dmin, active


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="4,5", help="icosphere subdivision levels, one scene each")
    parser.add_argument("--dhat", type=float, default=4e-3, help="barrier activation distance [m]")
    parser.add_argument("--repeats", type=int, default=3, help="warm repetitions (best is reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="Numba and ipctk (TBB) threads (0: defaults)")
    args = parser.parse_args(argv)

    import ipctk
    import numba

    if args.threads:
        numba.set_num_threads(args.threads)
        ipctk.set_num_threads(args.threads)

    print(
        f"ipctk {getattr(ipctk, '__version__', '?')} ({ipctk.get_num_threads()} TBB threads), "
        f"numba {numba.__version__} ({numba.get_num_threads()} threads); dhat = {args.dhat:g} m, kappa = 1; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared machine: timings are noisy)"
    )
    compiled = set()
    for level in (int(s) for s in args.levels.split(",")):
        run_scene(ipctk, level, args.dhat, args.repeats, np.random.default_rng(args.seed), compiled)


def shell_scene(level, gap, rng):
    """Two concentric icospheres ``gap`` apart at the closest; returns (x (V, 3), faces (F, 3) int64)."""
    from contact_lab.core.fem.primitives import icosphere

    inner, faces = icosphere(1.0, level)
    unit, _ = icosphere(1.0, level)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))  # random rotation (or reflection): no radial alignment
    unit = unit @ q.T
    if np.linalg.det(q) < 0:
        unit[:, 0] = -unit[:, 0]
    t = unit[faces]
    normals = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    plane = np.abs(np.einsum("ij,ij->i", normals, t[:, 0])) / np.linalg.norm(normals, axis=1)
    outer = unit * (1.0 + gap) / plane.min()  # lowest outer face plane at radius 1 + gap
    x = np.concatenate([inner, outer])
    return x, np.concatenate([faces, faces + len(inner)]).astype(np.int64)


def run_scene(ipctk, level, dhat, repeats, rng, compiled):
    from contact_lab.core.ipc.broad_phase import build_edges, collision_candidates
    from contact_lab.core.ipc.ccd import max_collision_free_step
    from contact_lab.core.ipc.kernels import barrier_assemble, barrier_energy, pair_quads

    gap = 0.5 * dhat
    dhat2 = dhat * dhat
    x, faces = shell_scene(level, gap, rng)
    x1 = x + gap * rng.normal(size=x.shape)
    edges = build_edges(faces)
    group = np.zeros(len(x), np.int64)
    print(
        f"\n== scene L{level}: two concentric icospheres, {len(faces)} triangles, {len(x)} vertices, "
        f"{len(edges)} edges, gap {gap:g} m; CCD displacement sigma {gap:g} m"
    )

    fx = np.asfortranarray(x)
    fx1 = np.asfortranarray(x1)
    mesh = ipctk.CollisionMesh(fx, np.asfortranarray(edges, np.int32), np.asfortranarray(faces, np.int32))
    rows = []

    def row(name, pairs, ours, theirs, cold_key=None):
        """Time ``ours`` (cold once per ``cold_key`` and process) and ``theirs``; return both results."""
        cold = None
        if cold_key is not None and cold_key not in compiled:
            cold = _timed(ours)[1]
            compiled.add(cold_key)
        out_ours, warm = _best(ours, repeats)
        out_theirs, warm_t = _best(theirs, repeats)
        rows.append([name, pairs, cold, warm, warm_t])
        return out_ours, out_theirs

    # broad phase, static (barrier set) and swept (CCD)
    (vf, ee), cands = row(
        "broad phase, static (dhat/2)",
        None,
        lambda: collision_candidates(x, x, faces, edges, group, 0.5 * dhat),
        lambda: _ipctk_candidates(ipctk, mesh, fx, None, 0.5 * dhat),
        "broad",
    )
    (svf, see), scands = row(
        "broad phase, swept x0 -> x1",
        None,
        lambda: collision_candidates(x, x1, faces, edges, group, 0.0),
        lambda: _ipctk_candidates(ipctk, mesh, fx, fx1, 0.0),
    )
    rows[0][1] = len(vf) + len(ee)
    rows[1][1] = len(svf) + len(see)
    print(
        f"candidates: static ours {len(vf)} VF + {len(ee)} EE, ipctk {len(cands.fv_candidates)} FV + "
        f"{len(cands.ee_candidates)} EE; swept ours {len(svf)} + {len(see)}, ipctk "
        f"{len(scands.fv_candidates)} + {len(scands.ee_candidates)}"
    )

    # the same candidate sets on both sides
    n = len(vf) + len(ee)
    quads = np.empty((n, 4), np.int64)
    kinds = np.empty(n, np.int64)
    pair_quads(vf, ee, faces, edges, quads, kinds)
    same = _ipctk_from_ours(ipctk, vf, ee)
    same_swept = _ipctk_from_ours(ipctk, svf, see)
    potential = ipctk.BarrierPotential(dhat, 1.0)

    def their_collisions():
        collisions = ipctk.NormalCollisions()
        collisions.build(same, mesh, fx, dhat)
        return collisions

    (d2min, active), dmin_t = row(
        "min distance",
        n,
        lambda: min_distance2(x, quads, kinds, dhat2),
        lambda: their_collisions().compute_minimum_distance(mesh, fx),
        "distance",
    )
    collisions = their_collisions()
    energy, energy_t = row(
        "barrier value",
        n,
        lambda: barrier_energy(x, quads, kinds, x, dhat2)[0],
        lambda: potential(their_collisions(), mesh, fx),
        "energy",
    )
    grad = np.zeros_like(x)
    free = np.ones(len(x), dtype=bool)  # every vertex moves (ipctk projects the whole stencil too)
    out_quads = np.empty((active, 4), np.int64)
    out_blocks = np.empty((active, 12, 12))

    def ours_assemble():
        grad[:] = 0.0
        return barrier_assemble(x, quads, kinds, x, free, dhat2, 1.0, grad, out_quads, out_blocks)

    def theirs_assemble():
        c = their_collisions()
        return potential.gradient(c, mesh, fx), potential.hessian(c, mesh, fx, ipctk.PSDProjectionMethod.CLAMP)

    (count, energy_a), (grad_t, hess_t) = row(
        "barrier gradient + PSD Hessian", n, ours_assemble, theirs_assemble, "assemble"
    )
    ns = len(svf) + len(see)
    alpha, alpha_t = row(
        "CCD step (ipctk AdditiveCCD)",
        ns,
        lambda: max_collision_free_step(x, x1, faces, edges, svf, see, 0.0),
        lambda: same_swept.compute_collision_free_stepsize(mesh, fx, fx1, 0.0, ipctk.AdditiveCCD()),
        "ccd",
    )
    _, alpha_ti = row(
        "CCD step (ipctk TightInclusionCCD)",
        ns,
        lambda: max_collision_free_step(x, x1, faces, edges, svf, see, 0.0),
        lambda: same_swept.compute_collision_free_stepsize(mesh, fx, fx1, 0.0, ipctk.TightInclusionCCD()),
    )

    # whole pipelines from positions (own broad phase each side)
    def ours_static():
        a, b = collision_candidates(x, x, faces, edges, group, 0.5 * dhat)
        m = len(a) + len(b)
        qq = np.empty((m, 4), np.int64)
        kk = np.empty(m, np.int64)
        pair_quads(a, b, faces, edges, qq, kk)
        return qq, kk

    def theirs_static():
        c = ipctk.NormalCollisions()
        c.build(mesh, fx, dhat)
        return c

    row(
        "pipeline: broad + barrier value",
        n,
        lambda: barrier_energy(x, *ours_static(), x, dhat2),
        lambda: potential(theirs_static(), mesh, fx),
    )

    def ours_pipeline_assemble():
        qq, kk = ours_static()  # the same candidates as above, so ``active`` blocks suffice
        grad[:] = 0.0
        return barrier_assemble(x, qq, kk, x, free, dhat2, 1.0, grad, out_quads, out_blocks)

    def theirs_pipeline_assemble():
        c = theirs_static()
        return potential.gradient(c, mesh, fx), potential.hessian(c, mesh, fx, ipctk.PSDProjectionMethod.CLAMP)

    row("pipeline: broad + gradient + Hessian", n, ours_pipeline_assemble, theirs_pipeline_assemble)

    def ours_pipeline_ccd():
        a, b = collision_candidates(x, x1, faces, edges, group, 0.0)
        return max_collision_free_step(x, x1, faces, edges, a, b, 0.0)

    row(
        "pipeline: broad + CCD (Additive)",
        ns,
        ours_pipeline_ccd,
        lambda: ipctk.compute_collision_free_stepsize(mesh, fx, fx1, 0.0, None, ipctk.AdditiveCCD()),
    )

    _print_table(rows)
    _print_agreement(
        dict(d2min=d2min, dmin_t=dmin_t, active=active, count=count, collisions=collisions, energy=energy,
             energy_t=energy_t, energy_a=energy_a, grad=grad, grad_t=grad_t, hess_t=hess_t, out_quads=out_quads,
             out_blocks=out_blocks, alpha=alpha, alpha_t=alpha_t, alpha_ti=alpha_ti)
    )  # fmt: skip


def _print_table(rows):
    print(
        f"{'':38} {'pairs':>9} {'ours cold':>10} {'ours warm':>10} {'ipctk warm':>10} "
        f"{'ours':>8} {'ipctk':>8} {'speed-up':>10}"
    )
    print(f"{'':38} {'':>9} {'[ms]':>10} {'[ms]':>10} {'[ms]':>10} {'Mpair/s':>8} {'Mpair/s':>8} {'ipctk/ours':>10}")
    for name, pairs, cold, warm, warm_t in rows:
        cold_s = "-" if cold is None else f"{cold * 1e3:.0f}"
        print(
            f"{name:38} {pairs:>9} {cold_s:>10} {warm * 1e3:>10.2f} {warm_t * 1e3:>10.2f} "
            f"{pairs / warm / 1e6:>8.2f} {pairs / warm_t / 1e6:>8.2f} {warm_t / warm:>9.2f}x"
        )


def _print_agreement(v):
    """Accuracy of ours against ipctk on the same candidates (``v``: the scene's locals)."""
    d_ours = math.sqrt(v["d2min"])
    d_theirs = math.sqrt(v["dmin_t"])  # ipctk returns the minimum SQUARED distance
    collisions = v["collisions"]
    print(
        f"active pairs (d < dhat): ours {v['active']} candidates (assemble {v['count']}), ipctk "
        f"{len(collisions)} collisions = {len(collisions.vv_collisions)} VV + {len(collisions.ev_collisions)} EV + "
        f"{len(collisions.fv_collisions)} FV + {len(collisions.ee_collisions)} EE (merged by distance type)"
    )
    print(
        f"min distance: ours {d_ours:.12e} m, ipctk {d_theirs:.12e} m, rel. diff "
        f"{_verdict(abs(d_ours - d_theirs) / d_theirs, 1e-10)}"
    )
    energy, energy_t, energy_a = v["energy"], v["energy_t"], v["energy_a"]
    print(
        f"barrier energy: ours {energy:.12e}, ipctk {energy_t:.12e}, rel. diff "
        f"{_verdict(abs(energy - energy_t) / energy_t, 1e-8)}; barrier_assemble's energy vs barrier_energy "
        f"{abs(energy_a - energy) / energy:.1e}"
    )
    grad = v["grad"].ravel()
    grad_t = np.asarray(v["grad_t"]).ravel()
    print(f"gradient: rel. diff (2-norm) {_verdict(np.linalg.norm(grad - grad_t) / np.linalg.norm(grad_t), 1e-8)}")
    hess = _assemble(v["out_quads"], v["out_blocks"], v["count"], grad.size)
    hess_t = v["hess_t"].tocsr()
    error = _frobenius((hess - hess_t).tocsr()) / _frobenius(hess_t)
    print(
        f"PSD Hessian (our blocks assembled): rel. diff (Frobenius) {_verdict(error, 1e-8)}"
        f"; stored entries ours {hess.nnz} (zero rows of unused stencil vertices kept), ipctk {hess_t.nnz}"
    )
    print(
        f"CCD max step: ours (additive, rescaling 0.9) {v['alpha']:.6f}; ipctk AdditiveCCD {v['alpha_t']:.6f}, "
        f"TightInclusionCCD (rescaling 0.8) {v['alpha_ti']:.6f} (different conservative algorithms)"
    )


def _verdict(error, tolerance):
    return f"{error:.1e} ({'ok' if error <= tolerance else 'MISMATCH'}, tolerance {tolerance:g})"


def _assemble(quads, blocks, count, size):
    import scipy.sparse as sp

    dof = (3 * quads[:count, :, None] + np.arange(3)).reshape(count, 12)
    rows = np.broadcast_to(dof[:, :, None], (count, 12, 12)).ravel()
    cols = np.broadcast_to(dof[:, None, :], (count, 12, 12)).ravel()
    return sp.csr_matrix((blocks[:count].ravel(), (rows, cols)), shape=(size, size))


def _frobenius(m):
    return float(np.sqrt(np.sum(m.data * m.data)))


def _ipctk_candidates(ipctk, mesh, x0, x1, inflation):
    c = ipctk.Candidates()
    if x1 is None:
        c.build(mesh, x0, inflation)
    else:
        c.build(mesh, x0, x1, inflation)
    return c


def _ipctk_from_ours(ipctk, vf, ee):
    c = ipctk.Candidates()
    c.fv_candidates = [ipctk.FaceVertexCandidate(int(f), int(v)) for v, f in vf]
    c.ee_candidates = [ipctk.EdgeEdgeCandidate(int(a), int(b)) for a, b in ee]
    return c


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _best(fn, repeats):
    """Result of the first call and the best time of ``repeats`` calls."""
    out, best = _timed(fn)
    for _ in range(repeats - 1):
        best = min(best, _timed(fn)[1])
    return out, best


if __name__ == "__main__":
    main()
