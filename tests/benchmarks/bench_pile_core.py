"""The pile through the core alone (no bpy): time per substep, where it goes, and the interpreter stack it ran on.

The scene of ``bench_pile.py`` (``pile_scene.build_core_model``: the bodies as the bridge exports them, then the five
static boxes), simulated by ``core.simulate`` exactly as a bake runs it (24 fps x 10 substeps, 20 iterations,
tolerance 1e-6), in any interpreter that has numpy and numba: the bpy 5.0 venv (Python 3.11, numpy 1) and the bpy
5.2 venv (Python 3.13, numpy 2) run the same code, so the two stacks can be compared without Blender.

Printed: the versions (Python, numpy, numba, llvmlite, bpy when imported, NUMBA_NUM_THREADS) and the load average;
the cold start (import of the core plus a 20-body, 3-frame simulation: compile or cache load); the warm simulation
(seconds, ms per substep, max contacts, figures); with ``--phases`` a second run with every kernel of a substep
timed (collision: poses/AABBs, broad phase, narrow phase, contact ids, sort, the rest of ``collide``; solver: free
velocities, contact rows, warm start, accumulate, solve, store, integrate; the frame loop's own Python), and with
``--cprofile N`` the top N functions of a cProfile run; ``--dispatch`` times an empty Numba call with the
argument kinds the substep passes (arrays, scalars, a tuple of arrays), which is the per-call cost of the
dispatcher on this interpreter.

Run: ``python tests/benchmarks/bench_pile_core.py`` (defaults: 1000 boxes, 5 s, PGS). Options: ``--bodies``,
``--shape box|rock``, ``--seconds``, ``--solvers PGS PROX PGS-plain`` (PGS-plain: PGS without its
conjugate-gradient steps), ``--options JSON`` (repeatable: a run with these ``core.simulate`` solver options, e.g.
``'{"solver": "PROX", "penetration_slop": 0}'``), ``--phases``, ``--cprofile N``, ``--dispatch``,
``--bpy`` (import bpy first, as inside Blender), ``--empty-cache`` (compile into a new cache directory: the cold
start then prints the compile time of each part: import, the contact-free path, PGS's contact kernels, PROX's,
the rocks'), ``--json PATH``. ``NUMBA_NUM_THREADS`` and ``NUMBA_CACHE_DIR`` are read from the environment.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pile_scene as ps  # noqa: E402

PHASES = {
    # module (under contact_lab.core.rigid) -> names of the callables of one substep timed as phases
    "collision.pipeline": (
        "compute_shape_world_poses", "compute_shape_aabbs", "sweep_and_prune", "generate_contacts",
        "finish_contacts",
    ),
    "solvers.base": (
        "compute_free_velocities", "compute_contact_rows", "warm_start_impulses", "accumulate_impulses",
        "store_world_impulses", "finish_step", "integrate_positions",
    ),
    "solvers.solver_pgs": ("solve_pgs",),
    "solvers.solver_prox": ("contact_islands", "compute_island_r_factors", "solve_prox_gs"),
}  # fmt: skip
METHODS = {
    "collision.pipeline": ("CollisionPipeline", ("collide", "_sort_contacts")),
    "solvers.base": ("SolverBase", ("step",)),
}


class PhaseTimer:
    """Replaces the substep's callables in their modules by timing wrappers (and puts them back on exit)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._undo = []

    def _wrap(self, owner, name: str, label: str):
        original = getattr(owner, name)
        seconds, calls, clock = self.seconds, self.calls, time.perf_counter
        seconds[label], calls[label] = 0.0, 0

        def timed(*args, **kwargs):
            t0 = clock()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[label] += clock() - t0
                calls[label] += 1

        setattr(owner, name, timed)
        self._undo.append((owner, name, original))

    def __enter__(self):
        import importlib

        for module, names in PHASES.items():
            mod = importlib.import_module(f"contact_lab.core.rigid.{module}")
            for name in names:
                self._wrap(mod, name, name)
        for module, (cls, names) in METHODS.items():
            owner = getattr(importlib.import_module(f"contact_lab.core.rigid.{module}"), cls)
            for name in names:
                self._wrap(owner, name, f"{cls}.{name}")
        return self

    def __exit__(self, *exc):
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)
        self._undo.clear()

    def table(self, total: float, substeps: int) -> list[tuple[str, float]]:
        """(phase, ms per substep) rows, the Python glue between kernels as remainders."""
        s = self.seconds
        collide_kernels = sum(s[n] for n in PHASES["collision.pipeline"]) + s["CollisionPipeline._sort_contacts"]
        step_kernels = sum(s[n] for n in (*PHASES["solvers.base"], *PHASES["solvers.solver_pgs"]))
        step_kernels += sum(s[n] for n in PHASES["solvers.solver_prox"])
        rows = [(n, s[n]) for n in PHASES["collision.pipeline"]]
        rows.append(("sort contacts (numpy argsort + gathers)", s["CollisionPipeline._sort_contacts"]))
        rows.append(("collide: the rest (Python, array fills)", s["CollisionPipeline.collide"] - collide_kernels))
        rows += [(n, s[n]) for n in (*PHASES["solvers.base"], *PHASES["solvers.solver_pgs"])]
        rows += [(n, s[n]) for n in PHASES["solvers.solver_prox"] if self.calls[n]]
        rows.append(("step: the rest (Python between kernels)", s["SolverBase.step"] - step_kernels))
        loop = total - s["CollisionPipeline.collide"] - s["SolverBase.step"]
        rows.append(("frame loop (statistics, finite checks, record)", loop))
        return [(name, 1e3 * sec / substeps) for name, sec in rows]


