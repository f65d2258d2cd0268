"""FCLIB from the command line: ``solve-fclib`` solves a file's problem here, ``export-fclib`` writes a scene's.

``python -m contact_lab solve-fclib problem.hdf5 --solver NAME -o solution.hdf5``:

Reads the local problem of an FCLIB file (:mod:`..core.contact_solvers.fclib`), solves it with one of the core's
solvers (:data:`..core.contact_solvers.local_solvers.SOLVERS`; ``--solver help`` lists them), writes the impulses and
velocities as FCLIB's ``/solution/r`` and ``/solution/u`` and prints one JSON line: ``{"solver", "merit",
"iterations", "seconds", "converged", "contacts"}``. Exit codes: 0 solved (converged or not: the line says which),
2 bad input (not HDF5, not a local 3D problem, W not square, μ missing or negative, NaN, no h5py, an output folder
that does not exist). Needs ``h5py``; never ``bpy``.

``export-fclib``'s arguments are parsed here; the export itself needs ``bpy`` and runs in :mod:`.fclib_export`,
which the root ``__main__`` hands to :func:`.command.main` (this side of the command line never imports ``bpy``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

EXIT_OK = 0
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


def output_problem(output: str) -> str | None:
    """Why ``output`` cannot be written to (its folder is missing), or None."""
    folder = os.path.dirname(os.path.abspath(output))
    return None if os.path.isdir(folder) else f"the output folder {folder} does not exist"


def fail(message: str) -> int:
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
        return fail(f"unknown solver {args.solver!r}: one of {', '.join(SOLVERS)} (--solver help describes them)")
    if not args.output:
        return fail("name the solution file with -o solution.hdf5")
    problem = output_problem(args.output)
    if problem:
        return fail(problem)
    if not (args.tolerance > 0.0 and args.max_iterations > 0):
        return fail("--tolerance and --max-iterations must be greater than 0")
    try:
        problem = fclib.read_local(args.problem)
    except fclib.FclibError as exc:
        return fail(str(exc))
    result = solve_local(problem, args.solver, args.tolerance, args.max_iterations)
    fclib.write_solution(args.output, fclib.Solution(u=result.u, r=result.r))
    line = {
        "solver": args.solver, "merit": result.merit, "iterations": result.iterations, "seconds": result.seconds,
        "converged": result.converged, "contacts": problem.contact_count,
    }  # fmt: skip
    print(json.dumps(line), flush=True)
    return EXIT_OK
