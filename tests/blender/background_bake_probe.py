"""Drives UI bakes the way the modal operator's timer does, in a fresh process, and measures the main thread.

Run by ``test_background_bake.py`` with an empty ``NUMBA_CACHE_DIR``, so the first bake compiles the soft solver:

1. **Esc during the compile.** A bake is started and cancelled as soon as numba compiles; the cancel and the next
   tick are timed, and the file must equal its fingerprint from before.
2. **A cold bake to the end.** The timer loop ``tick(); sleep(interval)`` runs until the bake is written. Each
   tick's duration is measured, and so is how late each sleep returns: a sleep returns late when the worker holds
   the GIL (a long C call, a full garbage collection), which is what would freeze Blender.
3. **Esc mid-simulation** (now warm): cancelled once two frames are done; the file must equal its fingerprint
   from after bake 2.

Writes everything measured to the JSON file named by the first argument; the second is a scratch folder.
"""

import gc
import json
import sys
import time

import bpy
import contact_lab
import numpy as np
from contact_lab.addon.bake.worker import BackgroundBake
from scene_fingerprint import assert_same, fingerprint

TICK_INTERVAL = 0.02
"""Seconds between ticks: five times as often as the operator's timer, to see short stalls too."""

FRAMES = 6


def build_scene():
    """A soft cube (with a previous bake's shape keys) dropped on a plane, and a box keyed by hand."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    contact_lab.register()
    scene = bpy.context.scene
    lab = scene.contact_lab
    lab.engine = "SOFT"
    lab.use_frame_range = True
    lab.frame_start, lab.frame_end = 1, FRAMES
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    ground = bpy.context.object
    ground.name = "Ground"
    ground.contact_lab.role = "PASSIVE"
    ground.contact_lab.shape = "PLANE"
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(0.0, 0.0, 0.3))
    jelly = bpy.context.object
    jelly.name = "Jelly"
    jelly.contact_lab.role = "SOFT"
    # 3 072 tets: a frame then takes longer than a tick, so the ticks can see the frames advance one by one (at
    # resolution 6 the fitted lattice has 1 296 and a frame could finish between two ticks)
    jelly.contact_lab.lattice_resolution = 8
    basis = jelly.shape_key_add(name="Basis")  # a previous bake the cancel must keep, keyed
    moved = jelly.shape_key_add(name="Earlier")
    for k, point in enumerate(moved.data):
        point.co = basis.data[k].co * 1.1
    moved.value = 0.5
    moved.keyframe_insert("value", frame=1)
    bpy.ops.mesh.primitive_cube_add(size=0.2, location=(2.0, 0.0, 0.5))
    prop = bpy.context.object
    prop.name = "Prop"  # not simulated: animation the bake must not touch
    prop.keyframe_insert("location", frame=1)
    prop.location.z = 1.5
    prop.keyframe_insert("location", frame=FRAMES)
    scene.frame_set(1)  # the animated values as Blender shows them (the bake's frame sampling evaluates them too)
    return scene


def run_ticks(bake, *, until=None, deadline=600.0):
    """The operator's timer loop: tick, then sleep; stops when the bake ends or ``until(bake)`` is true."""
    ticks, late, texts, progress_during = [], [], [], []
    compiling_ticks = 0
    start = time.perf_counter()
    state = bake.state
    while time.perf_counter() - start < deadline:
        t0 = time.perf_counter()
        state = bake.tick()
        progress = bake.progress()
        ticks.append(time.perf_counter() - t0)
        texts.append(progress.text)
        compiling_ticks += progress.compiling
        progress_during.append(progress.frames_done)
        if state != "RUNNING" or (until is not None and until(bake)):
            break
        t0 = time.perf_counter()
        time.sleep(TICK_INTERVAL)
        late.append(time.perf_counter() - t0 - TICK_INTERVAL)
    return {
        "state": state,
        "ticks": len(ticks),
        "max_tick": max(ticks),
        "last_tick": ticks[-1],
        "max_running_tick": max(ticks[:-1], default=0.0),
        "max_late": max(late) if late else 0.0,
        "mean_late": float(np.mean(late)) if late else 0.0,
        "compiling_ticks": compiling_ticks,
        "texts": sorted(set(t.split(" (")[0] if t.startswith("Compiling") else t for t in texts))[:40],
        "frames_seen": sorted(set(progress_during)),
        "seconds": time.perf_counter() - start,
    }


def timed_cancel(bake):
    t0 = time.perf_counter()
    bake.cancel()
    state = bake.tick()
    return {"cancel_seconds": time.perf_counter() - t0, "state_after": state}


def main(out_path: str, folder: str) -> None:
    scene = build_scene()
    result = {}
    before = fingerprint(folder)

    # 1. Esc while the solver compiles
    first = BackgroundBake(scene)
    first.start()
    result["esc_compile"] = run_ticks(first, until=lambda b: b.worker.compiles.count > 0 or b.progress().compiling)
    result["esc_compile"]["compiles_before_cancel"] = first.worker.compiles.count
    result["esc_compile"].update(timed_cancel(first))
    result["esc_compile"]["report"] = json.loads(scene.contact_lab.last_report)["status"]
    assert_same(before, fingerprint(folder), "after Esc during the compile")
    result["esc_compile"]["unchanged"] = True

    # 2. a cold bake to the end (the cancelled worker may still be compiling: this one waits for its kernels)
    second = BackgroundBake(scene)
    second.start()
    result["cold"] = run_ticks(second)
    result["cold"]["compiles"] = second.worker.compiles.count
    result["cold"]["young_collections"] = second.guard.collections
    t0 = time.perf_counter()
    result["cold"]["objects_after"] = len(gc.get_objects())
    result["cold"]["garbage"] = gc.collect()  # what the collector has left for later: one full collection
    result["cold"]["full_collection_after"] = time.perf_counter() - t0
    result["cold"]["report"] = json.loads(scene.contact_lab.last_report)["status"]
    result["cold"]["shape_keys"] = [k.name for k in bpy.data.objects["Jelly"].data.shape_keys.key_blocks]
    first.worker.wait(600)
    baked = fingerprint(folder)

    # 3. Esc mid-simulation, warm
    third = BackgroundBake(scene)
    third.start()
    result["esc_frames"] = run_ticks(third, until=lambda b: b.job.frames_done >= 2)
    result["esc_frames"]["compiles"] = third.worker.compiles.count
    result["esc_frames"].update(timed_cancel(third))
    result["esc_frames"]["report"] = json.loads(scene.contact_lab.last_report)["status"]
    assert_same(baked, fingerprint(folder), "after Esc mid-simulation")
    result["esc_frames"]["unchanged"] = True
    result["esc_frames"]["worker_stopped"] = third.worker.wait(60)
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
    sys.stdout.flush()
    if tuple(bpy.app.version) < (4, 3, 0):  # bpy 4.2 (module) crashes at teardown after registering panels
        import os

        os._exit(0)
