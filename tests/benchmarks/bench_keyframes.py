"""Benchmark: writing baked rigid-body keyframes in bulk vs. per-frame ``keyframe_insert``.

Run with the project's virtual environment (real Blender as the ``bpy`` module)::

    .venv/bin/python tests/benchmarks/bench_keyframes.py            # or: make bench
    .venv/bin/python tests/benchmarks/bench_keyframes.py --naive-bodies 1000   # no extrapolation

1000 objects × 250 frames of random location + quaternion trajectories are keyed twice:

* **bulk**: ``contact_lab.addon.output.keyframes.write_transform_keyframes`` (``keyframe_points.add`` +
  ``foreach_set``, the path every Contact Lab bake uses), for all bodies;
* **naive**: per frame set ``obj.location`` / ``obj.rotation_quaternion`` and call
  ``obj.keyframe_insert("location", frame=f)`` and ``obj.keyframe_insert("rotation_quaternion", frame=f)``.
  It is measured on a subset (``--naive-bodies``, default 100) and extrapolated linearly to all bodies;
  the table says so.

Both paths are checked to store the same key values (frame, value) on a few objects. Not a pytest test
(the file name does not match ``test_*.py``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import bpy
import numpy as np
from contact_lab.addon.output.keyframes import fcurves_of, write_transform_keyframes

CHANNELS = 7  # location xyz + rotation_quaternion wxyz


def random_trajectories(bodies: int, frames: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Smooth random walks: locations (B, F, 3) [BU] and unit quaternions (B, F, 4) wxyz, sign-continuous."""
    rng = np.random.default_rng(seed)
    loc = rng.normal(0.0, 5.0, (bodies, 1, 3)) + np.cumsum(rng.normal(0.0, 0.05, (bodies, frames, 3)), axis=1)
    quat = rng.normal(0.0, 1.0, (bodies, 1, 4)) + np.cumsum(rng.normal(0.0, 0.05, (bodies, frames, 4)), axis=1)
    quat /= np.linalg.norm(quat, axis=2, keepdims=True)
    # keep consecutive quaternions in one hemisphere (what a bake writes)
    for f in range(1, frames):
        flip = np.einsum("bi,bi->b", quat[:, f], quat[:, f - 1]) < 0.0
        quat[flip, f] *= -1.0
    return loc, quat


def make_objects(prefix: str, count: int, use_cubes: bool) -> list[bpy.types.Object]:
    mesh = None
    if use_cubes:
        mesh = bpy.data.meshes.new(f"{prefix} cube")
        v = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
        faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
        mesh.from_pydata(v.tolist(), [], faces)
    coll = bpy.data.collections.new(prefix)
    bpy.context.scene.collection.children.link(coll)
    objs = []
    for i in range(count):
        obj = bpy.data.objects.new(f"{prefix}.{i:04d}", mesh)
        obj.rotation_mode = "QUATERNION"
        coll.objects.link(obj)
        objs.append(obj)
    return objs


def run_bulk(objs, frames, loc, quat) -> float:
    t0 = time.perf_counter()
    for b, obj in enumerate(objs):
        write_transform_keyframes(obj, frames, loc[b], quat[b])
    return time.perf_counter() - t0


def run_naive(objs, frames, loc, quat) -> float:
    t0 = time.perf_counter()
    for b, obj in enumerate(objs):
        lb, qb = loc[b].tolist(), quat[b].tolist()
        for k, f in enumerate(frames.tolist()):
            obj.location = lb[k]
            obj.rotation_quaternion = qb[k]
            obj.keyframe_insert("location", frame=f)
            obj.keyframe_insert("rotation_quaternion", frame=f)
    return time.perf_counter() - t0


