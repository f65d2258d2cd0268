"""The command line's arguments and exit codes: ``python -m contact_lab bake IN.blend [more.blend ...] [options]``
(and ``solve-fclib``, ``export-fclib``: :mod:`.fclib_tools`, :mod:`.fclib_export`).

One input without ``--jobs``/``--scheduler`` is baked in this process (:func:`.single.bake_file`, handed to
:func:`main` by the root ``__main__.py``; ``-o`` names the output file). Several inputs, ``--jobs N`` or
``--scheduler ADDRESS`` make a batch (:mod:`.batch`): each file is baked by its own child process, locally or on a
Dask cluster, and ``-o`` names an output folder. This module never imports ``bpy``.

Exit codes:

- 0: baked and saved (a batch: every file).
- 1: the bake failed: invalid scene, a PC2 Cache Folder leading outside the .blend's folder (without
  ``--allow-outside-paths``), a diverged or failed simulation, a failed write (nothing was changed), an
  unreadable or unsavable .blend, or any unexpected error (its traceback is kept in the report under
  ``"traceback"``).
- 2: usage error, found before baking: bad arguments (e.g. ``--frames 10-1``), an input
  that is missing or a directory, an output whose folder does not exist, a ``--report`` path that cannot be
  written, an unknown ``--scene``.
- 130: interrupted (Ctrl-C; a batch also SIGTERM or SIGHUP); a write in progress was rolled back.

In a batch, 1 means at least one file failed (see ``summary.json``).

A JSON report (``--report``) is written in every case where the arguments could be parsed and the report's own
path is writable (checked first); a batch writes one per file and ``summary.json`` into ``--report-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

from . import batch, fclib_tools

EXIT_OK = 0
EXIT_BAKE_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


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
    bake.add_argument(
        "--allow-outside-paths",
        action="store_true",
        help="let the .blend write its PC2 caches outside its own folder and the output's folder",
    )
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
    fclib_tools.add_parser(commands)
    fclib_tools.add_export_parser(commands)
    return parser


def _write_report(path: str | None, report: dict) -> str | None:
    """Write ``report`` as JSON to ``path`` (if given); returns why it could not be written, or None."""
    if not path:
        return None
    try:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    except OSError as exc:
        return f"cannot write the report {path}: {exc.strerror or exc}"
    return None


def report_path_problem(path: str | None) -> str | None:
    """Why the JSON report cannot be written to ``path`` (checked before baking, creating nothing), or None."""
    if not path:
        return None
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if os.path.isdir(path):
        return f"the report path {path} is a directory: give a file name, e.g. {os.path.join(path, 'report.json')}"
    if not os.path.isdir(folder):
        return f"cannot write the report {path}: its folder {folder} does not exist"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return f"cannot write the report {path}: the file is not writable"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write the report {path}: its folder is not writable"
    return None


def output_problem(output: str) -> str | None:
    """Why the baked file cannot be saved to ``output`` (checked before baking), or None."""
    folder = os.path.dirname(output)
    if os.path.isdir(output):
        return f"the output {output} is a directory: give a .blend file name, e.g. {os.path.join(output, 'x.blend')}"
    if not os.path.isdir(folder):
        return f"the output folder {folder} does not exist: create it first or choose another -o"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the output folder {folder} is not writable: choose another -o"
    return None


def main(
    argv: list[str] | None,
    bake_file: Callable[[argparse.Namespace], tuple[int, dict]],
    export_fclib: Callable[[argparse.Namespace], int] | None = None,
) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    ``bake_file(args)`` bakes one file in this process and returns ``(exit code, report)``
    (:func:`.single.bake_file`), and ``export_fclib(args)`` runs ``export-fclib`` (:func:`.fclib_export.export`):
    passed in, so that this side never imports what needs ``bpy``.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0) if exc.code in (0, None) else EXIT_USAGE
    if args.command == "solve-fclib":
        return fclib_tools.solve(args)
    if args.command == "export-fclib":
        if export_fclib is None:
            return fclib_tools.fail("export-fclib runs from `python -m contact_lab` (it needs bpy)")
        return export_fclib(args)
    try:
        if batch.is_batch(args):
            return batch.main(args, argv)
        batch.check_single(args)
    except batch.UsageError as exc:
        print(f"[contact_lab] error: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    args.input = args.input[0]
    problem = report_path_problem(args.report)
    if problem:  # before anything is loaded: a report that cannot be written would hide the outcome
        print(f"[contact_lab] error: {problem}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    try:
        code, report = bake_file(args)
    except KeyboardInterrupt:
        print("[contact_lab] interrupted; nothing was saved", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    problem = _write_report(args.report, report)
    if code == EXIT_INTERRUPTED:
        print("[contact_lab] interrupted; nothing was saved", file=sys.stderr, flush=True)
        return code
    if code == EXIT_OK:
        print(f"[contact_lab] baked {report['input']} -> {report['output']}", flush=True)
    else:
        print(f"[contact_lab] error: {report['error']}", file=sys.stderr, flush=True)
    if "traceback" in report:
        where = f"is in {args.report}" if args.report and not problem else "is kept when you pass --report r.json"
        print(f"[contact_lab] hint: an internal error; its traceback {where}", file=sys.stderr, flush=True)
    if problem:
        print(f"[contact_lab] error: {problem}", file=sys.stderr, flush=True)
        code = code or EXIT_BAKE_ERROR
    return code


def exit_process(code: int) -> None:
    """Exit with ``code`` (skipping the interpreter's teardown on bpy 4.2, which crashes there)."""
    bpy = sys.modules.get("bpy")
    if bpy is not None and tuple(bpy.app.version) < (4, 3, 0):
        # bpy 4.2 (the module build) segfaults during interpreter teardown once a Panel class was registered,
        # even after unregistering it; everything is written and flushed by now, so skip the teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
