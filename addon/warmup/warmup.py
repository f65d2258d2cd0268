"""Compile the solvers before the first bake: a low-priority background process fills the kernel cache.

The first bake after installing or updating Contact Lab would otherwise spend minutes compiling numba kernels.
Once the extension is enabled in Blender's UI, :func:`schedule` starts a second process (Blender itself in
background mode, or the Python running the ``bpy`` module) at the lowest priority. It imports the extension under
the same package name, so it writes the very cache entries the add-on reads (:mod:`.jitcache`), and bakes a
set of tiny scenes covering every engine (:mod:`.scenes`). Its progress lines are read by a thread here and
shown in the Bake panel (:func:`status`); a stamp in the cache directory (:data:`STAMP`) records that it ran for
this version of the core, so it runs once per version. Nothing in the user's file is touched.

A bake started while the warm-up runs simply compiles what it needs itself (numba writes its cache atomically).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import jitcache

STAMP = "warm-up.json"
"""File in the cache directory written by the warm-up process when it has run (what, when, how long)."""

PREFIX = "[contact_lab warm-up]"
"""Progress lines of the child start with this; everything else it prints is Blender's."""

START_DELAY = 2.0
"""Seconds after enabling before the warm-up starts (Blender finishes starting up first)."""

CHILD = Path(__file__).with_name("child.py")


@dataclass
class WarmupStatus:
    """What the panel shows of the warm-up (read on the main thread; written by the reader thread)."""

    state: str = "idle"
    """'idle', 'running', 'done' or 'failed'."""
    done: int = 0
    total: int = 0
    label: str = ""
    """The scene being baked."""
    started: float = 0.0
    seconds: float = 0.0
    compiled: int = 0
    """Kernels the warm-up compiled (0: the cache was already warm)."""
    errors: list[str] = field(default_factory=list)

    def text(self) -> str:
        if self.state == "running":
            step = f" ({self.done}/{self.total})" if self.total else ""
            return f"Compiling the solvers in the background{step}: the first bake will start at once"
        if self.state == "failed":
            return f"Compiling the solvers failed: {self.errors[0] if self.errors else 'see the console'}"
        if self.state == "done":
            return f"Solvers compiled ({self.compiled} kernels in {self.seconds:.0f} s)"
        return ""


_status = WarmupStatus()
_process: subprocess.Popen | None = None
_stamps: dict[str, dict] = {}
"""Stamps read so far by cache directory (the panel asks on every redraw)."""


def status() -> WarmupStatus:
    return _status


def running() -> bool:
    return _process is not None and _process.poll() is None


def stamp(cache_dir: str | None = None) -> dict | None:
    """The stamp of the warm-up that ran for ``cache_dir`` (default: the configured cache), or None."""
    cache_dir = cache_dir or jitcache.configured_dir()
    if not cache_dir:
        return None
    if cache_dir in _stamps:
        return _stamps[cache_dir]
    path = os.path.join(cache_dir, STAMP)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if data.get("python") != _python():
        return None
    _stamps[cache_dir] = data
    return data


def command(cache_dir: str) -> tuple[list[str], dict]:
    """The child's command line and environment: Blender in background mode (or this Python with the ``bpy``
    module), running :data:`CHILD` on the extension imported under this process's package name."""
    import bpy
    import numba

    package = jitcache.root_package()
    extension_dir = Path(__file__).resolve().parents[2]
    numba_site = str(Path(numba.__file__).resolve().parent.parent)
    args = ["--package", package, "--repo-dir", str(extension_dir.parent), "--path", numba_site]
    if bpy.app.binary_path:  # a Blender binary: its own Python cannot import bpy, Blender itself runs the script
        cmd = [bpy.app.binary_path, "-b", "--factory-startup", "--python-exit-code", "1", "--python", str(CHILD)]
        cmd += ["--", *args]
    else:  # the bpy module: this interpreter can import it
        cmd = [sys.executable, str(CHILD), *args]
    env = dict(os.environ)
    env[jitcache.CACHE_ENV] = cache_dir
    return cmd, env


def start(cache_dir: str | None = None, *, force: bool = False) -> bool:
    """Start the warm-up process (not twice at once); True when started.

    Args:
        cache_dir: where the kernels go (default: the cache :mod:`.jitcache` configured; without one, e.g. in a
            development checkout, nothing is started).
        force: run even when the stamp says it ran for this version.
    """
    global _process, _status
    cache_dir = cache_dir or jitcache.configured_dir()
    if not cache_dir or running() or (not force and stamp(cache_dir) is not None):
        return False
    cmd, env = command(cache_dir)
    _stamps.pop(cache_dir, None)  # a forced run writes a new one
    _status = WarmupStatus(state="running", started=time.perf_counter())
    _process = subprocess.Popen(
        cmd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        **_low_priority(),
    )
    threading.Thread(target=_follow, args=(_process, _status), name="contact_lab warm-up", daemon=True).start()
    return True


def stop() -> None:
    """End a running or scheduled warm-up (the extension is disabled or Blender quits); what it compiled stays
    cached."""
    global _process
    import bpy

    timers = getattr(bpy.app, "timers", None)  # (the mocked bpy of the add-on tests has none)
    if timers is not None and timers.is_registered(_start_later):
        timers.unregister(_start_later)
    process = _process
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
    _process = None


def wait(timeout: float | None = None) -> WarmupStatus:
    """Block until a running warm-up has ended (scripts and tests); returns its status."""
    process = _process
    if process is not None:
        process.wait(timeout)
        deadline = time.perf_counter() + 10.0
        while _status.state == "running" and time.perf_counter() < deadline:  # the reader thread's last lines
            time.sleep(0.01)
    return _status


def schedule() -> bool:
    """Start the warm-up shortly after the extension is enabled in Blender's UI, when this version has not run it
    yet (not in background mode: a batch bake compiles what it needs itself). True when scheduled."""
    import bpy

    if bpy.app.background or not jitcache.configured_dir() or stamp() is not None:
        return False
    if not bpy.app.timers.is_registered(_start_later):
        bpy.app.timers.register(_start_later, first_interval=START_DELAY)
    return True


def _start_later():
    try:
        start()
    except OSError as exc:  # no Blender binary to run, no permission: the first bake compiles instead
        _status.state, _status.errors = "failed", [str(exc)]
    return None  # a one-shot timer


def _follow(process: subprocess.Popen, state: WarmupStatus) -> None:
    """Read the child's progress lines until it exits (reader thread)."""
    assert process.stdout is not None
    for line in process.stdout:
        if not line.startswith(PREFIX):
            continue
        text = line[len(PREFIX) :].strip()
        kind, _, rest = text.partition(" ")
        if kind == "scene":  # "scene 3/11 label"
            count, _, label = rest.partition(" ")
            done, _, total = count.partition("/")
            state.done, state.total, state.label = int(done) - 1, int(total), label
        elif kind == "error":
            state.errors.append(rest)
        elif kind == "done":  # "done <compiled>"
            state.compiled = int(rest or 0)
            state.done = state.total
    code = process.wait()
    state.seconds = time.perf_counter() - state.started
    if code != 0 and not state.errors:
        state.errors.append(f"the warm-up process exited with code {code}")
    state.state = "done" if code == 0 and not state.errors else "failed"


def _low_priority() -> dict:
    """Popen keywords that start the child at the lowest CPU priority (the artist's Blender comes first)."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.IDLE_PRIORITY_CLASS}
    return {"preexec_fn": lambda: os.nice(19)}


def _python() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"
