"""The default cube as an artist gets it, baked with the Soft and the IPC engine (issue 13's speed targets).

Run: ``python tests/benchmarks/bench_default_cube.py [--engines soft,ipc] [--frames 24] [--resolution N]
[--repeat 2] [--cold] [--cuts N] [--ipc-surface REFINED|MESH]``, with any of the project's environments (``.venv`` =
bpy 5.0, ``.venv-blender52``,
``.venv-blender42``).

The scene is built in real Blender (``bpy``) exactly as an artist makes it: the factory scene, a Plane (20 m)
with Role Passive and Shape Plane, the default cube (2 m, ``primitive_cube_add``) 0.1 m above it with Role Soft
and every other setting at its default (material Flesh, Lattice Resolution, substeps, contact, tolerances), the
engine set to Soft or IPC, frames 1 to 25 at 24 fps (24 simulated frames = 1 s). It is baked by the add-on's
own :func:`contact_lab.addon.bake.bake_scene` (validation, gather, lattice, simulation, shape keys), the path the
Bake button takes.

Each engine runs in its own process. The first bake of a process loads the compiled kernels from the Numba
cache (or compiles them); the next ``--repeat`` bakes are warm and are what the targets are checked on. With
``--cold`` every engine is first baked once more in a process with an empty kernel cache, and its compile time is
reported on its own line.

Per solver step (every substep, and under IPC every halved step) the benchmark records Newton and PCG iterations
by wrapping the engine's ``step`` method in this process only: the bake report keeps each frame's last step
(the IPC report may carry per-step statistics: they are used when present). Printed: seconds per frame (the
report's, simulation only), tets, Newton iterations per step (mean and max over all steps), PCG iterations per
step and per Newton iteration, elastic Hessian evaluations per step (soft), the simulation time per tet and
solver step and the peak memory per tet (one more bake, traced by tracemalloc apart from the timed ones: the
costs Check Scene's lattice estimate uses), the load average before each run,
and the targets of issue 13 with PASS/FAIL:

- soft: <= 0.2 s per frame;
- IPC: <= 1 s per frame and a mean of <= 10 Newton iterations per step.

Exit status 0 whatever the verdicts (a benchmark, not a test); 1 only if a bake fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc

TARGETS = {"SOFT": {"seconds_per_frame": 0.2}, "IPC": {"seconds_per_frame": 1.0, "mean_newton_per_step": 10.0}}
"""Issue 13's acceptance targets for the default cube (warm)."""


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def build_default_cube_scene(engine: str, frames: int, resolution: int | None, cuts: int = 0, surface: str = ""):
    """The factory scene with a passive ground plane and the default cube 0.1 m above it, Role Soft."""
    import bpy
    import contact_lab

    bpy.ops.wm.read_factory_settings(use_empty=True)
    contact_lab.register()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 1 + frames
    scene.contact_lab.engine = engine
    bpy.ops.mesh.primitive_plane_add(size=20.0, location=(0.0, 0.0, 0.0))
    ground = bpy.context.object
    ground.name = "Ground"
    ground.contact_lab.role = "PASSIVE"
    ground.contact_lab.shape = "PLANE"
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=(0.0, 0.0, 1.1))  # the default cube, 0.1 m up
    cube = bpy.context.object
    cube.contact_lab.role = "SOFT"
    if resolution is not None:
        cube.contact_lab.lattice_resolution = resolution
    if surface:  # IPC Surface: REFINED (the default) or MESH (the mesh's own faces, older files)
        cube.contact_lab.ipc_surface = surface
    if cuts:  # a finer surface, so that IPC's contact rests on faces rather than the 8 corners
        bpy.ops.object.mode_set(mode="EDIT")
        bpy.ops.mesh.select_all(action="SELECT")
        bpy.ops.mesh.subdivide(number_cuts=cuts)
        bpy.ops.object.mode_set(mode="OBJECT")
    scene.frame_set(1)
    return scene


class StepRecorder:
    """Wraps ``cls.step`` so that every solver step's statistics are appended to ``self.rows``."""

    def __init__(self, cls, fields):
        self.rows: list[tuple] = []
        original = cls.step

        def step(solver, *args, **kwargs):
            stats = original(solver, *args, **kwargs)
            self.rows.append(tuple(getattr(stats, f, 0) for f in fields))
            return stats

        cls.step = step


