"""The solver study: every contact method of the core on the same problems, judged by one merit (FCLIB's).

Three parts, each printed and, with ``--docs``, written into ``docs/solver-study-results.md`` with its plots:

1. **Scenes** (the PROX paper's set-up, seed 001 §1.9): a tower of 49 boxes, a running-bond wall of 81 bricks and a
   pile of 100 boxes in a bin, dt = 0.01 s for 450 steps, at most 1 000 iterations, tolerance 1e-3, μ = 0.75.
   Each of the Rigid engine's solvers bakes every step (PGS, PGS with shock propagation, PROX with the global and
   the local r-factor, NEWTON); per step the study records the sweeps, PROX's rejected sweeps, and FCLIB's merit
   of the step's impulses on the step's own problem. Time per step from a second run without the merit, and how
   far the body that moved most ended from its start (the tower and the wall should stand).
2. **Dense methods** (``local_solvers.SOLVERS``) on the FCLIB problems that ship with the tests: Dolan–Moré
   performance profiles of the time to reach the merit 1e-4 and 1e-8 within 1 000 iterations (the fraction of
   problems a method solves within τ times the fastest method's time).
3. **Impacts** (seed 004): Newton's cradle by each impact model.

Run: ``make solver-study`` (writes the docs page and plots; installs matplotlib into .venv on first use) or
``.venv/bin/python tests/benchmarks/solver_study.py [--steps N] [--docs]``. About 8 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from contact_lab.core import BodyKind, ModelBuilder, simulate
from contact_lab.core.contact_solvers import fclib, impacts
from contact_lab.core.contact_solvers.local_solvers import SOLVERS, solve_local
from contact_lab.core.enums import RFactorStrategy
from contact_lab.core.rigid.settings import RigidSettings

ROOT = Path(__file__).resolve().parents[2]
FCLIB_DATA = ROOT / "tests" / "data" / "fclib"
DOCS = ROOT / "docs"
MU, DT, MAX_ITERATIONS, TOLERANCE = 0.75, 0.01, 1000, 1e-3
RECORD_TOLERANCE = 1e-8
"""The tolerance tests/data/fclib/outcomes.json was recorded at (with ``MAX_ITERATIONS``)."""
ENGINE_METHODS = {
    "PGS": ("PGS", {}),
    "PGS + shock propagation": ("PGS", {"shock_propagation": True}),
    "PROX, global r": ("PROX", {"r_strategy": RFactorStrategy.GLOBAL}),
    "PROX, local r": ("PROX", {"r_strategy": RFactorStrategy.LOCAL}),
    "NEWTON": ("NEWTON", {}),
}


def _ground(b):
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="ground")
    b.add_shape_plane(ground, mu=MU)


def tower():
    """49 boxes: 24 courses of two 1.2 × 0.2 × 0.2 m planks, each course across the one below (a two-plank Jenga
    tower, 4.8 m tall), capped by a 1.2 m slab."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _ground(b)
    for course in range(24):
        along_x = course % 2 == 0
        for side in (-0.5, 0.5):
            pos = (0.0, side, 0.1 + 0.2 * course) if along_x else (side, 0.0, 0.1 + 0.2 * course)
            body = b.add_body(pos=pos, mass=2.0, label=f"plank{course}_{side:+.1f}")
            b.add_shape_box(body, (0.6, 0.1, 0.1) if along_x else (0.1, 0.6, 0.1), mu=MU)
    cap = b.add_body(pos=(0.0, 0.0, 0.1 + 0.2 * 24), mass=4.0, label="cap")
    b.add_shape_box(cap, (0.6, 0.6, 0.1), mu=MU)
    return b.finalize()


