"""One file of a batch, baked by a child process: the task (:class:`FileTask`), the child's command line and
environment, running it with a timeout and reading its report (:func:`run_child`), and the per-file statuses.

Shared by the local pool (:mod:`.batch`) and the Dask workers (:mod:`.cluster`), which import it; it imports
neither (a leaf of the command line). Never imports bpy: the child does.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .progress import FRAME_LINE

FINISHED, FAILED, TIMEOUT, CRASHED, CANCELLED = "FINISHED", "FAILED", "TIMEOUT", "CRASHED", "CANCELLED"
"""Per-file statuses: the child's own (FINISHED, FAILED) and the batch's (killed on timeout, died, Ctrl-C)."""

LOG_LIMIT = 1_000_000
"""Characters of a child's output kept (the end is kept): a log file per input, sent back from Dask workers."""
ROOT_PACKAGE = (__package__ or "").rpartition(".")[0] or "contact_lab"
"""The package the children run with ``-m`` (``contact_lab``)."""


class UsageError(Exception):
    """A command line that cannot run as given: exit code 2, nothing was baked. The message says what to change."""


@dataclasses.dataclass(frozen=True)
class FileTask:
    """One input of a batch: everything a child process (local or on a Dask worker) needs to bake it.

    Paths are absolute; on a cluster they must mean the same file on every worker (a shared filesystem).
    """

    index: int
    label: str
    """The input as given on the command line (shown in the progress lines and the table)."""
    input: str
    output: str
    frames: tuple[int, int] | None = None
    scene: str | None = None
    allow_outside_paths: bool = False
    timeout: float | None = None
    """Seconds before the child is killed (None: no limit)."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables set for the child on top of the runner's own (NUMBA_CACHE_DIR, NUMBA_NUM_THREADS)."""

    @property
    def name(self) -> str:
        """File name without its extension: names this input's report and log in ``--report-dir``."""
        return Path(self.input).stem


def child_command(task: FileTask, report_path: str) -> list[str]:
    """The single-file bake of ``task`` with this Python: ``python -m contact_lab bake IN -o OUT --report R ...``."""
    cmd = [sys.executable, "-m", ROOT_PACKAGE, "bake", task.input, "-o", task.output, "--report", report_path]
    if task.frames is not None:
        cmd += ["--frames", f"{task.frames[0]}-{task.frames[1]}"]
    if task.scene is not None:
        cmd += ["--scene", task.scene]
    if task.allow_outside_paths:
        cmd.append("--allow-outside-paths")
    return cmd


def child_env(task: FileTask) -> dict[str, str]:
    """This process's environment plus the task's, unbuffered, with this copy of the package importable first."""
    env = dict(os.environ)
    env.update(dict(task.env))
    env["PYTHONUNBUFFERED"] = "1"
    package_dir = Path(__file__).resolve().parent.parent
    if package_dir.name == ROOT_PACKAGE:  # a plain checkout or install: the child imports this very copy
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(package_dir.parent), env.get("PYTHONPATH")) if p)
    return env


