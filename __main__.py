"""Headless bakes with the ``bpy`` module: ``python -m contact_lab bake IN.blend [more.blend ...] [options]``.

One input without ``--jobs``/``--scheduler`` is baked in this process (:func:`bake_file`; ``-o`` names the output
file). Several inputs, ``--jobs N`` or ``--scheduler ADDRESS`` make a batch (``addon/batch.py``): each file is
baked by its own child process, locally or on a Dask cluster, and ``-o`` names an output folder.

Exit codes: 0 success, 1 bake error (invalid scene, divergence, unreadable file; in a batch: any file failed),
2 usage error, 130 batch interrupted (Ctrl-C). A JSON report (``--report``) is written in every case where the
arguments could be parsed; a batch writes one per file and ``summary.json`` into ``--report-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

EXIT_OK = 0
EXIT_BAKE_ERROR = 1
EXIT_USAGE = 2


def _frame_range(text: str) -> tuple[int, int]:
    try:
        start, _, end = text.partition("-")
        start, end = int(start), int(end)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A-B (e.g. 1-250), got {text!r}") from None
    if end < start:
        raise argparse.ArgumentTypeError(f"the range {text!r} ends before it starts: expected A-B with A <= B")
    return start, end


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a number greater than 0, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m contact_lab", description="Contact Lab headless tools")
    commands = parser.add_subparsers(dest="command", required=True)
    bake = commands.add_parser(
        "bake",
        help="bake .blend files: keyframes, shape keys or PC2 caches",
        description="Bake one .blend file in this process, or several (or with --jobs/--scheduler) each in its own "
        "process. Exit codes: 0 all baked, 1 a bake failed, 2 usage error, 130 interrupted.",
    )
    bake.add_argument("input", nargs="+", help="the .blend file(s) to bake")
    bake.add_argument(
        "-o",
        "--output",
        help="one file: where to save it; a batch: the output folder (each file keeps its name). "
        "Default: overwrite the input(s)",
    )
    bake.add_argument("--frames", type=_frame_range, metavar="A-B", help="frame range (default: the scene's)")
    bake.add_argument("--scene", help="scene name (default: the file's active scene)")
    bake.add_argument("--report", help="one file: write its JSON report here")
    bake.add_argument("--allow-outside-paths", action="store_true", help="allow PC2 caches outside the .blend's folder")
    batch = bake.add_argument_group("batch bakes (each file in its own process)")
    batch.add_argument(
        "-j", "--jobs", type=_positive(int), metavar="N", help="bake N files at a time on this machine (default 1)"
    )
    batch.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="bake on a Dask cluster (tcp://host:port), one task per file; needs the 'distributed' package and "
        "the same paths on every worker",
    )
    batch.add_argument(
        "--report-dir",
        metavar="DIR",
        help="write <name>.report.json and <name>.log per file and summary.json here",
    )
    batch.add_argument(
        "--timeout", type=_positive(float), metavar="SECONDS", help="kill a file's bake after this long (default: none)"
    )
    return parser


def _write_report(path: str | None, report: dict) -> None:
    if not path:
        return
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2)


def bake_file(args) -> tuple[int, dict]:
    """Open, bake and save one file; returns ``(exit code, report)``."""
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    report: dict = {"status": "FAILED", "input": os.path.abspath(args.input), "error": None}
    output = os.path.abspath(args.output or args.input)
    report["output"] = output
    if not os.path.isfile(args.input):
        report["error"] = f"input file not found: {args.input}"
        return EXIT_USAGE, report

    import bpy

    from . import register
    from .addon import bake

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
        job = bake.start_bake(scene, frame_start=start, frame_end=end)
        job.run(progress)
        bake_report = job.finish()
    except bake.BakeError as exc:
        report["error"] = str(exc)
        if job is not None:  # failed during the simulation: keep what is known about it
            report.update({k: v for k, v in job.report("FAILED", error=str(exc)).items() if k != "status"})
            report["per_frame"] = bake.per_frame_stats(job)
        report["timings"] = {**report.get("timings", {}), **timings, "total": time.perf_counter() - t_start}
        return EXIT_BAKE_ERROR, report
    timings["bake"] = time.perf_counter() - t0
    report.update(bake_report)
    report["per_frame"] = bake.per_frame_stats(job)

    t0 = time.perf_counter()
    bpy.ops.wm.save_as_mainfile(filepath=output)
    timings["save"] = time.perf_counter() - t0
    report["timings"] = {**bake_report["timings"], **timings, "total": time.perf_counter() - t_start}
    report["status"] = "FINISHED"
    report["error"] = None
    return EXIT_OK, report


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0) if exc.code in (0, None) else EXIT_USAGE
    from .addon import batch  # no bpy: a batch process only starts children

    try:
        if batch.is_batch(args):
            return batch.main(args, argv)
        batch.check_single(args)
    except batch.UsageError as exc:
        print(f"[contact_lab] error: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    args.input = args.input[0]
    code, report = bake_file(args)
    _write_report(args.report, report)
    if code == EXIT_OK:
        print(f"[contact_lab] baked {report['input']} -> {report['output']}", flush=True)
    else:
        print(f"[contact_lab] error: {report['error']}", file=sys.stderr, flush=True)
    return code


def _exit(code: int) -> None:
    bpy = sys.modules.get("bpy")
    if bpy is not None and tuple(bpy.app.version) < (4, 3, 0):
        # bpy 4.2 (the module build) segfaults during interpreter teardown once a Panel class was registered,
        # even after unregistering it; everything is written and flushed by now, so skip the teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    _exit(main())
