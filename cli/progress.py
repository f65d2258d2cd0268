"""Terminal progress of a batch bake: a bar per running file and an overall bar, or plain lines for logs.

On a terminal (stdout is a TTY) the board redraws itself in place: finished files scroll up as one line each,
below them one line per running file (``frame n/N`` from the child's ``[contact_lab] frame n/N`` lines) and an
overall line. Anywhere else (CI logs, ``| tee``, a farm's job log) it prints plain lines instead: a start line,
a line each tenth of a file's frames, and a line when it ends. Thread-safe: children's reader threads and a
Dask event handler report, the main thread draws (:meth:`ProgressBoard.refresh`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
import time

FRAME_LINE = re.compile(r"\[contact_lab\] frame (\d+)/(\d+)")
"""The line the single-file bake prints after every frame (:func:`.single.bake_file`): frames done, frame count."""

QUEUED, RUNNING, DONE = "queued", "running", "done"

OVERALL = "all files"
"""Name of the overall line."""

NAME_WIDTH = 28
"""Widest file name column; longer names keep their end (``...shots/sh010.blend``)."""


def is_live(stream) -> bool:
    """True when ``stream`` is a terminal that understands cursor movement (bars); False means plain lines."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    if not tty or os.environ.get("TERM", "") == "dumb":
        return False
    return os.name != "nt" or "WT_SESSION" in os.environ  # the classic Windows console shows escapes as text