def wall():
    """81 bricks in 9 courses of 9, running bond: 0.4 × 0.2 × 0.2 m bricks and 0.2 m half bricks, each course 8 full
    bricks and a half brick at one end, the end alternating, so every brick rests on two below and none overhangs."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _ground(b)
    for course in range(9):
        z, odd = 0.1 + 0.2 * course, course % 2 == 1
        for k in range(8):
            x = 0.4 * k + (0.2 if odd else 0.0)
            body = b.add_body(pos=(x, 0.0, z), mass=1.5, label=f"brick{course}_{k}")
            b.add_shape_box(body, (0.2, 0.1, 0.1), mu=MU)
        half = b.add_body(pos=(-0.1 if odd else 3.1, 0.0, z), mass=0.75, label=f"half{course}")
        b.add_shape_box(half, (0.1, 0.1, 0.1), mu=MU)
    return b.finalize()


def pile():
    """100 boxes of 0.2 m dropped in a 5 × 5 × 4 grid, each turned by up to 20°, into a 1.4 m bin."""
    rng = np.random.default_rng(7)
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _ground(b)
    bin_ = b.add_body(kind=BodyKind.KINEMATIC, label="bin")
    for pos, half in (((0.75, 0, 0.6), (0.05, 0.8, 0.6)), ((-0.75, 0, 0.6), (0.05, 0.8, 0.6)),
                      ((0, 0.75, 0.6), (0.8, 0.05, 0.6)), ((0, -0.75, 0.6), (0.8, 0.05, 0.6))):  # fmt: skip
        b.add_shape_box(bin_, half, pos=pos, mu=MU)
    for i in range(100):
        x, y, z = (i % 5 - 2) * 0.26, (i // 5 % 5 - 2) * 0.26, 0.2 + 0.3 * (i // 25)
        axis = rng.normal(size=3)
        angle = math.radians(rng.uniform(0.0, 20.0))
        quat = (math.cos(angle / 2), *(math.sin(angle / 2) * axis / np.linalg.norm(axis)))
        body = b.add_body(pos=(x, y, z), quat=quat, mass=1.0, label=f"box{i}")
        b.add_shape_box(body, (0.1, 0.1, 0.1), mu=MU)
    return b.finalize()


SCENES = {"Tower (49 boxes)": tower, "Wall (81 bricks)": wall, "Pile (100 boxes)": pile}


def _settings(method):
    solver, options = ENGINE_METHODS[method]
    return RigidSettings(substeps=1, solver=solver, iterations=MAX_ITERATIONS, tolerance=TOLERANCE,
                         solver_options=dict(options))  # fmt: skip


def run_engine(scene, method, steps):
    """Per step ``(sweeps, rejections, contacts, merit)`` rows, the warm time per step [ms] (a second run, without
    the merit) and the largest distance a body moved from its start [m] by the last step."""
    model, rows = SCENES[scene](), []

    def record(frame, substep, solver, contacts):
        n = contacts.contact_count
        if not n:
            rows.append((solver.last_iterations, solver.last_rejections, 0, 0.0))
            return
        problem = fclib.LocalProblem(*solver.local_problem(contacts))
        rows.append((solver.last_iterations, solver.last_rejections, n,
                     fclib.local_merit(problem, contacts.contact_impulse[:n].reshape(-1))))  # fmt: skip

    simulate(model, frame_count=steps + 1, fps=1.0 / DT, settings=_settings(method), on_step=record)
    start = time.perf_counter()
    trajectory = simulate(model, frame_count=steps + 1, fps=1.0 / DT, settings=_settings(method))
    ms = 1e3 * (time.perf_counter() - start) / steps
    moved = np.linalg.norm(trajectory.body_pos[-1] - trajectory.body_pos[0], axis=1).max()
    return np.array(rows), ms, moved


def scene_table(steps):
    """Part 1: the markdown table of every scene and engine method."""
    header = "| scene | method | contacts (median) | sweeps (median / p90) | rejected sweeps (median) | "
    lines = [
        header + "merit 1e-3 reached | merit (median) | ms per step | moved most [mm] |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scene in SCENES:
        for method in ENGINE_METHODS:
            rows, ms, moved = run_engine(scene, method, steps)
            touching = rows[rows[:, 2] > 0]
            merit = touching[:, 3]
            lines.append(
                f"| {scene} | {method} | {np.median(touching[:, 2]):.0f} | {np.median(touching[:, 0]):.0f} / "
                f"{np.percentile(touching[:, 0], 90):.0f} | {np.median(touching[:, 1]):.0f} | "
                f"{np.mean(merit <= TOLERANCE):.0%} | {np.median(merit):.1e} | {ms:.1f} | {1e3 * moved:.1f} |"
            )
            print(lines[-1], flush=True)
    return lines


def dense_runs(problems, tolerance, record=None):
    """``(times, changed)``: ``times[method][problem]`` the seconds to reach ``tolerance`` (inf where it did not),
    and with ``record`` (outcomes.json, ``{problem: {method: outcome}}``, made at this tolerance) the ``(problem,
    method)`` pairs whose outcome left it: converged where the record says not or the reverse, or an unconverged
    merit more than 10 times off. This is the record's check for the pairs too long for ``make test``
    (``test_shipped_problems.LONG``)."""
    warm = fclib.LocalProblem(np.eye(3), np.array([-1.0, 0.5, 0.0]), np.array([0.5]))
    for method in SOLVERS:
        solve_local(warm, method, tolerance, 10)  # compile outside the timing
    times = {method: {} for method in SOLVERS}
    changed = []
    for name, problem in problems:
        for method in SOLVERS:
            with np.errstate(all="ignore"):
                result = solve_local(problem, method, tolerance, MAX_ITERATIONS)
            times[method][name] = result.seconds if result.converged else math.inf
            expected = record.get(name, {}).get(method) if record is not None else None  # FCLIB's own: no record
            if expected is not None and (result.converged != expected["converged"] or (
                    not result.converged and not 0.1 <= result.merit / expected["merit"] <= 10.0)):  # fmt: skip
                changed.append((name, method))
    return times, changed


def performance_profile(times):
    """``(taus, {method: fraction solved within tau x best})``, Dolan and Moré (2002)."""
    names = sorted({name for by_problem in times.values() for name in by_problem})
    best = {name: min(times[m][name] for m in times) for name in names}
    ratios = {m: np.array([times[m][name] / best[name] if math.isfinite(best[name]) else math.inf
                           for name in names]) for m in times}  # fmt: skip
    taus = np.logspace(0, 3, 200)
    return taus, {m: np.array([np.mean(r <= tau) for tau in taus]) for m, r in ratios.items()}


def profile_lines(times, tolerance):
    lines = [f"| method | solved at {tolerance:g} | fastest on | within 10× of the fastest |", "|---|---:|---:|---:|"]
    taus, profile = performance_profile(times)
    count = len(next(iter(times.values())))
    for method, curve in sorted(profile.items(), key=lambda item: -item[1][-1]):
        solved = sum(math.isfinite(t) for t in times[method].values())
        at_ten = curve[np.searchsorted(taus, 10.0)]
        lines.append(f"| `{method}` | {solved} of {count} | {curve[0]:.0%} | {at_ten:.0%} |")
    return lines, taus, profile


def plot_profiles(curves, path, shown=8):
    """Both tolerances' profiles side by side: the ``shown`` methods that solve the most problems over both, each in
    one colour in both panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = sorted(SOLVERS, key=lambda m: -sum(profile[m][-1] for _, profile in curves.values()))[:shown]
    colours = dict(zip(methods, plt.get_cmap("tab10").colors, strict=False))
    fig, axes = plt.subplots(1, len(curves), figsize=(6 * len(curves), 4.5), sharey=True)
    for ax, (tolerance, (taus, profile)) in zip(np.atleast_1d(axes), curves.items(), strict=True):
        for method in methods:
            ax.step(taus, profile[method], where="post", label=method, color=colours[method])
        ax.set_xscale("log")
        ax.set_xlabel("τ: time within τ × the fastest method's")
        ax.set_title(f"merit {tolerance:g}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    np.atleast_1d(axes)[0].set_ylabel("fraction of problems solved")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def cradle_lines():
    J = np.array([[-1.0, 1.0, 0.0], [0.0, -1.0, 1.0]])
    inv_mass, v0 = np.ones(3), np.array([1.0, 0.0, 0.0])
    lines = ["| impact model | three-ball cradle, ball 1 at v₀ = 1, restitution 1 |", "|---|---|"]
    for name in ("simultaneous", "sequential", "generalized_reflections"):
        after = getattr(impacts, name)(J, inv_mass, v0, 1.0)[0]
        lines.append(f"| `{name}` | ({', '.join(f'{x:+.3f}' for x in after)}) |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=450)
    parser.add_argument("--docs", action="store_true", help="write docs/solver-study-results.md and its plot")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    scene_lines = scene_table(args.steps)
    problems = [(p.stem, fclib.read_local(p)) for p in sorted(FCLIB_DATA.glob("*.hdf5"))]
    sections, curves = [], {}
    record = json.loads((FCLIB_DATA / "outcomes.json").read_text())
    changed = []
    for tolerance in (1e-4, 1e-8):
        times, off_record = dense_runs(problems, tolerance, record if tolerance == RECORD_TOLERANCE else None)
        changed += off_record
        lines, taus, profile = profile_lines(times, tolerance)
        curves[tolerance] = (taus, profile)
        sections.append(lines)
        print("\n".join(lines), flush=True)
    print(f"outcomes.json: {len(changed)} (problem, method) outcomes changed" + "".join(f"\n  {c}" for c in changed))
    cradle = cradle_lines()
    print("\n".join(cradle))
    if args.docs:
        plot_profiles(curves, DOCS / "solver-study-profiles.png")
        body = [
            "<!-- written by tests/benchmarks/solver_study.py --docs (make solver-study); do not edit -->",
            "# Solver study: the numbers", "",
            f"## Scenes: dt = {DT} s, {args.steps} steps, at most {MAX_ITERATIONS} sweeps, tolerance {TOLERANCE:g}, "
            f"μ = {MU}", "", *scene_lines, "",
            f"## Dense methods: the {len(problems)} FCLIB problems of tests/data/fclib, at most 1 000 iterations", "",
            *sections[0], "", *sections[1], "",
            "![Performance profiles](solver-study-profiles.png)", "", "## Impacts", "", *cradle, "",
            f"Study time: {(time.perf_counter() - started) / 60:.0f} minutes.", "",
        ]  # fmt: skip
        (DOCS / "solver-study-results.md").write_text("\n".join(body))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
