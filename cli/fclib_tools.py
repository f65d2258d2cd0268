"""FCLIB from the command line: ``solve-fclib`` solves a file's problem here, ``export-fclib`` writes a scene's.

``python -m contact_lab solve-fclib problem.hdf5 --solver NAME -o solution.hdf5``:

Reads the local problem of an FCLIB file (:mod:`..core.contact_solvers.fclib`), solves it with one of the core's
solvers (:data:`..core.contact_solvers.local_solvers.SOLVERS`; ``--solver help`` lists them), writes the impulses and
velocities as FCLIB's ``/solution/r`` and ``/solution/u`` and prints one JSON line: ``{"solver", "merit",
"iterations", "seconds", "converged", "contacts"}``. Exit codes: 0 solved (converged or not: the line says which),
2 bad input (not HDF5, not a local 3D problem, W not square, μ missing or negative, NaN, no h5py, an output folder
that does not exist). Needs ``h5py``; never ``bpy``.

``python -m contact_lab export-fclib shot.blend --frame 42 [--substep K] [--scene NAME] -o shot_42.hdf5``: the Rigid
engine's contact problem of the step that starts at frame 42 (its first substep unless ``--substep``), after the
scene was simulated there as a bake would; the local formulation, with the impulses the scene's solver found as
``/solution/r`` and ``/solution/u``. Exit codes: 0 written, 1 the scene cannot be simulated there (Check Scene's
errors, no contacts in that step), 2 usage (no such file or scene, a frame outside the scene, not the Rigid
engine, no h5py or bpy, an output folder that does not exist). Needs ``bpy`` and ``h5py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def add_parser(commands) -> None:
    """The ``solve-fclib`` sub-command on the command line's sub-parsers."""
    solve = commands.add_parser(
        "solve-fclib",
        help="solve an FCLIB local problem with one of Contact Lab's solvers",
        description="Solve the local problem of an FCLIB file (HDF5) and write FCLIB's /solution/r and /solution/u. "
        "Prints one JSON line. Exit codes: 0 solved, 2 bad input.",
    )
    solve.add_argument("problem", help="the FCLIB file (.hdf5) holding /fclib_local")
    solve.add_argument("--solver", required=True, help="the solver's name; 'help' lists them")
    solve.add_argument("--tolerance", type=float, default=1e-8, help="FCLIB merit to reach (default 1e-8)")
    solve.add_argument("--max-iterations", type=int, default=1000, metavar="N", help="sweeps at most (default 1000)")
    solve.add_argument("-o", "--output", help="where to write the solution (FCLIB HDF5)")


def add_export_parser(commands) -> None:
    """The ``export-fclib`` sub-command on the command line's sub-parsers."""
    export = commands.add_parser(
        "export-fclib",
        help="write a Rigid scene's contact problem at one frame as an FCLIB file",
        description="Simulate a .blend's Rigid scene up to a frame and write the contact problem of the step that "
        "starts there (FCLIB's local formulation, HDF5), with the solver's impulses as its solution. "
        "Exit codes: 0 written, 1 the scene cannot be simulated there, 2 usage error.",
    )
    export.add_argument("input", help="the .blend file")
    export.add_argument("--frame", type=int, required=True, help="the scene frame whose first step is written")
    export.add_argument("--substep", type=int, default=0, help="which substep of that frame's (default 0, the first)")
    export.add_argument("--scene", help="scene name (default: the file's active scene)")
    export.add_argument("-o", "--output", required=True, help="where to write the FCLIB file")


def _output_problem(output: str) -> str | None:
    folder = os.path.dirname(os.path.abspath(output))
    return None if os.path.isdir(folder) else f"the output folder {folder} does not exist"