def bake_once(engine: str, frames: int, resolution: int | None, recorder: StepRecorder, cuts: int = 0,
              surface: str = "") -> dict:  # fmt: skip
    """Build the scene, bake it with the add-on, return the report's figures and the per-step statistics."""
    from contact_lab.addon.bake.driver import bake_scene

    scene = build_default_cube_scene(engine, frames, resolution, cuts, surface)
    load = _load()
    recorder.rows.clear()
    t0, cpu0 = time.perf_counter(), time.process_time()
    report = bake_scene(scene)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    stats = report["stats"]
    rows = recorder.rows
    newton = [r[0] for r in rows]
    pcg = [r[1] for r in rows]
    hessians = [r[2] for r in rows] if engine == "SOFT" else []
    out = {
        "engine": engine,
        "load": load,
        "wall_s": wall,
        "seconds_per_frame": float(stats["seconds_per_frame"]),
        "tets": int(stats["tets"]),
        "frames": frames,
        # simulation time per tet and solver step (a substep, or a halved IPC step), the cost Check Scene uses
        "us_per_tet_step": 1e6 * float(stats["seconds_per_frame"]) * frames / max(len(rows) * int(stats["tets"]), 1),
        # the whole bake's processor time (all threads) per tet and step: what the wall time is on a busy machine
        "cpu_us_per_tet_step": 1e6 * cpu / max(len(rows) * int(stats["tets"]), 1),
        "steps": len(rows),
        "mean_newton_per_step": sum(newton) / max(len(newton), 1),
        "max_newton_per_step": max(newton, default=0),
        "mean_pcg_per_step": sum(pcg) / max(len(pcg), 1),
        "pcg_per_newton": sum(pcg) / max(sum(newton), 1),
        "hessians_per_step": sum(hessians) / max(len(hessians), 1) if hessians else None,
        "compiled_kernels": int(report.get("compiled_kernels", 0)),
        "report_mean_newton": float(stats.get("mean_newton_iterations", 0.0)),
        "report_max_newton": int(stats.get("max_newton_iterations", 0)),
    }
    for key in ("mean_newton_iterations_per_step", "max_newton_iterations_per_step"):
        if key in stats:  # the IPC report's own per-step statistics, when it keeps them
            out["report_" + key] = stats[key]
    cube = scene.objects["Cube"]
    keys = cube.data.shape_keys
    out["shape_keys"] = len(keys.key_blocks) if keys is not None else 0
    return out


def run_engine(engine: str, frames: int, resolution: int | None, repeat: int, cuts: int = 0,
               surface: str = "") -> list[dict]:  # fmt: skip
    """In this process: one first bake (cache load), then ``repeat`` warm bakes."""
    if engine == "SOFT":
        from contact_lab.core.soft.world_solver import SoftWorldSolver

        recorder = StepRecorder(SoftWorldSolver, ("newton_iterations", "pcg_iterations", "hessian_evaluations"))
    else:
        from contact_lab.core.ipc.ipc_solver import IpcSolver

        recorder = StepRecorder(IpcSolver, ("newton_iterations", "pcg_iterations"))
    runs = []
    for k in range(1 + repeat):
        row = bake_once(engine, frames, resolution, recorder, cuts, surface)
        row["run"] = "first" if k == 0 else "warm"
        runs.append(row)
    # one more bake under tracemalloc (numpy reports its arrays to it), apart from the timed ones: its peak
    # memory per tet is the figure Check Scene's lattice estimate uses
    tracemalloc.start()
    row = bake_once(engine, frames, resolution, recorder, cuts, surface)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    runs[-1]["peak_bytes_per_tet"] = peak / max(row["tets"], 1)
    return runs


