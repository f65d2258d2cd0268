"""Write FCLIB problems from the Rigid engine's own scenes and record how every dense solver does on each.

    .venv/bin/python tests/data/fclib/make_problems.py            # write the files and outcomes.json
    .venv/bin/python tests/data/fclib/make_problems.py --table    # print outcomes.json as the docs' table
    .venv/bin/python tests/data/fclib/make_problems.py --add NAME...  # record new methods on the files as they are

Each scene below is built in the core, simulated as a bake would, and the contact problem of one step is written
with ``local_problem_at`` and ``fclib.write_local``. The file's ``/solution`` is the most accurate solution found by
the study's methods (lowest FCLIB merit; none where no method reached 1e-8), its guess the impulses the scene's own
solver found in the bake.
``outcomes.json`` records every method of ``local_solvers.SOLVERS`` on every file (merit, iterations, converged at
tolerance 1e-8 within 1000 iterations), with one OpenBLAS thread: the Newton and pivoting methods' least-squares
solves round differently with more threads, and on the harder problems their paths part (the hull bin is solved
with one thread and not with two). tests/core/contact_solvers/test_shipped_problems.py checks that they still hold.
Re-record on purpose only, after a change to a solver or to the engine that builds these problems.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy: the outcomes are those of one BLAS thread, as in make test
import numpy as np  # noqa: E402
from contact_lab.core import BodyKind, ModelBuilder  # noqa: E402
from contact_lab.core.contact_solvers import fclib  # noqa: E402
from contact_lab.core.contact_solvers.local_solvers import SOLVERS, solve_local  # noqa: E402
from contact_lab.core.rigid.contact_problem import local_problem_at  # noqa: E402
from contact_lab.core.rigid.settings import RigidSettings  # noqa: E402

HERE = Path(__file__).resolve().parent
TOLERANCE, MAX_ITERATIONS = 1e-8, 1000
FPS = 24.0


def _ground(b, mu=0.6):
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="ground")
    b.add_shape_plane(ground, mu=mu)


def box_tower(count=10, mu=0.6):
    """Boxes of 0.4 m stacked straight up, resting."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _ground(b, mu)
    for i in range(count):
        body = b.add_body(pos=(0.0, 0.0, 0.2 + 0.4 * i), mass=1.0, label=f"box{i}")
        b.add_shape_box(body, (0.2, 0.2, 0.2), mu=mu)
    return b.finalize()


def box_pyramid(rows=4, mu=0.5):
    """A 2D pyramid of 0.4 m boxes, each row on the gaps of the row below."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _ground(b, mu)
    for row in range(rows):
        for k in range(rows - row):
            x = (k - (rows - row - 1) / 2.0) * 0.42
            body = b.add_body(pos=(x, 0.0, 0.2 + 0.4 * row), mass=1.0, label=f"box{row}_{k}")
            b.add_shape_box(body, (0.2, 0.2, 0.2), mu=mu)
    return b.finalize()


def brick_wall(rows=4, columns=4, mu=0.7):
    """A running-bond wall of 0.4 × 0.2 × 0.2 m bricks."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _ground(b, mu)
    for row in range(rows):
        shift = 0.2 if row % 2 else 0.0
        for k in range(columns):
            body = b.add_body(pos=(0.4 * k + shift, 0.0, 0.1 + 0.2 * row), mass=0.8, label=f"brick{row}_{k}")
            b.add_shape_box(body, (0.2, 0.1, 0.1), mu=mu)
    return b.finalize()


