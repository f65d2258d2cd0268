"""Texture-friction overhead on a 200-body bake: textured floor vs plain Coulomb, PGS and PROX.

Run: ``python tests/benchmarks/bench_texture_overhead.py`` (``make bench``). Core API only, no Blender.

Scene: 200 boxes (10 cm half extent, 1 kg, μ 0.4) in a 20 × 10 grid on a floor PLANE. Every other box
starts sliding at 2.5 m/s in a random direction (they slow down and stop within the timed second,
some collide); the others rest. The floor is either plain Coulomb (μ 0.4) or TEXTURE friction: the
same base μ plus plowing from a 256 × 256 random-bump normal map on a 12 m × 12 m quad whose UVs repeat
every 0.5 m (16 × 16 samples per 5 cm patch, 4 directions per contact).

Timed (warm: every kernel compiled by an untimed run first): 60 frames at 60 fps, 4 substeps (240
steps), 100 iterations, tolerance 1e-6. Per step it splits the time into collision (broad + narrow phase
and friction generation), of which the friction generation (texture sampling) alone, and the solve.
The pipeline caches a contact's plowing coefficients while its point stays within one patch sample
(5 cm / 16 ≈ 3 mm) in both shapes; ``CollisionPipeline.texture_samples`` counts the contacts that were
sampled, so the table shows how many of the textured contacts were re-sampled.
Finally the per-contact cost of one 16 × 16 patch (``bench_texture.py``) for reference.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from contact_lab.core import BodyKind, CollisionPipeline, ModelBuilder
from contact_lab.core.friction.surface import SurfaceFriction, SurfaceFrictionModel, SurfaceMesh, TextureImage
from contact_lab.core.rigid.solvers import make_solver

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_texture  # noqa: E402  (this folder, put on the path above)

BODIES = 200
HALF = 0.1
MU = 0.4
FPS, SUBSTEPS, FRAMES = 60, 4, 60
ITERATIONS, TOLERANCE = 100, 1e-6
PATCH, RESOLUTION = 0.05, 16
UV_PERIOD = 0.5


def bump_map(size: int = 256, seed: int = 1) -> TextureImage:
    """Random facets tilted up to ~34° (bench_texture.py's normal map)."""
    return bench_texture.normal_map(seed, size)


def floor_quad(half: float = 6.0) -> SurfaceMesh:
    v = np.array([[-half, -half, 0], [half, -half, 0], [half, half, 0], [-half, half, 0]], float)
    tris = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    return SurfaceMesh(vertices=v, triangles=tris, corner_uv=v[tris][..., :2] / UV_PERIOD)


def build(textured: bool):
    b = ModelBuilder(gravity=(0, 0, -9.81))
    floor = b.add_body(kind=BodyKind.KINEMATIC, label="floor")
    plane = b.add_shape_plane(floor, mu=MU)
    if textured:
        b.set_shape_friction(
            plane,
            SurfaceFriction(model=SurfaceFrictionModel.TEXTURE, mu=MU, normal_map=bump_map(), mesh=floor_quad(),
                            patch_size=PATCH, patch_resolution=RESOLUTION),
        )  # fmt: skip
    rng = np.random.default_rng(0)
    for k in range(BODIES):
        i, j = divmod(k, 10)
        pos = ((i - 9.5) * 0.5, (j - 4.5) * 0.5, HALF + 0.001)
        vel = (0.0, 0.0, 0.0)
        if k % 2 == 0:
            a = rng.uniform(0, 2 * np.pi)
            vel = (2.5 * np.cos(a), 2.5 * np.sin(a), 0.0)
        body = b.add_body(pos=pos, vel=vel, mass=1.0, label=f"box{k}")
        b.add_shape_box(body, (HALF, HALF, HALF), mu=MU)
    return b.finalize()


def run(model, solver: str, frames: int) -> dict:
    """The loop of ``core.rigid.frame_loop.iter_simulate``, timed around collision, friction generation and solve."""
    step_solver = make_solver(model, solver, iterations=ITERATIONS, tolerance=TOLERANCE)
    pipeline = CollisionPipeline(model)
    contacts = model.contacts()
    control = model.control()
    s0, s1 = model.state(), model.state()
    dt = 1.0 / (FPS * SUBSTEPS)
    t_friction = 0.0
    generate = pipeline._generate_friction  # wrapped to time the friction generation (texture sampling) alone

    def timed_generate(*args):
        nonlocal t_friction
        t = time.perf_counter()
        generate(*args)
        t_friction += time.perf_counter() - t

    pipeline._generate_friction = timed_generate
    t_collide = t_solve = 0.0
    contacts_total = samples_total = steps = iterations = 0
    t_start = time.perf_counter()
    for _ in range(frames * SUBSTEPS):
        t = time.perf_counter()
        pipeline.collide(s0, contacts)
        t_collide += time.perf_counter() - t
        t = time.perf_counter()
        step_solver.step(s0, s1, control, contacts, dt)
        t_solve += time.perf_counter() - t
        s0, s1 = s1, s0
        contacts_total += contacts.contact_count
        samples_total += pipeline.texture_samples if model.has_texture_friction else 0
        steps += 1
        iterations += step_solver.last_iterations
    wall = time.perf_counter() - t_start
    moved = np.linalg.norm(s0.body_pos[1:, :2] - model.state().body_pos[1:, :2], axis=1)
    return {
        "s_per_frame": wall / frames,
        "collide_ms": 1e3 * t_collide / steps,
        "friction_ms": 1e3 * t_friction / steps,
        "solve_ms": 1e3 * t_solve / steps,
        "contacts": contacts_total / steps,
        "sampled": samples_total / steps,
        "iterations": iterations / steps,
        "moved": float(moved.mean()),
    }


def patch_cost() -> float:
    """Warm µs per contact of one 16 × 16 patch from bench_texture.py (both surfaces textured, ~1k triangles)."""
    return bench_texture.bench(22)["us_per_contact"]


def main() -> None:
    models = {"Coulomb": build(False), "Texture": build(True)}
    t0 = time.perf_counter()
    for model in models.values():  # compile (or load from the cache) every kernel on both paths
        for solver in ("PGS", "PROX"):
            run(model, solver, 2)
    print(f"warm-up (JIT compile / cache load): {time.perf_counter() - t0:.1f} s")
    print(
        f"{BODIES} boxes on a floor plane, half sliding at 2.5 m/s; {FRAMES} frames at {FPS} fps × {SUBSTEPS} "
        f"substeps, {ITERATIONS} iterations; texture: {PATCH * 100:g} cm patch, {RESOLUTION}×{RESOLUTION} samples, "
        "4 directions"
    )
    header = (
        f"{'solver':<6} {'floor':<8} {'s/frame':>8} {'ratio':>6} {'collide ms/step':>16} {'friction gen ms':>16} "
        f"{'solve ms/step':>14} {'iter/step':>9} {'contacts/step':>14} {'sampled/step':>13} {'re-sampled':>11} "
        f"{'mean slide m':>13}"
    )
    print(header)
    print("-" * len(header))
    for solver in ("PGS", "PROX"):
        base = None
        for name, model in models.items():
            r = run(model, solver, FRAMES)
            base = base or r["s_per_frame"]
            frac = f"{100 * r['sampled'] / r['contacts']:.1f} %" if name == "Texture" and r["contacts"] else "-"
            print(
                f"{solver:<6} {name:<8} {r['s_per_frame']:>8.4f} {r['s_per_frame'] / base:>5.2f}× "
                f"{r['collide_ms']:>16.3f} {r['friction_ms']:>16.3f} {r['solve_ms']:>14.3f} {r['iterations']:>9.1f} "
                f"{r['contacts']:>14.1f} "
                f"{r['sampled']:>13.1f} {frac:>11} {r['moved']:>13.3f}"
            )
    print(f"reference: one {RESOLUTION}×{RESOLUTION} patch, 4 directions, both surfaces textured "
          f"(bench_texture.py, ~1k triangles/mesh): {patch_cost():.1f} µs per sampled contact")  # fmt: skip


if __name__ == "__main__":
    main()