PLAIN_PGS = "PGS-plain"
"""Solver name of this script for PGS without its conjugate-gradient steps (``accelerate=False``)."""


def simulate(model, seconds: float, solver: str, options: dict | None = None):
    """The pile for ``seconds`` with ``solver`` (or ``PLAIN_PGS``) and the solver ``options`` given on top of the
    scene's (the keyword options of ``core.simulate``: ``split_impulse``, ``penetration_slop``, ...)."""
    from contact_lab.core import simulate as core_simulate

    options = dict(options or {})
    if solver == PLAIN_PGS:
        options["accelerate"] = False
    return core_simulate(
        model, frame_count=round(seconds * ps.FPS) + 1, fps=ps.FPS, substeps=ps.SUBSTEPS,
        solver="PGS" if solver == PLAIN_PGS else solver, iterations=ps.ITERATIONS, tolerance=ps.TOLERANCE, **options,
    )  # fmt: skip


WARM_UP_SECONDS = 0.5
"""Long enough for the warm-up bodies to land (they start 0.1 m above the floor): a shorter warm-up finds no
contact, so the contact kernels (rows, warm start, the solvers) would compile inside the timed run."""


def cold_start() -> tuple[float, dict]:
    """Import the core and simulate 20 boxes (PGS, PROX) and 8 rocks (PGS) for 0.5 s (compile or cache load).

    Returns the total [s] and its parts [s]: the import, the contact-free path (2 frames of PGS before the boxes
    land: free motion, collision, integration), the contact kernels of PGS (the first 0.5 s with contacts), PROX's
    and the rocks' (the convex narrow phase is compiled with the rest of the narrow phase).
    """
    parts, clock = {}, time.perf_counter
    t0 = clock()
    import contact_lab.core  # noqa: F401

    parts["import"] = clock() - t0
    model = ps.build_core_model(20, "box")
    t = clock()
    simulate(model, 2.0 / ps.FPS, "PGS")
    parts["contact-free path"] = clock() - t
    for label, solver in (("PGS contact kernels", "PGS"), ("PROX kernels", "PROX")):
        t = clock()
        simulate(model, WARM_UP_SECONDS, solver)
        parts[label] = clock() - t
    t = clock()
    simulate(ps.build_core_model(8, "rock"), WARM_UP_SECONDS, "PGS")
    parts["rocks"] = clock() - t
    return clock() - t0, parts


def dispatch_cost(repeats: int = 20000) -> dict:
    """Microseconds per call of empty Numba kernels taking the argument kinds a substep passes."""
    import numba

    @numba.njit(cache=False, nogil=True)
    def arrays(a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q, r, s, t, u):
        return 0

    @numba.njit(cache=False, nogil=True)
    def scalars(a, b, c, d, e, f):
        return 0

    @numba.njit(cache=False, nogil=True)
    def tupled(rows, n):
        return n

    x3, xi = np.zeros((10, 3)), np.zeros(10, np.int32)
    rows = (xi, xi, np.zeros(10), x3, x3, x3, x3, x3, x3)
    cases = {
        "20 arrays": (arrays, (x3,) * 10 + (xi,) * 10),
        "6 scalars (int, float)": (scalars, (1, 2, 3, 0.1, 0.2, 0.3)),
        "tuple of 9 arrays + int": (tupled, (rows, 3)),
    }
    out = {}
    for label, (fn, args) in cases.items():
        fn(*args)
        t0 = time.perf_counter()
        for _ in range(repeats):
            fn(*args)
        out[label] = 1e6 * (time.perf_counter() - t0) / repeats
    return out


def runs(args) -> list[tuple[str, str, dict]]:
    """``(label, solver, options)`` of every run asked for: each of ``--solvers`` with the scene's options, then
    each ``--options`` set (a JSON object of ``core.simulate`` keywords; its ``solver`` defaults to PGS)."""
    out = [(solver, solver, {}) for solver in args.solvers]
    for text in args.options:
        options = json.loads(text)
        if not isinstance(options, dict):
            raise SystemExit(f"--options takes a JSON object of solver options, not {text!r}")
        out.append((text, options.pop("solver", "PGS"), options))
    return out