def heavy_on_light(mu=0.5):
    """A 100 kg box on three 1 kg boxes side by side: a mass ratio of 100."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _ground(b, mu)
    for k in range(3):
        body = b.add_body(pos=(0.45 * (k - 1), 0.0, 0.2), mass=1.0, label=f"light{k}")
        b.add_shape_box(body, (0.2, 0.2, 0.2), mu=mu)
    heavy = b.add_body(pos=(0.0, 0.0, 0.5), mass=100.0, label="heavy")
    b.add_shape_box(heavy, (0.7, 0.3, 0.1), mu=mu)
    return b.finalize()


def _rng_pile(b, count, seed, shape):
    rng = np.random.default_rng(seed)
    for i in range(count):
        pos = (rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), 0.15 + 0.22 * i)
        quat = rng.normal(size=4)
        body = b.add_body(pos=pos, quat=tuple(quat / np.linalg.norm(quat)), mass=rng.uniform(0.5, 2.0), label=f"g{i}")
        shape(b, body, i, rng)


def _bin(b, mu):
    _ground(b, mu)
    wall = b.add_body(kind=BodyKind.KINEMATIC, label="bin")
    for pos, half in (((0.5, 0, 0.5), (0.05, 0.55, 0.5)), ((-0.5, 0, 0.5), (0.05, 0.55, 0.5)),
                      ((0, 0.5, 0.5), (0.55, 0.05, 0.5)), ((0, -0.5, 0.5), (0.55, 0.05, 0.5))):  # fmt: skip
        b.add_shape_box(wall, half, pos=pos, mu=mu)


def sphere_bin(count=24, mu=0.4):
    """Spheres of 6–10 cm radius poured into a square bin: granular."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _bin(b, mu)
    _rng_pile(b, count, 1, lambda b, body, i, rng: b.add_shape_sphere(body, rng.uniform(0.06, 0.1), mu=mu))
    return b.finalize()


def capsule_pile(count=14, mu=0.5):
    """Capsules dropped at random orientations into a bin."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _bin(b, mu)
    _rng_pile(b, count, 2, lambda b, body, i, rng: b.add_shape_capsule(body, 0.05, 0.12, mu=mu))
    return b.finalize()


def mixed_granular(count=16, mu=0.6):
    """Spheres, boxes and capsules in turn, dropped into a bin."""

    def shape(b, body, i, rng):
        if i % 3 == 0:
            b.add_shape_sphere(body, 0.08, mu=mu)
        elif i % 3 == 1:
            b.add_shape_box(body, (0.08, 0.06, 0.05), mu=mu)
        else:
            b.add_shape_capsule(body, 0.05, 0.08, mu=mu)

    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _bin(b, mu)
    _rng_pile(b, count, 3, shape)
    return b.finalize()


def hull_pile(count=12, mu=0.6):
    """Random convex hulls (12 points on a squashed sphere each) falling on the ground."""

    def shape(b, body, i, rng):
        points = rng.normal(size=(12, 3)) * np.array([0.1, 0.08, 0.06])
        b.add_shape_convex(body, points, mu=mu)

    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _bin(b, mu)
    _rng_pile(b, count, 4, shape)
    return b.finalize()


def domino_chain(count=10, mu=0.5):
    """A row of thin boxes, the first tipped over onto the next: a chain of leaning contacts."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _ground(b, mu)
    for i in range(count):
        body = b.add_body(pos=(0.25 * i, 0.0, 0.3), mass=0.5, omega=(0.0, 4.0, 0.0) if i == 0 else (0.0, 0.0, 0.0),
                          label=f"domino{i}")  # fmt: skip
        b.add_shape_box(body, (0.03, 0.15, 0.3), mu=mu)
    return b.finalize()


def sphere_chain(count=8, mu=0.3):
    """A row of touching spheres on the ground, the first pushed into the others: a chain of impacts."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    _ground(b, mu)
    for i in range(count):
        body = b.add_body(pos=(0.2 * i, 0.0, 0.1), vel=(2.0 if i == 0 else 0.0, 0.0, 0.0), label=f"ball{i}")
        b.add_shape_sphere(body, 0.1, mu=mu)
    return b.finalize()


def boxes_on_a_slope(mu=0.3):
    """Three boxes on a 25° ramp, one sliding (μ below tan 25°) and two stacked."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    angle = math.radians(25.0)
    quat = (math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0)  # about +y: the ramp falls towards +x
    ramp = b.add_body(kind=BodyKind.KINEMATIC, quat=quat, label="ramp")
    b.add_shape_box(ramp, (2.0, 1.0, 0.05), mu=mu)
    normal = np.array([math.sin(angle), 0.0, math.cos(angle)])
    down = np.array([math.cos(angle), 0.0, -math.sin(angle)])
    for i, (along, up) in enumerate(((-1.0, 0.0), (0.3, 0.0), (0.3, 1.0))):
        centre = down * along + normal * (0.05 + 0.15 + 0.3 * up)
        body = b.add_body(pos=tuple(centre), quat=quat, mass=1.0, label=f"box{i}")
        b.add_shape_box(body, (0.15, 0.15, 0.15), mu=mu)
    return b.finalize()