def bar(fraction: float, width: int) -> str:
    """``[#####-----]`` with ``width`` cells between the brackets, ``fraction`` in [0, 1] filled (rounded down)."""
    filled = int(min(max(fraction, 0.0), 1.0) * width)  # full only when done
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def clock(seconds: float) -> str:
    """Elapsed time: ``42 s``, ``3:05``, ``1:02:03``."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}:{s % 60:02d}"
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def fit(label: str, width: int) -> str:
    """``label`` padded or shortened from the left to exactly ``width`` characters."""
    return label.ljust(width) if len(label) <= width else "..." + label[-(width - 3) :]


class ProgressBoard:
    """Progress of every file of a batch.

    Args:
        labels: file names as shown, in task order (index = task index).
        stream: where to draw (default: stdout).
        live: bars redrawn in place (True) or plain lines (False); default: :func:`is_live` of ``stream``.
        size: (columns, rows) of the terminal; default: asked from the terminal at each redraw.
        interval: seconds between two redraws of the bars (plain lines are never held back).
    """

    def __init__(self, labels, stream=None, *, live: bool | None = None, size=None, interval: float = 0.1):
        self.labels = list(labels)
        self.stream = stream if stream is not None else sys.stdout
        self.live = is_live(self.stream) if live is None else live
        self.size = size
        self.interval = interval
        self._lock = threading.Lock()
        n = len(self.labels)
        self._status = [QUEUED] * n
        self._frames = [(0, 0)] * n
        self._t_start = [0.0] * n
        self._failed = 0
        self._events: list[str] = []  # permanent lines not yet printed
        self._drawn = 0  # lines of the live area on screen
        self._last_draw = 0.0
        self._t0 = time.monotonic()
        self._name_width = min(NAME_WIDTH, max([len(OVERALL), *(len(x) for x in self.labels)]))

    # ---- reports (any thread) ----
    def started(self, index: int, where: str | None = None) -> None:
        """File ``index`` is being baked (``where``: the worker, on a cluster)."""
        with self._lock:
            if self._status[index] != QUEUED:
                return
            self._status[index] = RUNNING
            self._t_start[index] = time.monotonic()
            if not self.live:
                self._events.append(f"[contact_lab] {self.labels[index]}: started" + (f" on {where}" if where else ""))

    def line(self, index: int, text: str) -> None:
        """A line printed by the child baking file ``index``; its ``frame n/N`` lines move the bar."""
        m = FRAME_LINE.search(text)
        if m:
            self.progress(index, int(m.group(1)), int(m.group(2)))

    def progress(self, index: int, done: int, total: int) -> None:
        """File ``index`` finished frame ``done`` of ``total``."""
        with self._lock:
            if self._status[index] == QUEUED:  # a progress event may overtake the start event
                self._status[index] = RUNNING
                self._t_start[index] = time.monotonic()
            old_done, _ = self._frames[index]
            self._frames[index] = (done, total)
            if not self.live and total > 0 and (done * 10 // total != old_done * 10 // total or done == total):
                self._events.append(f"[contact_lab] {self.labels[index]}: frame {done}/{total}")

    def finished(self, index: int, result: dict) -> None:
        """File ``index`` ended with ``result`` (status, error, seconds, frames: see ``batch.run_child``)."""
        with self._lock:
            self._status[index] = DONE
            ok = result["status"] == "FINISHED"
            self._failed += not ok
            done_count = self._status.count(DONE)
            text = f"[contact_lab] {self.labels[index]}: {result['status']} in {result['seconds']:.1f} s"
            if ok and result.get("frames"):
                text += f", {result['frames']} frames"
            text += f" ({done_count}/{len(self.labels)} files done)"
            if not ok and result.get("error"):
                text += f": {result['error']}"
            self._events.append(text)

    # ---- drawing (main thread) ----
    def refresh(self, force: bool = False) -> None:
        """Print what happened since the last call; redraw the bars at most every ``interval`` seconds."""
        now = time.monotonic()
        with self._lock:
            events, self._events = self._events, []
            if not self.live:
                out = "".join(f"{e}\n" for e in events)
            elif events or force or now - self._last_draw >= self.interval:
                self._last_draw = now
                board = self.lines(now)
                erase = f"\x1b[{self._drawn}F\x1b[J" if self._drawn else ""
                out = erase + "".join(f"{e}\n" for e in events) + "".join(f"{b}\n" for b in board)
                self._drawn = len(board)
            else:
                out = ""
        if out:
            self.stream.write(out)
            self.stream.flush()

    def close(self) -> None:
        """Print the last events and remove the bars (the summary table follows)."""
        self.refresh(force=True)
        if self.live and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self.stream.flush()
            self._drawn = 0

    def lines(self, now: float | None = None) -> list[str]:
        """The live area: a line per running file, then the overall line (call with the lock held or idle).

        Every bar has the same width: the widest (at most 40 cells) that lets every line fit the terminal.
        """
        now = time.monotonic() if now is None else now
        columns, rows = self.size or shutil.get_terminal_size((100, 24))
        running = [i for i, s in enumerate(self._status) if s == RUNNING]
        shown = running[: max(1, rows - 3)]
        rows_out = []  # (name, fraction or None, text after the bar)
        for i in shown:
            done, total = self._frames[i]
            after = f"{100 * done // total:3d}%  frame {done}/{total}" if total else "  -   starting"
            rows_out.append(
                (self.labels[i], done / total if total else 0.0, f"{after}  {clock(now - self._t_start[i])}")
            )
        n = len(self.labels)
        finished = self._status.count(DONE)
        partial = sum(self._frames[i][0] / self._frames[i][1] for i in running if self._frames[i][1])
        fraction = (finished + partial) / n if n else 1.0
        state = f"{finished}/{n} done" + (f" ({self._failed} failed)" if self._failed else "")
        state += f", {len(running)} running, {self._status.count(QUEUED)} queued"
        rows_out.append((OVERALL, fraction, f"{int(100 * fraction):3d}%  {state}  {clock(now - self._t0)}"))

        name_w = self._name_width
        bar_w = max(10, min(40, min(columns - 1 - (2 + name_w + 1 + 2 + 1) - len(r[2]) for r in rows_out)))
        out = [f"  {fit(name, name_w)} {bar(f, bar_w)} {after}" for name, f, after in rows_out]
        if len(running) > len(shown):
            out.insert(-1, f"  ... and {len(running) - len(shown)} more running")
        return [self._clip(x) for x in out]

    def _clip(self, text: str) -> str:
        # a line wider than the terminal wraps, and the cursor-up count of the next redraw would be wrong
        columns = (self.size or shutil.get_terminal_size((100, 24)))[0]
        return text if len(text) < columns else text[: max(1, columns - 4)] + "..."