def run(args) -> dict:
    versions = ps.versions()
    plural = "es" if args.shape == "box" else "s"
    print(f"pile (core only): {args.bodies} {args.shape}{plural}, {args.seconds:g} s, {ps.FPS} fps x {ps.SUBSTEPS} "
          f"substeps, {ps.ITERATIONS} iterations; {ps.versions_line(versions)}")  # fmt: skip
    print(f"  {ps.load_line()} (before the cold start)")
    cold, parts = cold_start()
    print(f"cold start (import, 20 boxes with PGS and PROX and 8 rocks for 0.5 s: compile or cache load): {cold:.1f} s "
          f"({', '.join(f'{k} {v:.1f}' for k, v in parts.items())})")  # fmt: skip
    t0 = time.perf_counter()
    model = ps.build_core_model(args.bodies, args.shape)
    print(f"model built in {time.perf_counter() - t0:.1f} s ({model.body_count} bodies, {model.shape_count} shapes)")
    substeps = round(args.seconds * ps.FPS) * ps.SUBSTEPS
    geometry = ps.body_geometry(args.bodies, args.shape) if args.shape == "box" else None
    result = dict(bodies=args.bodies, shape=args.shape, seconds=args.seconds, versions=versions, cold_s=cold,
                  cold_parts_s=parts, rows=[])  # fmt: skip
    for label, solver, options in runs(args):
        load = ps.load_line()
        t0 = time.perf_counter()
        traj = simulate(model, args.seconds, solver, options)
        sim = time.perf_counter() - t0
        if geometry is None:
            geometry = ps.body_geometry(args.bodies, args.shape)
        fig = ps.figures(ps.core_matrices(traj.body_pos, traj.body_quat, args.bodies), *geometry)
        row = dict(solver=label, simulate_s=sim, substep_ms=1e3 * sim / substeps, load=load,
                   max_contacts=int(traj.contact_count.max()), **fig)  # fmt: skip
        print(f"{label}: {sim:.2f} s, {row['substep_ms']:.2f} ms/substep, max contacts {row['max_contacts']}, "
              f"deepest {fig['deepest_mm']:.3f} mm, at end {fig['resting_mm']:.3f} mm, tunnelled {fig['tunnelled']}, "
              f"KE {fig['kinetic_J']:.4f} J  [{load} before]")  # fmt: skip
        if args.phases:
            with PhaseTimer() as timer:
                t0 = time.perf_counter()
                simulate(model, args.seconds, solver, options)
                total = time.perf_counter() - t0
            table = timer.table(total, substeps)
            row["phases_ms"] = dict(table)
            row["phased_total_ms"] = 1e3 * total / substeps
            print(f"  phases ({solver}, a second run with timing wrappers: {row['phased_total_ms']:.2f} ms/substep):")
            for name, ms in table:
                print(f"    {name:<48} {ms:8.3f} ms/substep")
        if args.cprofile:
            profiler = cProfile.Profile()
            profiler.enable()
            simulate(model, args.seconds, solver, options)
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(args.cprofile)
            row["cprofile"] = text.getvalue()
            print(f"  cProfile ({solver}), top {args.cprofile} by own time:")
            print("\n".join("    " + line for line in text.getvalue().splitlines() if line.strip()))
        result["rows"].append(row)
    if args.dispatch:
        result["dispatch_us"] = dispatch_cost()
        print("Numba dispatch, µs per call of an empty kernel: "
              + ", ".join(f"{k} {v:.2f}" for k, v in result["dispatch_us"].items()))  # fmt: skip
    result["versions"]["threading_layer"] = ps.versions()["threading_layer"]
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=1000)
    parser.add_argument("--shape", choices=("box", "rock"), default="box")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--solvers", nargs="*", default=["PGS"])
    parser.add_argument(
        "--options",
        action="append",
        default=[],
        metavar="JSON",
        help="another run with these solver options, e.g. '{\"split_impulse\": true}' (repeatable)",
    )
    parser.add_argument("--phases", action="store_true", help="time every kernel of a substep (a second run)")
    parser.add_argument("--cprofile", type=int, default=0, metavar="N", help="print the top N of a cProfile run")
    parser.add_argument("--dispatch", action="store_true", help="time empty Numba calls (dispatcher overhead)")
    parser.add_argument("--bpy", action="store_true", help="import bpy first, as inside Blender")
    parser.add_argument("--json", default=None)
    parser.add_argument("--empty-cache", action="store_true", help="compile into a new, empty Numba cache directory")
    args = parser.parse_args(argv)
    if args.empty_cache:  # before numba is imported: it reads NUMBA_CACHE_DIR once
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="pile_core_cache_")
        print(f"empty Numba cache: {os.environ['NUMBA_CACHE_DIR']} (left on disk)")
    if args.bpy:
        import bpy  # noqa: F401 (its libraries, allocator and thread settings are what is measured)
    result = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
