"""IPC benchmark: Blender's default cube (Role Soft, every setting default) dropped 0.1 m onto a plane, 1 s at 24 fps.

Run: ``python tests/benchmarks/bench_ipc_default_cube.py [--frames 25] [--against REV] [--surface lattice]
[--threads N] [--repeat K] [--cold]``.

The scene is built in Blender (``bpy``): the factory startup file's 2 m cube gets Role Soft (Flesh, lattice
resolution 8: 6 000 tets), a Passive Plane 0.1 m below it, Engine IPC, frames 1-25; it is gathered and built
exactly as the Bake button does (:class:`contact_lab.addon.ipc.job.IpcBakeJob`), then simulated by the core frame
loop, warm (the first frame, which loads or compiles the kernels, is reported apart). Printed per run: seconds per
frame (wall clock and this process's CPU time: other processes on a shared machine inflate the first, not the
second), Newton iterations per solver step over every step of every frame (mean and max; a solve thrown away by a
halving counts as a step), PCG iterations per Newton iteration, the closest distance and the machine load.

- ``--against REV`` also runs the core of git revision REV (``git archive``, imported as a second package) on the
  same world in the same process, alternating with this tree ``--repeat`` times: the before/after ratio is then
  measured under the same load.
- ``--surface lattice``: the lattice's boundary collides instead of the cube's 8 render vertices (the plane moves
  down by the lattice's overhang): a collision surface of 1 181 vertices and 2 353 triangles, the other common case.
- ``--cold``: first a run in a fresh interpreter with an empty Numba cache (the kernels' compile time).
- ``--threads``: Numba threads (default: Numba's).

Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def default_cube_export(surface: str = "render", frame_end: int = 25):
    """The IPC bake export of the default-cube scene (``surface``: 'render' = as the Bake button, 'lattice' = the
    lattice boundary collides)."""
    import bpy
    import contact_lab
    from contact_lab.addon.ipc.job import IpcBakeJob
    from contact_lab.addon.soft import build as soft_export

    bpy.ops.wm.read_factory_settings(use_empty=False)
    contact_lab.register()
    scene = bpy.context.scene
    cube = bpy.data.objects["Cube"]
    cube.contact_lab.role = "SOFT"
    drop = 0.1
    if surface == "lattice":
        drop += 2.0 / cube.contact_lab.lattice_resolution  # the lattice overhangs the 2 m cube by one cell
    bpy.ops.mesh.primitive_plane_add(size=20, location=(0.0, 0.0, -1.0 - drop))
    plane = bpy.context.object
    plane.contact_lab.role = "PASSIVE"
    plane.contact_lab.shape = "PLANE"
    scene.frame_start, scene.frame_end = 1, frame_end
    scene.contact_lab.engine = "IPC"
    gathered = IpcBakeJob.gather(scene)
    original = soft_export.build_soft_body
    if surface == "lattice":

        def lattice_surface(inp, metres, **options):
            kwargs, record = original(inp, metres, **options)
            del kwargs["contact_points"], kwargs["contact_triangles"]  # the builder's default: the tet boundary
            return kwargs, record

        soft_export.build_soft_body = lattice_surface
    try:
        return IpcBakeJob.build_export(gathered)
    finally:
        soft_export.build_soft_body = original


def core_package(rev: str | None):
    """(frame_loop module, IpcSettings class) of this tree, or of git revision ``rev`` unpacked as its own package."""
    if rev is None:
        return importlib.import_module("contact_lab.core.ipc.frame_loop"), importlib.import_module(
            "contact_lab.core.ipc.ipc_solver"
        ).IpcSettings
    root = Path(tempfile.mkdtemp(prefix="ipc_bench_"))
    name = "contact_lab_" + "".join(c if c.isalnum() else "_" for c in rev)
    archive = subprocess.run(["git", "archive", rev, "core"], cwd=REPO, check=True, capture_output=True).stdout
    (root / name).mkdir()
    tarfile.open(fileobj=io.BytesIO(archive)).extractall(root / name, filter="data")
    (root / name / "__init__.py").write_text("")
    sys.path.insert(0, str(root))
    loop = importlib.import_module(f"{name}.core.ipc.frame_loop")
    return loop, importlib.import_module(f"{name}.core.ipc.ipc_solver").IpcSettings


def run(loop, settings_class, export, frames: int) -> dict:
    """Simulate ``frames`` frames (the first is the initial state) with a frame loop; per-step statistics."""
    settings = export.ipc_settings()
    own = {f: getattr(settings, f) for f in settings_class.__dataclass_fields__ if not f.startswith("pcg")}
    settings = settings_class(**own)  # the revision's own defaults for what the scene does not set
    solver_class = loop.IpcSolver
    per_step = []
    step = solver_class.step

    def counted(self, *args):
        stats = step(self, *args)
        per_step.append((stats.newton_iterations, stats.pcg_iterations))
        return stats

    solver_class.step = counted
    wall, cpu, first = [], [], None
    try:
        t, c = time.perf_counter(), time.process_time()
        for frame, state in loop.iter_simulate_ipc(export.ipc_world, frame_count=frames, fps=export.fps,
                                                   settings=settings, pin_tracks=export.pin_tracks,
                                                   collider_tracks=export.ipc_collider_tracks):  # fmt: skip
            now, cnow = time.perf_counter(), time.process_time()
            last = state
            if frame == 1:
                first = now - t
            elif frame > 1:
                wall.append(now - t)
                cpu.append(cnow - c)
            t, c = now, cnow
    finally:
        solver_class.step = step
    newton = np.array([n for n, _ in per_step])
    pcg = np.array([p for _, p in per_step])
    surface = export.ipc_world.surface_positions(last.x)
    return {
        "first_frame_s": first,
        "wall_s": float(np.mean(wall)),
        "cpu_s": float(np.mean(cpu)),
        "steps": len(newton),
        "newton_mean": float(newton.mean()),
        "newton_max": int(newton.max()),
        "pcg_per_newton": float(pcg.sum() / max(newton.sum(), 1)),
        "lowest_surface_z": float(surface[: export.ipc_world.body_vertex_range[0][1], 2].min()),
        "lowest_node_z": float(last.x[: export.ipc_world.soft.node_count, 2].min()),
        "load": os.getloadavg()[0],
    }


def _row(label: str, r: dict) -> str:
    return (
        f"{label:<22} {r['wall_s']:>8.3f} {r['cpu_s']:>8.3f} {r['first_frame_s']:>8.2f} {r['steps']:>6d} "
        f"{r['newton_mean']:>7.2f} {r['newton_max']:>5d} {r['pcg_per_newton']:>7.1f} {r['lowest_surface_z']:>9.4f} "
        f"{r['lowest_node_z']:>9.4f} {r['load']:>5.2f}"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=25, help="output frames incl. the first (25: 1 s at 24 fps)")
    parser.add_argument("--against", metavar="REV", help="also run the core of this git revision, same process")
    parser.add_argument("--surface", choices=("render", "lattice"), default="render")
    parser.add_argument("--threads", type=int, default=0, help="Numba threads (0: Numba's default)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each version (alternating)")
    parser.add_argument("--cold", action="store_true", help="first a run with an empty Numba cache, own process")
    args = parser.parse_args(argv)

    if args.cold:
        with tempfile.TemporaryDirectory(prefix="numba_cold_") as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            cmd = [sys.executable, __file__, "--frames", "3", "--surface", args.surface]
            cmd += ["--threads", str(args.threads)] if args.threads else []
            start = time.perf_counter()
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
            print(f"cold (empty Numba cache, 2 frames, whole process incl. Blender start): "
                  f"{time.perf_counter() - start:.1f} s; its first frame:")  # fmt: skip
            print("\n".join(line for line in out.splitlines() if "first" in line or line.startswith("this")))
    import numba

    if args.threads:
        numba.set_num_threads(args.threads)
    export = default_cube_export(args.surface, frame_end=args.frames)
    world = export.ipc_world
    versions = [("this tree", *core_package(None))]
    if args.against:
        versions.append((args.against[:12], *core_package(args.against)))
    print(
        f"default cube, IPC, surface '{args.surface}': {world.soft.tet_count} tets, {world.soft.node_count} nodes, "
        f"{world.surface_count} surface vertices, {len(world.faces)} triangles; {args.frames - 1} frames at "
        f"{export.fps:g} fps, {export.ipc_settings().substeps} substeps; {numba.get_num_threads()} Numba threads"
    )
    print(
        f"{'version':<22} {'s/frame':>8} {'cpu s/f':>8} {'first s':>8} {'steps':>6} {'Newton':>7} {'max':>5} "
        f"{'PCG/it':>7} {'surf z':>9} {'node z':>9} {'load':>5}"
    )
    results = {label: [] for label, *_ in versions}
    for _ in range(args.repeat):
        for label, loop, settings_class in versions:
            r = run(loop, settings_class, export, args.frames)
            results[label].append(r)
            print(_row(label, r), flush=True)
    if args.against:
        ours, theirs = results["this tree"], results[args.against[:12]]
        wall = np.mean([t["wall_s"] for t in theirs]) / np.mean([o["wall_s"] for o in ours])
        cpu = np.mean([t["cpu_s"] for t in theirs]) / np.mean([o["cpu_s"] for o in ours])
        print(f"speed-up of this tree over {args.against}: {wall:.2f}x wall clock, {cpu:.2f}x CPU time")


if __name__ == "__main__":
    main()