def key_table(obj) -> dict[tuple[str, int], np.ndarray]:
    """{(data_path, index): (n, 2) keyframe co} for an object's animation."""
    out = {}
    for fc in fcurves_of(obj):
        co = np.empty(2 * len(fc.keyframe_points), np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out[(fc.data_path, fc.array_index)] = co.reshape(-1, 2)
    return out


def verify_same_keys(bulk_objs, naive_objs, frames, loc, quat) -> int:
    """Compare the stored keys of both paths (and the requested values); return the number of keys checked."""
    checked = 0
    for ob_bulk, ob_naive, b in zip(bulk_objs, naive_objs, range(len(naive_objs)), strict=False):
        kb, kn = key_table(ob_bulk), key_table(ob_naive)
        expected = {("location", i): loc[b][:, i] for i in range(3)}
        expected.update({("rotation_quaternion", i): quat[b][:, i] for i in range(4)})
        if set(kb) != set(expected) or set(kn) != set(expected):
            raise AssertionError(f"{ob_bulk.name}: channels differ: bulk {sorted(kb)}, naive {sorted(kn)}")
        for key, values in expected.items():
            want = np.column_stack([frames, values]).astype(np.float32)
            if not np.array_equal(kb[key], kn[key]):
                raise AssertionError(f"{ob_bulk.name} {key}: bulk and keyframe_insert keys differ")
            if not np.allclose(kb[key], want, rtol=0.0, atol=1e-6):
                raise AssertionError(f"{ob_bulk.name} {key}: keys differ from the trajectory")
            checked += len(values)
    return checked


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Bulk vs. keyframe_insert keyframe writing benchmark")
    ap.add_argument("--bodies", type=int, default=1000)
    ap.add_argument("--frames", type=int, default=250)
    ap.add_argument("--naive-bodies", type=int, default=100, help="subset timed with keyframe_insert (extrapolated)")
    ap.add_argument("--verify", type=int, default=5, help="objects whose keys are compared between both paths")
    ap.add_argument("--cubes", action="store_true", help="key mesh cubes instead of empties")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    print(
        f"Blender {bpy.app.version_string} (bpy module), Python {platform.python_version()}, "
        f"numpy {np.__version__}, {platform.machine()}, {platform.system()}"
    )
    B, F = args.bodies, args.frames
    nb = min(args.naive_bodies, B)
    frames = np.arange(1, F + 1, dtype=np.float64)
    loc, quat = random_trajectories(B, F)
    kind = "cubes" if args.cubes else "empties"
    print(f"{B} {kind} × {F} frames × {CHANNELS} channels (location + rotation_quaternion)")

    bulk_objs = make_objects("Bulk", B, args.cubes)
    naive_objs = make_objects("Naive", nb, args.cubes)

    t_bulk = run_bulk(bulk_objs, frames, loc, quat)
    t_naive = run_naive(naive_objs, frames, loc, quat)
    checked = verify_same_keys(bulk_objs[: args.verify], naive_objs[: args.verify], frames, loc, quat)
    print(f"verified: {checked} keys on {min(args.verify, nb)} objects identical between both paths")

    rows = [("bulk write_transform_keyframes", B, t_bulk, "measured")]
    rows.append(("naive keyframe_insert", nb, t_naive, "measured"))
    if nb < B:
        rows.append(("naive keyframe_insert", B, t_naive * B / nb, f"extrapolated ×{B / nb:g} from {nb} bodies"))
    t_naive_all = t_naive * B / nb

    header = (
        f"{'method':32s} {'bodies':>6s} {'frames':>6s} {'keys':>9s} {'seconds':>9s} {'keys/s':>11s} {'speed-up':>8s}"
    )
    print()
    print(header)
    print("-" * len(header))
    results = []
    for name, bodies, seconds, note in rows:
        keys = bodies * F * CHANNELS
        per_body = seconds / bodies
        speedup = (t_naive_all / B) / per_body
        print(
            f"{name:32s} {bodies:6d} {F:6d} {keys:9d} {seconds:9.3f} {keys / seconds:11,.0f} {speedup:7.1f}×"
            + ("" if note == "measured" else f"  ({note})")
        )
        results.append(
            {
                "method": name,
                "bodies": bodies,
                "frames": F,
                "keys": keys,
                "seconds": seconds,
                "keys_per_second": keys / seconds,
                "speedup_vs_naive": speedup,
                "note": note,
            }
        )
    print(f"\nspeed-up = naive seconds per body / method seconds per body; bulk is {t_naive_all / t_bulk:.0f}× faster")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(
                {"blender": bpy.app.version_string, "python": platform.python_version(), "results": results},
                fh,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
