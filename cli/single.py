"""The single-file bake of the command line, in this process: open the .blend with ``bpy``, bake it with the add-on's
driver (:func:`..addon.bake.driver.start_bake`), save it and report (:func:`bake_file`).

The only module of the command line that imports ``bpy`` (and registers the add-on, as Blender does); the root
``__main__.py`` loads it for a single-file bake only, so a batch process never does.
"""

from __future__ import annotations

import os
import time
import traceback

from .command import EXIT_BAKE_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, output_problem, report_path_problem

ROOT_PACKAGE = (__package__ or "").removesuffix(".cli")
"""The package this copy runs as: ``contact_lab``, or ``bl_ext.<repo>.<id>`` for an installed extension."""


def bake_file(args) -> tuple[int, dict]:
    """Open, bake and save one file; returns ``(exit code, report)`` and never raises (Ctrl-C: a CANCELLED report).

    Arguments are checked first (input, output folder, report path: exit code 2, nothing loaded); any exception
    after that is a FAILED report naming its type (exit code 1), with the traceback under ``"traceback"``.
    """
    t_start = time.perf_counter()
    report: dict = {"status": "FAILED", "input": os.path.abspath(args.input), "error": None}
    output = os.path.abspath(args.output or args.input)
    report["output"] = output
    try:
        return _bake_file(args, report, output, t_start)
    except KeyboardInterrupt:  # Ctrl-C: the simulation stopped or the write rolled back; nothing was saved
        report["status"] = "CANCELLED"
        report["error"] = "interrupted (Ctrl-C); nothing was saved"
        report["timings"] = {**report.get("timings", {}), "total": time.perf_counter() - t_start}
        return EXIT_INTERRUPTED, report
    except Exception as exc:  # anything unexpected: a report and a message, not a raw traceback
        text = str(exc).strip()
        report["status"] = "FAILED"
        report["error"] = f"unexpected error: {type(exc).__name__}" + (f": {text}" if text else "")
        report["traceback"] = traceback.format_exc()
        report["timings"] = {**report.get("timings", {}), "total": time.perf_counter() - t_start}
        return EXIT_BAKE_ERROR, report


def _bake_file(args, report: dict, output: str, t_start: float) -> tuple[int, dict]:
    problem = report_path_problem(getattr(args, "report", None))
    if problem:
        report["error"] = problem
        return EXIT_USAGE, report
    if os.path.isdir(args.input):
        report["error"] = f"the input {args.input} is a directory, not a .blend file"
        return EXIT_USAGE, report
    if not os.path.isfile(args.input):
        report["error"] = f"input file not found: {args.input}"
        return EXIT_USAGE, report
    problem = output_problem(output)
    if problem:
        report["error"] = problem
        return EXIT_USAGE, report

    twin = _installed_twin()
    if twin is not None:  # an installed extension: bake as the add-on does, sharing its compiled kernels
        return twin._bake_file(args, report, output, t_start)

    import bpy

    from .. import register
    from ..addon.warmup import jitcache

    jitcache.configure()  # before the core is imported: an installed extension's kernels live in its user folder
    from ..addon.bake import driver as bake

    report["package"] = ROOT_PACKAGE  # which copy baked (an installed extension bakes as bl_ext.<repo>.<id>)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    register()
    try:
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(args.input), load_ui=False)
    except RuntimeError as exc:
        report["error"] = f"cannot open {args.input}: {exc}"
        return EXIT_BAKE_ERROR, report
    timings["load"] = time.perf_counter() - t0

    scene = bpy.data.scenes.get(args.scene) if args.scene else bpy.context.scene
    if scene is None:
        report["error"] = f"no scene named {args.scene!r} in {args.input}"
        return EXIT_USAGE, report
    start, end = args.frames if args.frames else (None, None)

    def progress(done, total):
        print(f"[contact_lab] frame {done}/{total}", flush=True)

    t0 = time.perf_counter()
    job = None
    try:
        job = bake.start_bake(
            scene,
            frame_start=start,
            frame_end=end,
            allow_outside_paths=getattr(args, "allow_outside_paths", False),
            trusted_folders=[os.path.dirname(output)] if args.output else [],
            owner=output,  # the saved file owns the caches: a '//' Cache Folder is relative to it
        )
        run = bake.JobRun(job, progress)
        run.simulate()
        bake_report = run.commit()
    except KeyboardInterrupt:
        if job is not None:  # what is known about the bake, for the report
            known = job.report("CANCELLED", error=f"interrupted at frame {job.current_frame}")
            report.update({k: v for k, v in known.items() if k not in ("status", "error")})
        raise
    except bake.BakeError as exc:
        report["error"] = str(exc)
        if job is not None:  # failed during the simulation or the write: keep what is known about it
            report.update({k: v for k, v in job.report("FAILED", error=str(exc)).items() if k != "status"})
            report["per_frame"] = bake.per_frame_stats(job)
        report["timings"] = {**report.get("timings", {}), **timings, "total": time.perf_counter() - t_start}
        return EXIT_BAKE_ERROR, report
    timings["bake"] = time.perf_counter() - t0
    report.update(bake_report)
    report["status"] = "FAILED"  # until saved
    report["per_frame"] = bake.per_frame_stats(job)

    t0 = time.perf_counter()
    try:
        bpy.ops.wm.save_as_mainfile(filepath=output)
    except RuntimeError as exc:
        written = (
            f" (the cache files {', '.join(bake_report['files'])} were written)" if bake_report.get("files") else ""
        )
        report["error"] = f"cannot save the baked file {output}: {exc}{written}"
        return EXIT_BAKE_ERROR, report
    timings["save"] = time.perf_counter() - t0
    report["timings"] = {**bake_report["timings"], **timings, "total": time.perf_counter() - t_start}
    report["status"] = "FINISHED"
    report["error"] = None
    return EXIT_OK, report


def _installed_twin():
    """This module imported under the add-on's own package name, ``bl_ext.<repo>.<id>.cli.single``, when this copy
    is an extension installed in one of Blender's extension repositories; None otherwise (a development checkout,
    or already under that name).

    The CLI run from an installed extension's folder then reads and writes the add-on's kernel cache: numba's cache
    entries record their module's name, so they can only be shared under the same name (``addon/warmup/jitcache.py``).
    """
    if (__package__ or "").startswith("bl_ext."):
        return None
    import importlib

    import bpy

    here = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the package folder
    # fake-bpy-module declares Context's members as methods: the checker cannot see Preferences here
    for repo in bpy.context.preferences.extensions.repos:  # pyright: ignore[reportAttributeAccessIssue]
        directory = getattr(repo, "directory", "")
        if directory and os.path.realpath(directory) == os.path.dirname(here):
            try:
                return importlib.import_module(f"bl_ext.{repo.module}.{os.path.basename(here)}.cli.single")
            except ImportError:  # the repository is not set up in this process: bake under the plain name
                return None
    return None