def _child(args, engine: str, cache_dir: str | None = None) -> list[dict]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", engine, "--frames", str(args.frames)]
    cmd += ["--repeat", str(args.repeat)]
    if args.resolution is not None:
        cmd += ["--resolution", str(args.resolution)]
    if args.cuts:
        cmd += ["--cuts", str(args.cuts)]
    if args.ipc_surface:
        cmd += ["--ipc-surface", args.ipc_surface]
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.stderr.write(out.stdout[-4000:] + out.stderr[-4000:])
        raise SystemExit(f"bench_default_cube: the {engine} bake failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _verdict(engine: str, row: dict) -> str:
    target = TARGETS[engine]
    parts = []
    ok = row["seconds_per_frame"] <= target["seconds_per_frame"]
    verdict = "PASS" if ok else "FAIL"
    parts.append(f"{row['seconds_per_frame']:.3f} s/frame <= {target['seconds_per_frame']:g}: {verdict}")
    if "mean_newton_per_step" in target:
        ok = row["mean_newton_per_step"] <= target["mean_newton_per_step"]
        parts.append(
            f"mean {row['mean_newton_per_step']:.1f} Newton/step <= {target['mean_newton_per_step']:g}: "
            f"{'PASS' if ok else 'FAIL'}"
        )
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="soft,ipc")
    parser.add_argument("--frames", type=int, default=24, help="simulated frames (24 = 1 s at 24 fps)")
    parser.add_argument("--resolution", type=int, default=None, help="Lattice Resolution (default: the add-on's)")
    parser.add_argument("--cuts", type=int, default=0, help="subdivide the cube's faces with N cuts (default: none)")
    parser.add_argument("--ipc-surface", default="", choices=("", "REFINED", "MESH"),
                        help="the cube's IPC Surface (default: the add-on's)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=2, help="warm bakes after the first one")
    parser.add_argument("--cold", action="store_true", help="also bake once with an empty kernel cache")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_engine(args.child, args.frames, args.resolution, args.repeat, args.cuts,
                                    args.ipc_surface)))  # fmt: skip
        return
    import bpy

    print(
        f"Default cube (2 m, Role Soft, every setting default) dropped 0.1 m on a passive plane, {args.frames} "
        f"frames at 24 fps; bpy {bpy.app.version_string}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'default')}"
        + (f"; its faces subdivided with {args.cuts} cuts" if args.cuts else "")
        + (f"; IPC Surface {args.ipc_surface}" if args.ipc_surface else "")
    )
    head = (
        f"{'engine':<6} {'run':<6} {'load (1/5/15 min)':<18} {'tets':>6} {'s/frame':>8} {'steps':>5} "
        f"{'Newton/step':>12} {'max':>4} {'PCG/step':>9} {'PCG/Newton':>10} {'Hessians/step':>13} {'compiled':>8} "
        f"{'µs/tet/step':>11}"
    )
    for engine in [e.strip().upper() for e in args.engines.split(",") if e.strip()]:
        print()
        if args.cold:
            with tempfile.TemporaryDirectory(prefix="contact_lab_cold_") as cache:
                t0 = time.perf_counter()
                cold = _child(argparse.Namespace(**{**vars(args), "repeat": 0}), engine, cache)[0]
                total = time.perf_counter() - t0
            print(
                f"{engine} cold: first bake {cold['wall_s']:.1f} s with an empty kernel cache "
                f"({cold['compiled_kernels']} kernels compiled; process {total:.1f} s; load {cold['load']})"
            )
        print(head)
        runs = _child(args, engine)
        for r in runs:
            hess = f"{r['hessians_per_step']:.2f}" if r["hessians_per_step"] is not None else "-"
            print(
                f"{engine:<6} {r['run']:<6} {r['load']:<18} {r['tets']:>6} {r['seconds_per_frame']:>8.3f} "
                f"{r['steps']:>5} {r['mean_newton_per_step']:>12.2f} {r['max_newton_per_step']:>4} "
                f"{r['mean_pcg_per_step']:>9.1f} {r['pcg_per_newton']:>10.1f} {hess:>13} {r['compiled_kernels']:>8} "
                f"{r['us_per_tet_step']:>11.1f}"
            )
        warm = [r for r in runs if r["run"] == "warm"] or runs
        best = min(warm, key=lambda r: r["seconds_per_frame"])
        print(f"{engine} target (best warm run): {_verdict(engine, best)}")
        print(
            f"{engine} cost (best warm run): {best['us_per_tet_step']:.1f} µs per tet and solver step "
            f"(processor time of the whole bake, all threads: {best['cpu_us_per_tet_step']:.1f} µs); peak memory "
            f"{runs[-1]['peak_bytes_per_tet'] / 1e3:.1f} kB per tet (one more bake under tracemalloc)"
        )


if __name__ == "__main__":
    main()
