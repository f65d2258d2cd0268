"""Soft-body benchmark, the scene of Table 2 of the fully implicit frictional dynamics paper (Larionov et al.):
a ball pressed between two planes, ~1K and ~50K tets.

Run: ``python tests/benchmarks/bench_soft_squeeze.py [--sizes 1k,50k] [--frames N]``. Each size runs in
its own process (so peak memory is that size's): a lattice ball (icosphere, E = 1e5 Pa, nu = 0.3,
rho = 1000) is squeezed to 70 % of its height over the run at 24 fps, one backward Euler step per
frame, with the volume penalty at kappa = 1/atm and 0.01/atm (quadratic law). Prints seconds per
frame (cold = first frame incl. JIT compile or cache load; warm = mean of the others), Newton and
PCG iterations and elastic tangents evaluated per step, peak resident memory above the post-import
baseline, the volume loss, and the seed's numbers for the same columns. Not part of ``make test``.

The seed's ball is hollow and its material is unknown ([GAP] in the spec), so only the orders of
magnitude and the trends are comparable; its machine is unknown too.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

# that paper's Table 2: (seconds per frame, GB) for the iterative solver; volume loss
SEED = {
    ("1k", 1.0): (0.391, 0.081, 0.336),
    ("1k", 0.01): (0.463, 0.214, 0.0049),
    ("50k", 1.0): (31.9, 0.719, 0.278),
    ("50k", 0.01): (42.6, 0.884, 0.0036),
}
RESOLUTION = {"1k": 7, "50k": 25}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_one(size: str, kappa_atm: float, frames: int) -> dict:
    from contact_lab.core.enums import ShapeType
    from contact_lab.core.fem.lattice import tetrahedralize_lattice
    from contact_lab.core.fem.primitives import icosphere
    from contact_lab.core.fem.volume import VolumeModel, enclosed_volume, kappa_per_pa
    from contact_lab.core.fem.world import ColliderKind, SoftWorldBuilder
    from contact_lab.core.soft.frame_loop import SoftSettings, iter_simulate_soft

    baseline = _peak_rss_mb()
    ball, tris = icosphere(0.1, 3)
    lattice = tetrahedralize_lattice(ball, tris, resolution=RESOLUTION[size])
    b = SoftWorldBuilder(gravity=(0, 0, 0))
    kappa = kappa_per_pa(kappa_atm) if kappa_atm > 0 else 0.0
    b.add_soft_body(lattice.tet_vertices, lattice.tet_indices, youngs_modulus=1e5, poisson_ratio=0.3, friction=0.0,
                    volume_kappa=kappa, volume_model=VolumeModel.QUADRATIC)  # fmt: skip
    z = lattice.tet_vertices[:, 2]
    gap, down = 0.0011, (0.0, 1.0, 0.0, 0.0)
    low = b.add_collider(ShapeType.PLANE, position=(0, 0, z.min() - gap), kind=ColliderKind.KINEMATIC)
    high = b.add_collider(
        ShapeType.PLANE, position=(0, 0, z.max() + gap), orientation=down, kind=ColliderKind.KINEMATIC
    )
    world = b.finalize()
    travel = 0.15 * (z.max() - z.min()) * np.linspace(0, 1, frames)
    zeros = np.zeros(frames)
    tracks = {
        low: (np.c_[zeros, zeros, z.min() - gap + travel], np.tile([1.0, 0, 0, 0], (frames, 1))),
        high: (np.c_[zeros, zeros, z.max() + gap - travel], np.tile(down, (frames, 1))),
    }
    settings = SoftSettings(substeps=1, contact_thickness=0.001)
    times, newton, pcg, tangents = [], [], [], []
    t = time.perf_counter()
    for frame, state in iter_simulate_soft(
        world, frame_count=frames, fps=24, settings=settings, collider_tracks=tracks
    ):
        if frame:
            now = time.perf_counter()
            times.append(now - t)
            t = now
            newton.append(state.stats.newton_iterations)
            pcg.append(state.stats.pcg_iterations)
            tangents.append(state.stats.hessian_evaluations)
    loss = 1.0 - enclosed_volume(state.x, world.body_surface[0]) / world.body_rest_volume[0]
    return {
        "size": size,
        "kappa_atm": kappa_atm,
        "tets": int(world.tet_count),
        "nodes": int(world.node_count),
        "cold_s": times[0],
        "warm_s": float(np.mean(times[1:])),
        "newton": float(np.mean(newton)),
        "pcg": float(np.mean(pcg)),
        "tangents": float(np.mean(tangents)),
        "peak_mb": _peak_rss_mb() - baseline,
        "volume_loss": float(loss),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1k,50k")
    parser.add_argument("--frames", type=int, default=6)
    parser.add_argument("--one", nargs=2, metavar=("SIZE", "KAPPA"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], float(args.one[1]), args.frames)))
        return
    rows = []
    for size in args.sizes.split(","):
        for kappa in (1.0, 0.01):
            out = subprocess.run(
                [sys.executable, __file__, "--one", size, str(kappa), "--frames", str(args.frames)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"Soft squeeze (Larionov et al., Table 2 scene), {args.frames} frames, 1 step per frame, lagged BE, PCG")
    head = "size  kappa  tets    cold s  warm s/frame  Newton  PCG/step  tangents  peak MB  vol loss | "
    head += "seed s/frame  GB    loss"
    print(head)
    for r in rows:
        s = SEED[(r["size"], r["kappa_atm"])]
        print(
            f"{r['size']:<5} {r['kappa_atm']:<6g} {r['tets']:<7d} {r['cold_s']:<7.2f} {r['warm_s']:<13.3f} "
            f"{r['newton']:<7.1f} {r['pcg']:<9.0f} {r['tangents']:<9.1f} {r['peak_mb']:<8.0f} "
            f"{100 * r['volume_loss']:<7.2f}%  | "
            f"{s[0]:<13g} {s[1]:<5g} {100 * s[2]:.2f}%"
        )


if __name__ == "__main__":
    main()