def export(args: argparse.Namespace) -> int:
    """Run ``export-fclib`` with parsed ``args``; returns the exit code."""
    if not os.path.isfile(args.input):
        return _fail(f"{args.input}: no such file")
    problem = _output_problem(args.output)
    if problem:
        return _fail(problem)
    try:
        import bpy
        import h5py  # noqa: F401 (checked before the long part)
    except ImportError as exc:
        return _fail(f"export-fclib needs the bpy and h5py modules: {exc}")
    from .. import register
    from ..addon.errors import BakeError
    from ..addon.rigid.gather import export_scene
    from ..core.contact_solvers import fclib
    from ..core.rigid.contact_problem import NoContactsError, local_problem_at

    register()
    try:
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(args.input), load_ui=False)
    except RuntimeError as exc:
        return _fail(f"cannot open {args.input}: {exc}")
    scene: Any = bpy.data.scenes.get(args.scene) if args.scene else bpy.context.scene  # (the stubs lack contact_lab)
    if scene is None:
        return _fail(f"no scene named {args.scene!r} in {args.input}")
    if scene.contact_lab.engine != "RIGID":
        return _fail(
            f"scene {scene.name!r} uses the {scene.contact_lab.engine} engine; export-fclib reads Rigid scenes"
        )
    if not scene.frame_start <= args.frame <= scene.frame_end:
        return _fail(
            f"--frame {args.frame} is outside scene {scene.name!r}'s frames {scene.frame_start}-{scene.frame_end}"
        )
    try:
        scene_export = export_scene(scene, frame_start=scene.frame_start, frame_end=args.frame + 1)
        W, q, mu, r = local_problem_at(scene_export.model, args.frame - scene.frame_start, substep=args.substep,
                                       **scene_export.simulate_kwargs())  # fmt: skip
    except (BakeError, NoContactsError) as exc:
        print(f"[contact_lab] error: {exc}", file=sys.stderr, flush=True)
        return EXIT_FAILED
    except ValueError as exc:  # a substep outside the frame's
        return _fail(str(exc))
    title = f"{os.path.basename(args.input)} {scene.name} frame {args.frame} substep {args.substep}"
    info = fclib.Info(title, f"Contact Lab rigid step, {mu.shape[0]} contacts, {scene_export.fps:g} fps, "
                             f"{scene_export.substeps} substeps, solver {scene_export.solver}", "")  # fmt: skip
    fclib.write_local(args.output, fclib.LocalProblem(W, q, mu, info=info), fclib.Solution(u=W @ r + q, r=r))
    print(json.dumps({"contacts": int(mu.shape[0]), "frame": args.frame, "output": args.output}), flush=True)
    return EXIT_OK


def _fail(message: str) -> int:
    print(f"[contact_lab] error: {message}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def solve(args: argparse.Namespace) -> int:
    """Run ``solve-fclib`` with parsed ``args``; returns the exit code."""
    from ..core.contact_solvers import fclib
    from ..core.contact_solvers.local_solvers import SOLVERS, solve_local

    if args.solver == "help":
        for name, (_, what) in SOLVERS.items():
            print(f"{name:<12} {what}")
        return EXIT_OK
    if args.solver not in SOLVERS:
        return _fail(f"unknown solver {args.solver!r}: one of {', '.join(SOLVERS)} (--solver help describes them)")
    if not args.output:
        return _fail("name the solution file with -o solution.hdf5")
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        return _fail(f"the output folder {folder} does not exist")
    if not (args.tolerance > 0.0 and args.max_iterations > 0):
        return _fail("--tolerance and --max-iterations must be greater than 0")
    try:
        problem = fclib.read_local(args.problem)
    except fclib.FclibError as exc:
        return _fail(str(exc))
    result = solve_local(problem, args.solver, args.tolerance, args.max_iterations)
    fclib.write_solution(args.output, fclib.Solution(u=result.u, r=result.r))
    line = {
        "solver": args.solver, "merit": result.merit, "iterations": result.iterations, "seconds": result.seconds,
        "converged": result.converged, "contacts": problem.contact_count,
    }  # fmt: skip
    print(json.dumps(line), flush=True)
    return EXIT_OK
