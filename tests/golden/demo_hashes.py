"""Bit-for-bit fingerprints of every demo bake, to prove a refactor changes no result.

Runs the five ``make demo`` scripts without rendering (rigid, friction, soft, IPC, rigid mesh) into a scratch
folder, opens every baked .blend and hashes, for every frame of its range, each object's evaluated
world matrix and evaluated mesh vertices (so keyframes, shape keys and PC2 caches all count, whatever
the add-on's internals look like). ``record`` stores the hashes in ``demo_hashes.json`` beside this
file; ``check`` bakes again and fails (exit 1) on any object whose hash changed.

    .venv/bin/python tests/golden/demo_hashes.py record     # on the reference layout
    .venv/bin/python tests/golden/demo_hashes.py check      # after the change

Bakes are deterministic (DESIGN.md), so equal code gives equal hashes on one machine and Blender
version; the recorded file names the Blender and numpy it was made with, and ``check`` refuses to
compare across them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECORD = Path(__file__).with_name("demo_hashes.json")
DEMOS = (
    "build_demo.py",
    "build_friction_demo.py",
    "build_soft_demo.py",
    "build_ipc_demo.py",
    "build_rigid_mesh_demo.py",
)


def bake_demos(out: Path) -> None:
    """Run every demo script (no render) with this interpreter; each saves its .blend files in ``out``."""
    for script in DEMOS:
        print(f">> {script}", flush=True)
        cmd = [sys.executable, str(REPO / "demo" / script), "--no-render", "--out", str(out)]
        subprocess.run(cmd, check=True, cwd=REPO)


def hash_blend(path: Path) -> dict[str, str]:
    """``{object name: sha256}`` over every frame's evaluated world matrix and mesh vertices."""
    import bpy
    import numpy as np

    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    digests = {obj.name: hashlib.sha256() for obj in scene.objects}
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for obj in scene.objects:
            ev = obj.evaluated_get(depsgraph)
            h = digests[obj.name]
            h.update(np.array(ev.matrix_world, dtype=np.float64).tobytes())
            if obj.type == "MESH":
                mesh = ev.to_mesh()
                co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
                mesh.vertices.foreach_get("co", co)
                h.update(co.tobytes())
                ev.to_mesh_clear()
    return {name: h.hexdigest() for name, h in sorted(digests.items())}


def fingerprint(out: Path) -> dict:
    import bpy
    import numpy as np

    blends = sorted(out.glob("*.blend"))
    if not blends:
        raise SystemExit(f"no baked .blend files in {out}")
    return {
        "blender": bpy.app.version_string,
        "numpy": np.__version__,
        "blends": {p.name: hash_blend(p) for p in blends},
    }


def compare(recorded: dict, now: dict) -> list[str]:
    problems = []
    for key in ("blender", "numpy"):
        if recorded[key] != now[key]:
            problems.append(f"recorded with {key} {recorded[key]}, now {now[key]}: not comparable")
    if problems:
        return problems
    for blend, objects in recorded["blends"].items():
        got = now["blends"].get(blend)
        if got is None:
            problems.append(f"{blend}: not baked now")
            continue
        for name, digest in objects.items():
            if got.get(name) != digest:
                problems.append(f"{blend}: {name} differs")
        problems += [f"{blend}: {name} is new" for name in sorted(set(got) - set(objects))]
    problems += [f"{blend}: new .blend" for blend in sorted(set(now["blends"]) - set(recorded["blends"]))]
    return problems


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("record", "check"))
    ap.add_argument("--out", type=Path, help="bake into this folder and keep it (default: a temporary one)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="contact_lab_golden_") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        bake_demos(out)
        now = fingerprint(out)
    count = sum(len(v) for v in now["blends"].values())
    if args.mode == "record":
        RECORD.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"recorded {count} objects in {len(now['blends'])} .blend files into {RECORD}")
        return 0
    problems = compare(json.loads(RECORD.read_text()), now)
    for line in problems:
        print("DIFFERS: " + line)
    print(f"{count} objects in {len(now['blends'])} .blend files: " + ("differ" if problems else "bit-identical"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
