"""IPC broad-phase benchmark: swept-AABB candidates on a ~100 000-triangle pile of spheres.

Run: ``python tests/benchmarks/bench_ipc_broad_phase.py [--spheres 20] [--level 4] [--threads N]``.
Prints the scene size, the vertex-face and edge-edge candidate counts, the cold time (first call in
this process: JIT compile or Numba cache load) and the warm time (best of five) of
``collision_candidates`` for a swept query (``x0 -> x1``) and a static proximity query (``x1 = x0``),
plus ``build_edges``. Not part of ``make test``.
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
    parser.add_argument("--spheres", type=int, default=20, help="icospheres in the pile")
    parser.add_argument("--level", type=int, default=4, help="subdivision level (20 * 4^level triangles each)")
    parser.add_argument("--threads", type=int, default=0, help="Numba threads (0: Numba's default)")
    parser.add_argument("--inflation", type=float, default=1e-3, help="box inflation [m] (dhat)")
    args = parser.parse_args(argv)

    import numba
    from contact_lab.core.ipc.broad_phase import build_edges, collision_candidates
    from test_broad_phase import sphere_pile

    if args.threads:
        numba.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x0, x1, faces, group = sphere_pile(args.spheres, args.level, rng)
    print(
        f"scene: {args.spheres} spheres, {len(faces)} triangles, {len(x0)} vertices, "
        f"{(group == -1).sum()} static vertices, {numba.get_num_threads()} Numba threads"
    )

    start = time.perf_counter()
    edges = build_edges(faces)
    cold = time.perf_counter() - start
    warm = min(_timed(build_edges, faces)[1] for _ in range(5))
    print(f"build_edges: {len(edges)} edges, cold {cold:.3f} s, warm {warm * 1e3:.1f} ms")

    for name, end in (("swept x0 -> x1", x1), ("static x1 = x0", x0)):
        (vf, ee), cold = _timed(collision_candidates, x0, end, faces, edges, group, args.inflation)
        warm = min(_timed(collision_candidates, x0, end, faces, edges, group, args.inflation)[1] for _ in range(5))
        print(
            f"collision_candidates ({name}, inflation {args.inflation:g} m): {len(vf)} VF + {len(ee)} EE, "
            f"cold {cold:.3f} s, warm {warm * 1e3:.1f} ms"
        )


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


if __name__ == "__main__":
    main()
