"""IPC CCD benchmark: throughput of ``max_collision_free_step`` and agreement with ipctk on many trajectories.

Run: ``python tests/benchmarks/bench_ipc_kernels_ccd.py [--count 100000] [--tight 20000]``.
Uses the random vertex-face / edge-edge trajectories of ``tests/core/ipc/test_ccd.py`` (45 % contacts
by construction, 30 % near misses, 25 % random). Prints, per kind: pairs per second of the batch
kernel (cold = first call with JIT compile or cache load, warm = best of three), ipctk's per-call
throughput from Python, and how many of ipctk Tight-Inclusion's contacts on the first ``--tight``
trajectories we miss (expected 0 up to its grazing false positives). Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "ipc"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="trajectories per kind")
    parser.add_argument("--tight", type=int, default=20_000, help="trajectories compared with Tight-Inclusion")
    args = parser.parse_args(argv)

    import ipctk
    import test_ccd as t
    from contact_lab.core.ipc.ccd import DEFAULT_RESCALING, max_collision_free_step

    for edge_edge in (False, True):
        name = "edge-edge" if edge_edge else "vertex-face"
        X0, X1, _ = (t.ee_trajectories if edge_edge else t.vf_trajectories)(np.random.default_rng(1), args.count)
        n = len(X0)
        # each trajectory owns four vertices; pairs index them as a mesh would
        x0 = X0.reshape(-1, 3).copy()
        x1 = X1.reshape(-1, 3).copy()
        base = 4 * np.arange(n, dtype=np.int64)
        prims = np.stack([base, base + 1, base + 2, base + 3], axis=1)
        empty = np.zeros((0, 2), np.int64)
        if edge_edge:
            edges = prims.reshape(-1, 2)
            pairs = np.stack([2 * np.arange(n), 2 * np.arange(n) + 1], axis=1).astype(np.int64)
            call = (x0, x1, np.zeros((0, 3), np.int64), edges, empty, pairs, 0.0, DEFAULT_RESCALING)
        else:
            faces = prims[:, 1:].copy()
            pairs = np.stack([base, np.arange(n)], axis=1).astype(np.int64)
            call = (x0, x1, faces, np.zeros((0, 2), np.int64), pairs, empty, 0.0, DEFAULT_RESCALING)
        start = time.perf_counter()
        alpha = max_collision_free_step(*call)
        cold = time.perf_counter() - start
        warm = min(_seconds(max_collision_free_step, *call) for _ in range(3))
        toi = np.empty(n)
        per_pair = _seconds(t.our_toi, X0, X1, edge_edge, 0.0, DEFAULT_RESCALING, toi)
        per_pair = _seconds(t.our_toi, X0, X1, edge_edge, 0.0, DEFAULT_RESCALING, toi)
        print(
            f"{name}: {n} pairs, max_collision_free_step = {alpha:.3g}, cold {cold:.2f} s, warm {warm * 1e3:.1f} ms; "
            f"every pair to its own TOI (serial): {per_pair:.2f} s = {n / per_pair / 1e6:.2f} M pairs/s, "
            f"contacts {np.mean(toi <= 1):.1%}"
        )
        for label, ccd, m in (
            ("AdditiveCCD", ipctk.AdditiveCCD(), n),
            ("TightInclusionCCD", ipctk.TightInclusionCCD(), min(n, args.tight)),
        ):
            start = time.perf_counter()
            hits = t._ipctk_hits(ccd, X0[:m], X1[:m], edge_edge)
            seconds = time.perf_counter() - start
            missed = np.flatnonzero(hits & ~(toi[:m] <= 1.0))
            print(
                f"   ipctk {label} on {m}: {seconds:.1f} s ({m / seconds / 1e3:.1f} k pairs/s from Python), "
                f"{hits.sum()} contacts, ours {np.sum(toi[:m] <= 1.0)}, theirs-only {len(missed)} {missed[:10]}"
            )


def _seconds(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