SCENES = {
    "tower_10_boxes": (box_tower, 12),
    "pyramid_10_boxes": (box_pyramid, 12),
    "wall_16_bricks": (brick_wall, 12),
    "heavy_on_light": (heavy_on_light, 12),
    "spheres_in_a_bin": (sphere_bin, 30),
    "capsules_in_a_bin": (capsule_pile, 30),
    "mixed_granular": (mixed_granular, 30),
    "hulls_in_a_bin": (hull_pile, 30),
    "domino_chain": (domino_chain, 10),
    "sphere_chain": (sphere_chain, 3),
    "boxes_on_a_slope": (boxes_on_a_slope, 6),
}
"""Problem name: (scene builder, output frame whose first step is written)."""


def main() -> None:
    settings = RigidSettings(substeps=4, solver="PROX", iterations=100)
    outcomes: dict = {}
    for name, (build, frame) in SCENES.items():
        W, q, mu, bake_r = local_problem_at(build(), frame, fps=FPS, settings=settings)
        problem = fclib.LocalProblem(W, q, mu, info=fclib.Info(title=name, description=(build.__doc__ or "").strip(),
                                                                 math_info=f"Contact Lab rigid step, frame {frame}, "
                                                                 f"{FPS:g} fps, 4 substeps"))  # fmt: skip
        results = {method: solve_local(problem, method, TOLERANCE, MAX_ITERATIONS) for method in SOLVERS}
        best = min(results.values(), key=lambda result: result.merit)
        path = HERE / f"{name}.hdf5"
        solution = fclib.Solution(r=best.r, u=best.u) if best.converged else None  # none solved it: no /solution
        fclib.write_local(path, problem, solution, [fclib.Solution(r=bake_r, u=W @ bake_r + q)])
        outcomes[name] = {
            method: {"merit": float(f"{r.merit:.3e}"), "iterations": r.iterations, "converged": r.converged}
            for method, r in results.items()
        }
        solved = sum(r.converged for r in results.values())
        print(f"{name:20s} {mu.shape[0]:4d} contacts, best merit {best.merit:.1e}, {solved}/{len(results)} converged")
    (HERE / "outcomes.json").write_text(json.dumps(outcomes, indent=1) + "\n")


def add_methods(methods: list[str]) -> None:
    """Record ``methods`` (new keys of ``SOLVERS``) on every shipped file without rewriting the problems or the
    other methods' outcomes; a file no method had solved gets the new method's solution if it reaches 1e-8."""
    outcomes = json.loads((HERE / "outcomes.json").read_text())
    for name in outcomes:
        path = HERE / f"{name}.hdf5"
        problem = fclib.read_local(path)
        solution, guesses = fclib.read_solution(path)
        for method in methods:
            r = solve_local(problem, method, TOLERANCE, MAX_ITERATIONS)
            outcomes[name][method] = {"merit": float(f"{r.merit:.3e}"), "iterations": r.iterations,
                                      "converged": r.converged}  # fmt: skip
            if r.converged and solution is None:
                solution = fclib.Solution(r=r.r, u=r.u)
                fclib.write_local(path, problem, solution, guesses)
            print(f"{name:20s} {method}: merit {r.merit:.1e}, {r.iterations} iterations, converged {r.converged}")
    (HERE / "outcomes.json").write_text(json.dumps(outcomes, indent=1) + "\n")


def print_table() -> None:
    """outcomes.json as a markdown table: one row per problem, FCLIB's merit per method (bold where converged)."""
    outcomes = json.loads((HERE / "outcomes.json").read_text())
    methods = list(SOLVERS)
    print("| problem | contacts | " + " | ".join(f"`{m}`" for m in methods) + " |")
    print("|---|---:|" + "---:|" * len(methods))
    for name, row in outcomes.items():
        contacts = fclib.read_local(HERE / f"{name}.hdf5").contact_count
        cells = [f"**{row[m]['merit']:.0e}**" if row[m]["converged"] else f"{row[m]['merit']:.0e}" for m in methods]
        print(f"| {name} | {contacts} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    import sys

    if "--table" in sys.argv[1:]:
        print_table()
    elif "--add" in sys.argv[1:]:
        add_methods(sys.argv[sys.argv.index("--add") + 1 :])
    else:
        main()
