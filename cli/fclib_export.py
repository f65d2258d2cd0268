"""``python -m contact_lab export-fclib shot.blend --frame 42 [--substep K] [--scene NAME] -o shot_42.hdf5``.

The Rigid engine's contact problem of the step that starts at frame 42 (its first substep unless ``--substep``),
after the scene was simulated there as a bake would: FCLIB's local formulation, with the impulses the scene's solver
found as ``/solution/r`` and ``/solution/u``. Exit codes: 0 written, 1 the scene cannot be simulated there (Check
Scene's errors, no contacts in that step), 2 usage (no such file or scene, a frame outside the scene, not the Rigid
engine, no h5py or bpy, an output folder that does not exist). Runs with ``bpy`` (like :mod:`.single`); the
arguments are :mod:`.fclib_tools`'.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .fclib_tools import EXIT_OK, fail, output_problem

EXIT_FAILED = 1


def export(args: argparse.Namespace) -> int:
    """Run ``export-fclib`` with parsed ``args``; returns the exit code."""
    if not os.path.isfile(args.input):
        return fail(f"{args.input}: no such file")
    problem = output_problem(args.output)
    if problem:
        return fail(problem)
    try:
        import bpy
        import h5py  # noqa: F401 (checked before the long part)
    except ImportError as exc:
        return fail(f"export-fclib needs the bpy and h5py modules: {exc}")
    from .. import register
    from ..addon.errors import BakeError
    from ..addon.rigid.gather import export_scene
    from ..core.contact_solvers import fclib
    from ..core.rigid.contact_problem import NoContactsError, local_problem_at

    register()
    try:
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(args.input), load_ui=False)
    except RuntimeError as exc:
        return fail(f"cannot open {args.input}: {exc}")
    scene: Any = bpy.data.scenes.get(args.scene) if args.scene else bpy.context.scene  # (the stubs lack contact_lab)
    if scene is None:
        return fail(f"no scene named {args.scene!r} in {args.input}")
    if scene.contact_lab.engine != "RIGID":
        return fail(f"scene {scene.name!r} uses the {scene.contact_lab.engine} engine; export-fclib reads Rigid scenes")
    if not scene.frame_start <= args.frame <= scene.frame_end:
        return fail(
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
        return fail(str(exc))
    title = f"{os.path.basename(args.input)} {scene.name} frame {args.frame} substep {args.substep}"
    info = fclib.Info(title, f"Contact Lab rigid step, {mu.shape[0]} contacts, {scene_export.fps:g} fps, "
                             f"{scene_export.substeps} substeps, solver {scene_export.solver}", "")  # fmt: skip
    fclib.write_local(args.output, fclib.LocalProblem(W, q, mu, info=info), fclib.Solution(u=W @ r + q, r=r))
    print(json.dumps({"contacts": int(mu.shape[0]), "frame": args.frame, "output": args.output}), flush=True)
    return EXIT_OK
