"""Rigid-engine benchmark: box pyramids side by side with PyBullet in one process run.

Run: ``python tests/benchmarks/bench_rigid.py`` (``make bench``). Prints, per scene and solver,
the cold time (first bake in a fresh process: JIT compile with an empty Numba cache, then a
cache load), the warm time per step, contacts and iterations, and the ratio to PyBullet's
sequential-impulse solver with the same time step and iteration count. Not part of ``make test``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HALF = 0.25
STEP = 1.0 / 240.0
ITERATIONS = 50
STEPS = 240


def pyramid_positions(layers: int) -> np.ndarray:
    """Box centres of a 2D pyramid with ``layers`` rows (layers (layers + 1) / 2 boxes), touching."""
    pos = []
    for row in range(layers):
        count = layers - row
        for i in range(count):
            x = (i - (count - 1) / 2) * 2.02 * HALF
            pos.append((x, 0.0, HALF + 2 * HALF * row))
    return np.array(pos)


def run_ours(layers: int, solver: str) -> dict:
    from contact_lab.core import BodyKind, ModelBuilder, simulate

    b = ModelBuilder(gravity=(0, 0, -9.81))
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="ground")
    b.add_shape_plane(ground, mu=0.6)
    for p in pyramid_positions(layers):
        body = b.add_body(pos=p, mass=1.0)
        b.add_shape_box(body, (HALF, HALF, HALF), mu=0.6)
    model = b.finalize()
    t0 = time.perf_counter()
    simulate(model, frame_count=2, fps=1.0 / STEP, substeps=1, solver=solver, iterations=ITERATIONS)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    traj = simulate(model, frame_count=STEPS + 1, fps=1.0 / STEP, substeps=1, solver=solver, iterations=ITERATIONS)
    warm = (time.perf_counter() - t0) / STEPS
    top = model.body_count - 1
    return dict(
        first_call_s=first,
        warm_step_s=warm,
        contacts=int(traj.contact_count.max()),
        iterations=float(traj.solver_iterations[1:].mean()),
        top_drift_mm=float(np.linalg.norm(traj.body_pos[-1, top] - traj.body_pos[0, top]) * 1e3),
    )


def run_pybullet(layers: int) -> dict:
    import pybullet as pb

    client = pb.connect(pb.DIRECT)
    pb.setGravity(0, 0, -9.81, physicsClientId=client)
    pb.setPhysicsEngineParameter(fixedTimeStep=STEP, numSolverIterations=ITERATIONS, physicsClientId=client)
    plane = pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=client)
    pb.createMultiBody(0, plane, physicsClientId=client)
    box = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=[HALF] * 3, physicsClientId=client)
    bodies = [
        pb.createMultiBody(1.0, box, basePosition=list(p), physicsClientId=client) for p in pyramid_positions(layers)
    ]
    for body in [-1, *bodies]:
        pb.changeDynamics(body if body >= 0 else 0, -1, lateralFriction=0.6, physicsClientId=client)
    start = np.array(pb.getBasePositionAndOrientation(bodies[-1], physicsClientId=client)[0])
    t0 = time.perf_counter()
    for _ in range(STEPS):
        pb.stepSimulation(physicsClientId=client)
    warm = (time.perf_counter() - t0) / STEPS
    end = np.array(pb.getBasePositionAndOrientation(bodies[-1], physicsClientId=client)[0])
    contacts = len(pb.getContactPoints(physicsClientId=client))
    pb.disconnect(client)
    return dict(warm_step_s=warm, contacts=contacts, top_drift_mm=float(np.linalg.norm(end - start) * 1e3))


def cold_start(cache_dir: str) -> float:
    """Seconds for import + first one-step bake in a fresh interpreter using ``cache_dir``."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        "import time; t = time.perf_counter()\n"
        f"import sys; sys.path.insert(0, {here!r})\n"
        "from bench_rigid import run_ours\n"
        "run_ours(3, 'PROX'); run_ours(3, 'PGS')\n"
        "print(time.perf_counter() - t)\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        compile_s = cold_start(cache)
        cached_s = cold_start(cache)
    print(
        f"cold start (import + first bake, both solvers): compile {compile_s:.1f} s, from Numba cache {cached_s:.1f} s"
    )
    rows = []
    for layers in (5, 10, 20):
        peer = run_pybullet(layers)
        for solver in ("PGS", "PROX", "NEWTON"):
            ours = run_ours(layers, solver)
            rows.append(dict(layers=layers, bodies=layers * (layers + 1) // 2, solver=solver, ours=ours, pybullet=peer))
    header = (
        f"{'bodies':>6} {'solver':>6} {'contacts':>8} {'iters':>6} {'ours ms/step':>12} {'bullet ms/step':>14}"
        f" {'ratio':>6} {'drift mm (ours/bullet)':>24}"
    )
    print(f"box pyramids, h = 1/240 s, {ITERATIONS} iterations, {STEPS} steps, warm")
    print(header)
    for r in rows:
        o, p = r["ours"], r["pybullet"]
        print(
            f"{r['bodies']:>6} {r['solver']:>6} {o['contacts']:>8} {o['iterations']:>6.1f}"
            f" {o['warm_step_s'] * 1e3:>12.3f} {p['warm_step_s'] * 1e3:>14.3f}"
            f" {o['warm_step_s'] / p['warm_step_s']:>6.2f}"
            f" {o['top_drift_mm']:>11.2f} / {p['top_drift_mm']:<10.2f}"
        )
    if "--json" in sys.argv:
        print(json.dumps(dict(compile_s=compile_s, cached_s=cached_s, rows=rows), indent=1))


if __name__ == "__main__":
    main()
