"""Batch bakes: several .blend files, each baked by its own child process, locally (``--jobs N``) or on a Dask cluster.

``python -m contact_lab bake a.blend b.blend ... [--jobs N | --scheduler tcp://host:port]`` lands here (the
single-file bake without ``--jobs``/``--scheduler`` stays in :func:`.single.bake_file`, in-process). Every file is baked
by ``python -m contact_lab bake FILE -o OUT --report REPORT ...`` in a fresh process, so a crash, a segfault or a
hang (with ``--timeout``) in one file cannot take the others down. This process never imports bpy: it plans,
starts children (:func:`run_child`), draws progress (:mod:`.progress`) and writes the summary.

Rules of the command line (anything ambiguous is refused with exit code 2 before anything is baked):

- ``-o`` is an output *folder*: each input is saved as ``<folder>/<file name>`` (created if missing). Without
  ``-o`` every input is overwritten in place, as the single-file bake does.
- ``--report-dir DIR``: one ``<name>.report.json`` (the single-file report) and ``<name>.log`` (the child's output)
  per input, and ``summary.json``. Without it nothing is written besides the .blend files; the table is printed.
- With ``-o`` or ``--report-dir`` file names must be unique (``a/shot.blend`` and ``b/shot.blend`` would collide).
- ``--report`` (one file's report) and a ``.blend`` or existing file as ``-o`` are refused; ``--jobs`` and
  ``--scheduler`` exclude each other (the workers' thread counts set a cluster's parallelism).

Exit codes: 0 every file baked, 1 at least one failed (FAILED, TIMEOUT, CRASHED), 2 usage error (nothing
baked), 130 interrupted (Ctrl-C, SIGTERM or SIGHUP: running children are stopped, the summary lists what finished).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import cast

from .children import (
    CANCELLED,
    CRASHED,
    FINISHED,
    ROOT_PACKAGE,
    TIMEOUT,
    BatchInterruptedError,
    FileTask,
    UsageError,
    cancelled_result,
    run_child,
)
from .progress import ProgressBoard

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


SCHEDULER_ADDRESS = re.compile(r"^(?:(?:tcp|tls|ws|wss|ucx)://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):\d{1,5}$")
"""A Dask scheduler address: ``[protocol://]host:port`` (IPv6 hosts in brackets)."""


# ---- the command line ------------------------------------------------------------------------------------------
def is_batch(args) -> bool:
    """True when the command asks for child processes: several inputs, ``--jobs`` or ``--scheduler``."""
    return len(args.input) > 1 or args.jobs is not None or args.scheduler is not None


def check_single(args) -> None:
    """Refuse the batch-only options on a single-file, in-process bake (see the module docstring)."""
    for option, value in (("--report-dir", args.report_dir), ("--timeout", args.timeout)):
        if value is not None:
            raise UsageError(
                f"{option} needs a batch bake (a child process per file): add --jobs 1 to bake {args.input[0]} "
                f"that way (-o then names an output folder), or leave {option} out"
            )


def _check_inputs(inputs: list[str]) -> None:
    """Every input exists, is a file and is given once; else :class:`UsageError` naming it."""
    missing = [p for p in inputs if not os.path.exists(p)]
    if missing:
        raise UsageError(f"input file{'s' if len(missing) > 1 else ''} not found: {', '.join(missing)}")
    folders = [p for p in inputs if os.path.isdir(p)]
    if folders:
        raise UsageError(
            f"{folders[0]} is a folder, not a .blend file: pass its files (e.g. {os.path.join(folders[0], '*.blend')})"
        )
    seen: dict[str, str] = {}
    for p in inputs:
        real = os.path.realpath(p)
        if real in seen:
            raise UsageError(f"{p} is given twice (also as {seen[real]}): list each file once")
        seen[real] = p


def _child_env(args) -> dict[str, str]:
    """Environment variables each local child gets: this machine's kernel cache and its share of the cores."""
    env = {}
    if args.scheduler is None:  # on a cluster each worker's own environment decides (its paths, its cores)
        if os.environ.get("NUMBA_CACHE_DIR"):  # children load the kernels this machine already compiled
            env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
        if not os.environ.get("NUMBA_NUM_THREADS"):
            # N bakes at once share the cores: the parallel kernels of one bake get its share, not all of them
            env["NUMBA_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // (args.jobs or 1)))
    return env


def plan(args) -> list[FileTask]:
    """Check the batch command line and return one :class:`FileTask` per input, in the order given.

    Raises:
        UsageError: missing or repeated inputs, folders as inputs, conflicting options, colliding file names.
    """
    if args.report:
        raise UsageError(
            "--report names one file's report; with several files use --report-dir DIR "
            "(a <name>.report.json and <name>.log per file, and summary.json)"
        )
    if args.jobs is not None and args.scheduler is not None:
        raise UsageError(
            "--jobs and --scheduler exclude each other: --jobs N bakes N files at a time on this machine; with "
            "--scheduler the cluster's workers decide (start them with `dask worker ADDRESS --nthreads N`)"
        )
    if args.scheduler is not None and not SCHEDULER_ADDRESS.match(args.scheduler):
        raise UsageError(
            f"--scheduler {args.scheduler}: expected the scheduler's address as `dask scheduler` prints it, "
            "e.g. tcp://192.168.1.20:8786 (host:port works too)"
        )
    _check_inputs(args.input)
    out_dir = os.path.abspath(args.output) if args.output else None
    if out_dir is not None and (os.path.isfile(out_dir) or out_dir.lower().endswith(".blend")):
        raise UsageError(
            f"-o {args.output}: with several files, --jobs or --scheduler, -o names the output folder, not a file; "
            "give a folder, or bake a single file without --jobs to name its output file"
        )
    report_dir = os.path.abspath(args.report_dir) if args.report_dir else None
    if report_dir is not None and os.path.exists(report_dir) and not os.path.isdir(report_dir):
        raise UsageError(f"--report-dir {args.report_dir} is a file: give a folder (it is created if missing)")
    if out_dir or report_dir:
        by_name: dict[str, str] = {}
        for p in args.input:
            name = Path(p).stem
            if name in by_name:
                where = "-o folder" if out_dir else "report folder"
                raise UsageError(
                    f"{by_name[name]} and {p} have the same name and would overwrite each other in the {where}: "
                    "rename one, or bake them in separate runs"
                )
            by_name[name] = p

    env = _child_env(args)
    tasks = []
    for index, p in enumerate(args.input):
        source = os.path.abspath(p)
        tasks.append(
            FileTask(
                index=index,
                label=p,
                input=source,
                output=os.path.join(out_dir, os.path.basename(source)) if out_dir else source,
                frames=args.frames,
                scene=args.scene,
                allow_outside_paths=bool(args.allow_outside_paths),
                timeout=args.timeout,
                env=tuple(sorted(env.items())),
            )
        )
    return tasks


# ---- many children on this machine -------------------------------------------------------------------------------
def run_local(tasks: list[FileTask], jobs: int, board: ProgressBoard, stop: threading.Event) -> list[dict]:
    """Bake ``tasks`` in child processes, ``jobs`` at a time; returns their results in task order.

    Ctrl-C (KeyboardInterrupt in this thread) sets ``stop``: running children are killed, queued files are
    not started; both come back CANCELLED, then :class:`BatchInterruptedError` carries all results.
    """

    def one(task: FileTask) -> dict:
        if stop.is_set():
            return cancelled_result(task)
        board.started(task.index)
        return run_child(task, on_line=lambda line: board.line(task.index, line), should_stop=stop.is_set)

    results: list[dict | None] = [None] * len(tasks)
    interrupted = False
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="contact_lab-batch") as pool:
        pending = {pool.submit(one, task): task for task in tasks}
        while pending:
            try:
                done, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for future in done:
                    task = pending[future]
                    result = future.result()
                    results[task.index] = result
                    del pending[future]
                    board.finished(task.index, result)
                board.refresh()
            except KeyboardInterrupt:  # the children stop within a poll; their results still come in
                interrupted = True
                stop.set()
    if interrupted:
        raise BatchInterruptedError(results)
    return cast("list[dict]", results)  # no None left: the loop ran until every task's future was done


# ---- summary -----------------------------------------------------------------------------------------------------
def summary_row(result: dict) -> dict:
    """What ``summary.json`` lists per file (the full report is in ``<name>.report.json``)."""
    keys = ("file", "output", "status", "error", "seconds", "frames", "frames_done", "returncode", "host", "worker")
    return {k: result.get(k) for k in keys} | {"started": result.get("started"), "ended": result.get("ended")}


def write_reports(report_dir: str, tasks: list[FileTask], results: list[dict], meta: dict) -> str:
    """``<name>.report.json`` and ``<name>.log`` per input and ``summary.json`` into ``report_dir``; its path."""
    os.makedirs(report_dir, exist_ok=True)
    for task, result in zip(tasks, results, strict=True):
        report = result["report"] or {
            "status": result["status"],
            "input": result["file"],
            "output": result["output"],
            "error": result["error"],
        }
        if result["status"] in (TIMEOUT, CRASHED, CANCELLED):  # the batch knows better than a partial report
            report = {**report, "status": result["status"], "error": result["error"]}
        _write_json(os.path.join(report_dir, f"{task.name}.report.json"), report)
        with open(os.path.join(report_dir, f"{task.name}.log"), "w", encoding="utf-8") as fh:
            fh.write(result["log"])
    path = os.path.join(report_dir, "summary.json")
    _write_json(path, {**meta, "files": [summary_row(r) for r in results]})
    return path


def _write_json(path: str, data: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
    os.replace(tmp, path)  # a reader never sees half a file


def summary_table(results: list[dict]) -> str:
    """The table printed at the end: file, status, frames, seconds, error (one line per file)."""
    rows = [
        (
            r["label"],
            r["status"],
            _frames_cell(r),
            f"{r['seconds']:.1f}",
            (r["error"] or "").replace("\n", " "),
        )
        for r in results
    ]
    head = ("file", "status", "frames", "seconds", "error")
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(4)]
    lines = []
    for row in [head, *rows]:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2]), row[3].rjust(widths[3])]
        lines.append("  ".join([*cells, row[4]]).rstrip())
    return "\n".join(lines)


