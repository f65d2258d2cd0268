"""UI bakes run off the main thread: Blender is never blocked, Esc cancels at once, and nothing is lost.

The modal operator's timer calls :meth:`BackgroundBake.tick`; these tests drive that loop themselves (the ``bpy``
module has no window to run a modal operator in).

- **Cold** (``background_bake_probe.py``, a fresh process whose kernel cache holds no soft solver yet, so the bake
  compiles; after other tiers filled the cache, a copy of it without the soft solver, as an artist's cache is
  before the first soft bake): no tick takes more than 0.2 s and no sleep between ticks returns more than 0.2 s
  late (a late sleep means something held the GIL) while the solver compiles and the frames advance in the
  worker; Esc during the compile and Esc mid-simulation each end the bake within 0.5 s and leave the file
  bit-identical (fingerprint of every object, mesh, shape key, action and file).
- **Warm** (in this process): the background bake writes exactly what the blocking bake writes; a failure in the
  worker thread becomes a FAILED report naming it; the progress line shows frames, time per frame and Newton
  iterations, and "Compiling" only while numba compiles.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import add_cube, add_ground
from scene_fingerprint import assert_same, fingerprint

bpy = pytest.importorskip("bpy")

from contact_lab.addon.bake import driver as bake  # noqa: E402
from contact_lab.addon.bake.worker import BackgroundBake  # noqa: E402
from contact_lab.addon.output import keyframes  # noqa: E402

pytestmark = pytest.mark.blender

HERE = Path(__file__).resolve().parent
TICK_LIMIT = 0.2
"""The acceptance limit: the main thread is never blocked longer than this per tick [s]."""
CANCEL_LIMIT = 0.5
"""Esc ends the bake within this [s]."""


def _soft_index_files(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*.nbi") if "soft" in p.parent.name or "soft" in str(p.parent)]


def _run_probe(cache: Path, tmp_path: Path) -> dict:
    out, folder = tmp_path / "probe.json", tmp_path / "folder"
    folder.mkdir(exist_ok=True)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, str(HERE / "background_bake_probe.py"), str(out), str(folder)],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and out.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text())


def _without_soft_solver(shared: Path, copy: Path) -> Path:
    """A copy of the kernel cache ``shared`` without the soft solver's kernels: what an artist's cache holds when
    the first soft bake comes after rigid and IPC bakes (the shared FEM and linear-algebra kernels stay)."""
    shutil.copytree(shared, copy, ignore=lambda folder, names: [n for n in names if n.startswith("soft_")])
    return copy


@pytest.fixture(scope="module")
def cold_probe(tmp_path_factory) -> dict:
    """The probe on this tier's kernel cache when it holds no soft solver yet (the tier's first soft bake: its
    compile is needed anyway), otherwise on a copy of it without the soft solver, or on an empty one."""
    tmp = tmp_path_factory.mktemp("probe")
    shared = os.environ.get("NUMBA_CACHE_DIR")
    if not shared or not Path(shared).is_dir():
        cache = tmp / "cache"
    elif not _soft_index_files(Path(shared)):
        cache = Path(shared)
    else:
        cache = _without_soft_solver(Path(shared), tmp / "cache")
    result = _run_probe(cache, tmp)
    if result["cold"]["compiles"] == 0:  # it was warm after all: measure on an empty cache
        result = _run_probe(tmp / "empty", tmp)
    return result


def test_a_cold_soft_bake_never_blocks_the_main_thread(cold_probe):
    cold = cold_probe["cold"]
    print(
        f"\ncold soft bake: longest timer tick {cold['max_tick'] * 1000:.1f} ms, "
        f"main thread late by at most {cold['max_late'] * 1000:.1f} ms"
    )
    assert cold["state"] == "FINISHED" and cold["report"] == "FINISHED"
    assert cold["compiles"] > 20, "the bake did not compile: it does not show what a first bake does"
    assert cold["compiling_ticks"] > 10  # the ticks ran while numba compiled in the worker
    assert cold["frames_seen"] == list(range(7))  # ... and while the frames advanced one by one
    assert cold["max_tick"] < TICK_LIMIT, cold
    assert cold["max_late"] < TICK_LIMIT, cold
    assert any(t.startswith("Compiling the soft solver") for t in cold["texts"])
    assert cold["shape_keys"][:2] == ["Basis", "Earlier"] and len(cold["shape_keys"]) == 8  # baked: 6 frames


def test_esc_during_the_compile_and_mid_simulation_cancels_at_once_and_changes_nothing(cold_probe):
    for stage in ("esc_compile", "esc_frames"):
        result = cold_probe[stage]
        print(f"\n{stage}: Esc returned in {result['cancel_seconds'] * 1000:.1f} ms")
        assert result["cancel_seconds"] < CANCEL_LIMIT and result["state_after"] == "CANCELLED", result
        assert result["report"] == "CANCELLED" and result["unchanged"], result
        assert result["max_tick"] < TICK_LIMIT and result["max_late"] < TICK_LIMIT, result
    assert cold_probe["esc_frames"]["compiles"] == 0  # warm by then: no "Compiling" on a warm bake
    assert not any(t.startswith("Compiling") for t in cold_probe["esc_frames"]["texts"])
    assert cold_probe["esc_frames"]["worker_stopped"]


# warm, in this process -------------------------------------------------------------------------------------------


def _soft_scene(scene, frames=4):
    lab = scene.contact_lab
    lab.engine = "SOFT"
    lab.use_frame_range = True
    lab.frame_start, lab.frame_end = 1, frames
    add_ground()
    jelly = add_cube("Jelly", (0.0, 0.0, 0.25), 0.4, role="SOFT")
    jelly.contact_lab.lattice_resolution = 4
    add_cube("Crate", (0.8, 0.0, 0.2), 0.4)
    return jelly


def _drive(job: BackgroundBake, timeout: float = 600.0) -> list[str]:
    texts = []
    job.start()
    deadline = time.perf_counter() + timeout
    while job.tick() == "RUNNING":
        texts.append(job.progress().text)
        assert time.perf_counter() < deadline, "the background bake did not end"
        time.sleep(0.01)
    return texts


def _shape_keys(obj) -> np.ndarray:
    blocks = obj.data.shape_keys.key_blocks
    out = np.empty((len(blocks), len(obj.data.vertices) * 3), np.float32)
    for k, block in enumerate(blocks):
        block.data.foreach_get("co", out[k])
    return out


def _keys(obj) -> np.ndarray:
    values = []
    for fc in sorted(keyframes.fcurves_of(obj), key=lambda f: (f.data_path, f.array_index)):
        co = np.empty(2 * len(fc.keyframe_points), np.float32)
        fc.keyframe_points.foreach_get("co", co)
        values.append(co)
    return np.concatenate(values)


def test_the_background_bake_writes_what_the_blocking_bake_writes(factory_scene):
    jelly = _soft_scene(factory_scene)
    crate = bpy.data.objects["Crate"]
    bake.bake_scene(factory_scene)
    blocking_keys, blocking_crate = _shape_keys(jelly), _keys(crate)
    bake.clear_bake(factory_scene)
    texts = _drive(BackgroundBake(factory_scene))
    report = json.loads(factory_scene.contact_lab.last_report)
    assert report["status"] == "FINISHED" and report["compiled_kernels"] == 0
    np.testing.assert_array_equal(_shape_keys(jelly), blocking_keys)  # bit for bit: same simulation, same write
    np.testing.assert_array_equal(_keys(crate), blocking_crate)
    assert not any(t.startswith("Compiling") for t in texts)  # warm: nothing compiles, nothing says so
    framed = [t for t in texts if t.startswith("Frame ")]
    assert all("Newton iterations" in t for t in framed if " s/frame" in t)


def test_a_failure_in_the_worker_is_a_failed_report_and_changes_nothing(factory_scene, monkeypatch, tmp_path):
    _soft_scene(factory_scene)
    bake.bake_scene(factory_scene)
    before = fingerprint(tmp_path)
    from contact_lab.core.soft import frame_loop

    def broken(*args, **kwargs):
        raise RuntimeError("solver exploded")
        yield  # a generator, like the real one: it fails at its first frame

    monkeypatch.setattr(frame_loop, "iter_simulate", broken)
    job = BackgroundBake(factory_scene)
    _drive(job)
    assert job.state == "FAILED" and "RuntimeError: solver exploded" in str(job.error)
    report = json.loads(factory_scene.contact_lab.last_report)
    assert report["status"] == "FAILED" and "solver exploded" in report["error"]
    assert_same(before, fingerprint(tmp_path), "after a failure in the worker")


def test_bad_input_is_refused_on_the_main_thread_before_any_thread_starts(factory_scene):
    factory_scene.contact_lab.engine = "SOFT"
    add_ground()
    threads = threading.active_count()
    with pytest.raises(bake.BakeError, match="No soft bodies"):
        BackgroundBake(factory_scene)
    assert threading.active_count() == threads
