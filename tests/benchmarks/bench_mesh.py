"""MESH-shape benchmark: cost per pair of the mesh contact kernels, and their cold compile time.

Run: ``python tests/benchmarks/bench_mesh.py [--cold]``. Per configuration, ``generate_contacts`` is called on
``PAIRS`` copies of one resting pair (each copy is a full pair: BVH query or field and samples, per-triangle
kernels, reduction) and the time per pair is printed in microseconds (best of ``REPEATS``):

- a sphere, a box and a hexagonal-prism hull resting on a passive 1 152-triangle bumpy terrain mesh;
- an active Suzanne (0.8 m wide, 1 002 triangles, ~1 500 surface samples) resting on a plane, and at the
  bottom of a passive open bowl (radius 1 m, 1 488 triangles);
- for scale, a box on a plane and a box on a box (the existing kernels).

``--cold`` also times the first call of each narrow-phase pass (closed forms, GJK/EPA, meshes) in a fresh process
with an empty Numba cache (the compile), for this tree. Not part of ``make test``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
import mesh_reference as mr  # noqa: E402  (tests/core, put on the path above)

PAIRS = 200
REPEATS = 5
MARGIN = 0.01


def terrain(n=24):
    """A 2 n^2-triangle bumpy height field over [-1, 1]^2 (amplitude 2 cm)."""
    x = np.linspace(-1, 1, n + 1)
    v = np.array([(a, b, 0.02 * np.sin(5 * a) * np.cos(4 * b)) for a in x for b in x])
    return v, mr.grid_triangles(n)


def time_pair(types, params, pos, rot, hulls, hull, meshes, mesh):
    """Best time per pair [us] of ``PAIRS`` copies of pair (0, 1), and the contacts of one copy."""
    from contact_lab.core.rigid.collision.narrow_phase import generate_contacts

    pairs = np.tile(np.array([[0, 1]], np.int32), (PAIRS, 1))
    cap = 16 * PAIRS
    out = (np.zeros(cap, np.int32), np.zeros((cap, 3)), np.zeros((cap, 3)), np.zeros(cap), np.zeros(cap, np.int32))
    counts = np.zeros(2, np.int64)
    args = (np.array(types, np.int32), np.array(params, float), np.array(pos, float), np.array(rot, float), hulls,
            np.array(hull, np.int32), meshes, np.array(mesh, np.int32))  # fmt: skip
    generate_contacts(*args, pairs, 1, MARGIN, np.zeros(len(types)), *out, counts)
    contacts = int(counts[0])
    best = np.inf
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        generate_contacts(*args, pairs, PAIRS, MARGIN, np.zeros(len(types)), *out, counts)
        best = min(best, time.perf_counter() - t0)
    return best / PAIRS * 1e6, contacts


def main() -> None:
    from contact_lab.core.rigid.hull import convex_hull, empty_hull_arrays, pack_hulls
    from contact_lab.core.rigid.mass_properties import mesh_mass_properties
    from contact_lab.core.rigid.mesh import mesh_bounding_radius, pack_meshes, validated_mesh

    eye = np.eye(3)
    no_hulls = empty_hull_arrays()
    tv, tt = terrain()
    floor = validated_mesh(tv, tt, solid=False)
    floor_meshes = pack_meshes([floor], MARGIN)
    r_floor = mesh_bounding_radius(floor)
    ang = np.arange(6) * np.pi / 3
    prism = np.concatenate([np.c_[0.1 * np.cos(ang), 0.1 * np.sin(ang), np.full(6, z)] for z in (-0.05, 0.05)])
    hulls = pack_hulls([convex_hull(prism)])
    height = 0.02 * np.sin(5 * 0.1) * np.cos(4 * 0.05)
    rows = []
    rows.append(("sphere r=0.1 on 1152-tri terrain", time_pair(
        [1, 8], [[0.1, 0, 0], [r_floor, 0, 0]], [[0.1, 0.05, 0.1 + height - 0.001], [0, 0, 0]], [eye, eye],
        no_hulls, [-1, -1], floor_meshes, [-1, 0])))  # fmt: skip
    rows.append(("box 0.2x0.2x0.1 on 1152-tri terrain", time_pair(
        [2, 8], [[0.1, 0.1, 0.05], [r_floor, 0, 0]], [[0.1, 0.05, 0.05 + 0.02], [0, 0, 0]], [eye, eye],
        no_hulls, [-1, -1], floor_meshes, [-1, 0])))  # fmt: skip
    rows.append(("hull (hex prism) on 1152-tri terrain", time_pair(
        [7, 8], [[0.12, 0, 0], [r_floor, 0, 0]], [[0.1, 0.05, 0.05 + 0.02], [0, 0, 0]], [eye, eye],
        hulls, [0, -1], floor_meshes, [-1, 0])))  # fmt: skip
    sv, st = mr.suzanne()
    sv = 0.3 * sv
    sv = sv - mesh_mass_properties(sv, st).centroid
    monkey = validated_mesh(sv, st, solid=True)
    r_monkey = mesh_bounding_radius(monkey)
    low = sv[:, 2].min()
    rows.append(("active Suzanne on plane", time_pair(
        [4, 8], [[0, 0, 0], [r_monkey, 0, 0]], [[0, 0, 0], [0, 0, -low - 0.001]], [eye, eye], no_hulls, [-1, -1],
        pack_meshes([monkey], MARGIN), [-1, 0])))  # fmt: skip
    bv, bt = mr.bowl_mesh(1.0, 48, 16)
    bowl = validated_mesh(bv, bt, solid=False)
    both = pack_meshes([bowl, monkey], MARGIN)
    bottom = -1.0 - low - 0.001
    rows.append(("active Suzanne in 1488-tri open bowl", time_pair(
        [8, 8], [[mesh_bounding_radius(bowl), 0, 0], [r_monkey, 0, 0]], [[0, 0, 0], [0, 0, bottom]], [eye, eye],
        no_hulls, [-1, -1], both, [0, 1])))  # fmt: skip
    rows.append(("(box on plane)", time_pair(
        [2, 4], [[0.1, 0.1, 0.05], [0, 0, 0]], [[0, 0, 0.049], [0, 0, 0]], [eye, eye], no_hulls, [-1, -1],
        floor_meshes, [-1, -1])))  # fmt: skip
    rows.append(("(box on box)", time_pair(
        [2, 2], [[0.1, 0.1, 0.05], [0.5, 0.5, 0.5]], [[0, 0, 0.549], [0, 0, 0]], [eye, eye], no_hulls, [-1, -1],
        floor_meshes, [-1, -1])))  # fmt: skip
    print(f"{'pair':42s} {'us/pair':>9s} {'contacts':>9s}")
    for name, (us, contacts) in rows:
        print(f"{name:42s} {us:9.1f} {contacts:9d}")


def cold_compile() -> dict[str, float]:
    """Seconds of the first call of each narrow-phase pass (closed forms, GJK/EPA, meshes) in a fresh process with
    an empty Numba cache: what a first bake compiles for the shapes it has."""
    code = (
        "import time, numpy as np\n"
        "from contact_lab.core.rigid.collision import narrow_phase as nph\n"
        "from contact_lab.core.rigid.hull import empty_hull_arrays\n"
        "from contact_lab.core.rigid.mesh import empty_mesh_arrays\n"
        "out = (np.zeros(4, np.int32), np.zeros((4, 3)), np.zeros((4, 3)), np.zeros(4), np.zeros(4, np.int32),\n"
        "       np.zeros(2, np.int64))\n"
        "shapes = (np.array([1, 4], np.int32), np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3, 3)))\n"
        "hulls, meshes, none = empty_hull_arrays(), empty_mesh_arrays(), np.full(2, -1, np.int32)\n"
        "candidates = (np.zeros((1, 2), np.int32), 0, 0.01, np.zeros(2))\n"
        "for name, call in (\n"
        "    ('closed forms', lambda: nph.primitive_pair_contacts(shapes, candidates, out)),\n"
        "    ('GJK/EPA', lambda: nph.convex_pair_contacts(shapes, hulls, none, candidates, out)),\n"
        "    ('meshes', lambda: nph.mesh_pair_contacts(shapes, hulls, none, meshes, none, candidates, out)),\n"
        "):\n"
        "    t = time.perf_counter()\n"
        "    call()\n"
        "    print(name, '=', time.perf_counter() - t)\n"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return {name.strip(): float(t) for name, t in (line.split("=") for line in done.stdout.splitlines() if "=" in line)}


if __name__ == "__main__":
    main()
    if "--cold" in sys.argv:
        for name, seconds in cold_compile().items():
            print(f"cold compile of the narrow phase's {name} pass: {seconds:.1f} s")