# ---- one child process -------------------------------------------------------------------------------------------
def run_child(
    task: FileTask,
    *,
    on_line: Callable[[str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    poll: float = 0.1,
) -> dict:
    """Bake ``task`` in a child process and wait for it; never raises for anything the child does.

    Args:
        task: the file to bake.
        on_line: called from a reader thread with every line the child prints (progress).
        should_stop: polled every ``poll`` seconds; True kills the child (status CANCELLED).
        poll: seconds between checks of the timeout and ``should_stop``.

    Returns:
        A JSON-compatible result: ``index``, ``file``, ``output``, ``status``, ``error``, ``seconds``, ``frames``
        (frame count of the bake, None when unknown), ``frames_done``, ``returncode``, ``host``, ``started`` and
        ``ended`` (epoch seconds), ``report`` (the child's report, None if it wrote none) and ``log`` (its output).
    """
    started, t0 = time.time(), time.monotonic()
    lines: list[str] = []
    progress = [0, 0]  # frames done, frame count: from the child's progress lines

    def pump(stream):
        for line in stream:
            lines.append(line)
            m = FRAME_LINE.search(line)
            if m:
                progress[:] = int(m.group(1)), int(m.group(2))
            if on_line is not None:
                on_line(line)

    stop_reason = None
    with tempfile.TemporaryDirectory(prefix="contact_lab_batch_") as tmp:
        report_path = os.path.join(tmp, "report.json")
        try:
            proc = subprocess.Popen(
                child_command(task, report_path),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=child_env(task),
                text=True,
                encoding="utf-8",
                errors="replace",
                start_new_session=os.name == "posix",  # its own process group: a kill reaches all it started
            )
        except OSError as exc:
            return _result(task, None, None, CRASHED, f"cannot start the bake process: {exc}", lines, progress, t0)
        reader = threading.Thread(target=pump, args=(proc.stdout,), daemon=True)
        reader.start()
        while True:
            try:
                returncode = proc.wait(timeout=poll)
                break
            except subprocess.TimeoutExpired:
                pass
            if task.timeout is not None and time.monotonic() - t0 > task.timeout:
                stop_reason = TIMEOUT
            elif should_stop is not None and should_stop():
                stop_reason = CANCELLED
            if stop_reason is not None:
                _kill(proc)
                returncode = proc.wait()
                break
        reader.join(timeout=5.0)
        report = _read_report(report_path)
    result = _classify(task, returncode, report, stop_reason, progress)
    return _result(task, returncode, report, *result, lines, progress, t0, started)


def _kill(proc: subprocess.Popen) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):  # it ended on its own meanwhile
        pass


def _read_report(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            report = json.load(fh)
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def _exit_text(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name} (signal {-returncode})"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _classify(task: FileTask, returncode: int, report: dict | None, stop_reason, progress) -> tuple[str, str | None]:
    """(status, error) of a finished child."""
    at = f" at frame {progress[0]}/{progress[1]}" if progress[1] else ""
    status = report.get("status") if report else None
    if status == FINISHED and stop_reason is not None:  # saved and reported just before the kill: it is done
        return FINISHED, None
    if stop_reason == TIMEOUT:
        return TIMEOUT, f"timed out after {task.timeout:g} s{at}; the bake process was killed"
    if stop_reason == CANCELLED:
        return CANCELLED, f"cancelled{at}; the bake process was killed"
    if status == FINISHED and returncode == 0:
        return FINISHED, None
    if status == FAILED and report:
        return FAILED, str(report.get("error") or f"the bake failed (the process {_exit_text(returncode)})")
    return CRASHED, f"the bake process {_exit_text(returncode)}{at} without a report"


def _result(task, returncode, report, status, error, lines, progress, t0, started=None) -> dict:
    log = "".join(lines)[-LOG_LIMIT:]
    if status == CRASHED and lines:
        tail = [ln.strip() for ln in lines[-40:] if ln.strip()]
        last = next((ln for ln in reversed(tail) if "Error" in ln or "error" in ln), tail[-1] if tail else "")
        error = f"{error}; last output: {last}" if last else error
    frames = (report or {}).get("frames") or {}
    return {
        "index": task.index,
        "file": task.input,
        "label": task.label,
        "output": task.output,
        "status": status,
        "error": error,
        "seconds": round(time.monotonic() - t0, 3),
        "frames": frames.get("count", progress[1] or None) if isinstance(frames, dict) else None,
        "frames_done": progress[0],
        "returncode": returncode,
        "host": socket.gethostname(),
        "started": started if started is not None else time.time() - (time.monotonic() - t0),
        "ended": time.time(),
        "report": report,
        "log": log,
    }


class BatchInterruptedError(Exception):
    """Ctrl-C during a batch: carries the results known so far (None where a file never started)."""

    def __init__(self, results: list[dict | None]):
        super().__init__("interrupted")
        self.results = results


def cancelled_result(task: FileTask) -> dict:
    """The result of a file that was never started (the batch was interrupted first)."""
    return {
        "index": task.index,
        "file": task.input,
        "label": task.label,
        "output": task.output,
        "status": CANCELLED,
        "error": "not started: the batch was interrupted",
        "seconds": 0.0,
        "frames": None,
        "frames_done": 0,
        "returncode": None,
        "host": None,
        "started": None,
        "ended": None,
        "report": None,
        "log": "",
    }