def _frames_cell(result: dict) -> str:
    if result["status"] == FINISHED and result["frames"]:
        return str(result["frames"])
    return f"{result['frames_done']}/{result['frames']}" if result["frames"] else "-"


def counts(results: list[dict]) -> dict[str, int]:
    """How many files ended with each status."""
    out: dict[str, int] = {}
    for r in results:
        out[r["status"]] = out.get(r["status"], 0) + 1
    return out


# ---- entry point -------------------------------------------------------------------------------------------------
def _interrupt_on_termination() -> dict:
    """Make SIGTERM and SIGHUP stop the batch as Ctrl-C does; returns the handlers to restore.

    The children run in process groups of their own (so a kill reaches their own children): without this a batch
    killed by a farm's job manager or a closed terminal would leave its bakes running and writing files.
    """

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None:
                previous[signum] = signal.signal(signum, interrupt)
    return previous


def main(args, argv: list[str] | None = None) -> int:
    """Run a batch bake from parsed arguments (:func:`.command.build_parser`); returns the exit code."""
    tasks = plan(args)
    for option, folder in (("-o", args.output), ("--report-dir", args.report_dir)):
        try:
            if folder:
                os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create the folder {option} {folder}: {exc}") from None
    where = f"on the Dask cluster at {args.scheduler}" if args.scheduler else f"{args.jobs or 1} at a time"
    print(f"[contact_lab] baking {len(tasks)} file{'s' * (len(tasks) != 1)}, {where}", flush=True)
    board = ProgressBoard([t.label for t in tasks])
    stop = threading.Event()
    t0, started = time.monotonic(), time.time()
    interrupted = False
    previous_handlers = _interrupt_on_termination()
    try:
        if args.scheduler is not None:
            from . import cluster

            results = cluster.run_on_cluster(tasks, args.scheduler, board, stop)
        else:
            results = run_local(tasks, args.jobs or 1, board, stop)
    except BatchInterruptedError as exc:
        interrupted = True
        results = [r if r is not None else cancelled_result(t) for t, r in zip(tasks, exc.results, strict=True)]
    finally:
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
        board.close()

    meta = {
        "command": ["python", "-m", ROOT_PACKAGE, *(argv if argv is not None else sys.argv[1:])],
        "started": started,
        "seconds": round(time.monotonic() - t0, 3),
        "jobs": None if args.scheduler else (args.jobs or 1),
        "scheduler": args.scheduler,
        "counts": counts(results),
        "interrupted": interrupted,
    }
    print(summary_table(results), flush=True)
    ok = sum(r["status"] == FINISHED for r in results)
    line = f"[contact_lab] {ok} of {len(results)} file{'s' * (len(results) != 1)} baked"
    if ok < len(results):
        line += ", " + ", ".join(f"{n} {s}" for s, n in sorted(meta["counts"].items()) if s != FINISHED)
    line += f" in {meta['seconds']:.1f} s"
    if args.report_dir:
        line += f"; reports in {write_reports(os.path.abspath(args.report_dir), tasks, results, meta)}"
    print(line, flush=True)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if ok == len(results) else EXIT_FAILED
