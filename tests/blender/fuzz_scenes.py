"""Random malformed scenes for the validation fuzz test (``test_validate_fuzz.py``), and the worker that runs them.

Run as a script (Blender as a Python module), the worker builds case after case, validates and bakes each, and
prints one ``FUZZ {json}`` line per case: ``{"case", "seed", "engine", "outcome", "message", "seconds"}`` where
``outcome`` is 'baked', 'refused' (a :class:`BakeError` with a message, Check Scene having listed an error),
'diverged' (the simulation blew up and the bake said so) or a failure: 'validate-crash' (the validation raised),
'crash' (the bake raised anything but a BakeError), 'inconsistent' (the validation found an error but the bake
ran), 'empty-message', 'refused-late' (the bake refused input that Check Scene did not list as an error),
'silent-garbage' (baked, the report's stats show unconverged frames, and no warning says "did not converge").
The test runs it in a child process so that a hang or a hard crash is caught by a time limit per case and the run
goes on.

Reproduce one case: ``python tests/blender/fuzz_scenes.py --first K --count 1 --verbose``.

Each scene is tiny on purpose (2–3 frames, up to 3 bodies, lattices of 1–4 cells): the test is about input, not
physics, and must fit the CI budget.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import math
import os
import sys
import tempfile
import time
import traceback

import numpy as np

BASE_SEED = 12_000_000
"""Case ``k`` uses ``numpy.random.default_rng(BASE_SEED + k)``: reproducible, independent cases."""

INF = math.inf
NAN = math.nan

SHAPES = ("BOX", "SPHERE", "CAPSULE", "PLANE", "MESH", "CYLINDER", "CONE", "CONVEX_HULL", "COMPOUND")
SHAPE_WEIGHTS = (0.3, 0.15, 0.1, 0.1, 0.07, 0.05, 0.05, 0.1, 0.08)
MESH_KINDS = ("cube", "cube", "cube", "sphere", "empty", "triangle", "duplicates", "nan", "point", "plane", "soup",
              "tube")  # fmt: skip


def pick(rng, values, p=None):
    """One of ``values`` (a Python object, not a numpy scalar)."""
    return values[int(rng.choice(len(values), p=p))]


# meshes ---------------------------------------------------------------------------------------------------------


def _cube(size=1.0):
    v = [(x, y, z) for z in (-0.5, 0.5) for y in (-0.5, 0.5) for x in (-0.5, 0.5)]
    faces = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    return [tuple(size * c for c in p) for p in v], faces


def _sphere(radius=0.5, rings=6, segments=8):
    verts = [(0.0, 0.0, -radius)]
    for i in range(1, rings):
        theta = math.pi * i / rings
        for j in range(segments):
            phi = 2.0 * math.pi * j / segments
            verts.append((radius * math.sin(theta) * math.cos(phi), radius * math.sin(theta) * math.sin(phi),
                          -radius * math.cos(theta)))  # fmt: skip
    verts.append((0.0, 0.0, radius))
    faces = [(0, 1 + (j + 1) % segments, 1 + j) for j in range(segments)]
    for i in range(rings - 2):
        a, b = 1 + i * segments, 1 + (i + 1) * segments
        faces += [(a + j, a + (j + 1) % segments, b + (j + 1) % segments, b + j) for j in range(segments)]
    top, last = len(verts) - 1, 1 + (rings - 2) * segments
    faces += [(top, last + j, last + (j + 1) % segments) for j in range(segments)]
    return verts, faces


def mesh_data(rng, kind):
    """``(vertices, faces)`` of a mesh of ``kind`` (:data:`MESH_KINDS`), some of them malformed on purpose."""
    if kind == "cube":
        return _cube(float(rng.uniform(0.2, 1.2)))
    if kind == "sphere":
        return _sphere(float(rng.uniform(0.1, 0.6)))
    if kind == "empty":
        return [], []
    if kind == "triangle":
        return [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)], [(0, 1, 2)]
    if kind == "duplicates":  # every vertex twice, the faces using both copies
        verts, faces = _cube(0.5)
        return verts + verts, faces + [tuple(i + 8 for i in f) for f in faces]
    if kind == "nan":
        verts, faces = _cube(0.5)
        verts[int(rng.integers(8))] = (NAN, 0.0, 0.0)
        return verts, faces
    if kind == "point":  # four vertices at one place
        return [(0.1, 0.2, 0.3)] * 4, [(0, 1, 2), (0, 2, 3), (0, 3, 1), (1, 3, 2)]
    if kind == "plane":
        return [(-0.5, -0.5, 0.0), (0.5, -0.5, 0.0), (0.5, 0.5, 0.0), (-0.5, 0.5, 0.0)], [(0, 1, 2, 3)]
    if kind == "soup":
        verts = [tuple(float(x) for x in p) for p in rng.uniform(-0.5, 0.5, size=(12, 3))]
        return verts, [(3 * k, 3 * k + 1, 3 * k + 2) for k in range(4)]
    assert kind == "tube"  # a cylinder without caps: open
    n = 8
    verts = [(0.3 * math.cos(2 * math.pi * k / n), 0.3 * math.sin(2 * math.pi * k / n), z) for z in (-0.4, 0.4)
             for k in range(n)]  # fmt: skip
    return verts, [(k, (k + 1) % n, n + (k + 1) % n, n + k) for k in range(n)]


# scenes ---------------------------------------------------------------------------------------------------------


def _mesh_object(bpy, scene, name, verts, faces):
    data = bpy.data.meshes.new(name)
    data.from_pydata(verts, [], faces)
    data.update()
    obj = bpy.data.objects.new(name, data)
    scene.collection.objects.link(obj)
    return obj


def build_scene(rng, bpy, folder: str) -> dict:
    """A valid tiny scene for a random engine, then a few random defects (none in about a third of the cases).

    Returns:
        ``{"engine", "defects": [names], "objects": ["name:type:role:shape", ...]}``.
    """
    scene = bpy.context.scene
    s = scene.contact_lab
    engine = pick(rng, ("RIGID", "SOFT", "IPC"), p=(0.5, 0.25, 0.25))
    s.engine = engine
    start = pick(rng, (1, 1, 1, 0, 7))
    s.frame_start, s.frame_end = start, start + pick(rng, (1, 2))
    s.substeps = pick(rng, (1, 2))
    s.iterations = pick(rng, (10, 30))
    s.solver = pick(rng, ("PROX", "PGS", "NEWTON"))
    s.sleeping = bool(rng.random() < 0.2)
    s.soft_substeps = 1
    s.soft_contact = pick(rng, ("IMPLICIT", "DUAL"), p=(0.8, 0.2))
    s.soft_integrator = pick(rng, ("BE", "BDF2"))
    s.ipc_max_iterations = pick(rng, (5, 20))
    if rng.random() < 0.2:
        s.soft_output, s.soft_cache_dir = "PC2", os.path.join(folder, "cache")
    ground_verts, ground_faces = mesh_data(rng, "plane")
    ground = _mesh_object(bpy, scene, "Ground", [(20 * x, 20 * y, z) for x, y, z in ground_verts], ground_faces)
    ground.contact_lab.role, ground.contact_lab.shape = "PASSIVE", "PLANE"
    bodies = []
    for k in range(int(rng.integers(1, 4))):
        verts, faces = mesh_data(rng, pick(rng, ("cube", "sphere")))
        obj = _mesh_object(bpy, scene, f"Body{k}", verts, faces)
        obj.location = (1.6 * k, float(rng.normal(0.0, 0.2)), float(rng.uniform(0.8, 1.5)))
        obj.rotation_euler = tuple(float(x) for x in rng.uniform(-0.3, 0.3, 3))
        c = obj.contact_lab
        if engine == "RIGID" or k > 0 and rng.random() < 0.3:  # the soft engines' active bodies are boxes
            c.role = "ACTIVE"
            c.shape = "BOX" if engine != "RIGID" else pick(rng, ("BOX", "SPHERE", "CAPSULE", "CYLINDER", "CONE",
                                                                    "CONVEX_HULL", "MESH"))  # fmt: skip
            c.mass = float(rng.uniform(0.5, 5.0))
        else:
            c.role = "SOFT"
            c.soft_preset = pick(rng, ("RUBBER", "GEL", "FLESH", "FOAM"))
        c.friction = float(rng.uniform(0.0, 1.0))
        c.lattice_resolution = pick(rng, (1, 2, 3))  # also for a body a defect turns Soft: coarse, cheap lattices
        bodies.append(obj)
    defects = []
    for _ in range(min(int(rng.poisson(1.2)), 4)):
        name = pick(rng, tuple(DEFECTS))
        DEFECTS[name](rng, bpy, scene, bodies)
        defects.append(name)
    objects = [f"{o.name}:{o.type}:{o.contact_lab.role}:{o.contact_lab.shape}" for o in scene.objects]
    return {"engine": engine, "defects": defects, "objects": objects}


def _body(rng, bodies):
    return bodies[int(rng.integers(len(bodies)))]


def _bad_mesh(rng, bpy, scene, bodies):
    """Replace a body's mesh by an empty one, one triangle, duplicated or NaN vertices, a point, a plane, ..."""
    obj = _body(rng, bodies)
    verts, faces = mesh_data(rng, pick(rng, MESH_KINDS[3:]))
    data = bpy.data.meshes.new(obj.name + "_bad")
    data.from_pydata(verts, [], faces)
    data.update()
    obj.data = data


def _not_a_mesh(rng, bpy, scene, bodies):
    """An Empty or a Curve with a body's role and shape."""
    data = bpy.data.curves.new("Curve", "CURVE") if rng.random() < 0.5 else None
    obj = bpy.data.objects.new("NotAMesh", data)
    scene.collection.objects.link(obj)
    obj.location.z = 2.0
    obj.contact_lab.role = pick(rng, ("ACTIVE", "PASSIVE", "SOFT"))
    obj.contact_lab.shape = pick(rng, SHAPES, p=SHAPE_WEIGHTS)


def _scale(rng, bpy, scene, bodies):
    _body(rng, bodies).scale = pick(rng, ((0.0, 1.0, 1.0), (1e-6,) * 3, (1e6,) * 3, (-1.0, 1.0, 1.0), (0.3, 1.0, 2.5)))


def _transform(rng, bpy, scene, bodies):
    obj = _body(rng, bodies)
    if rng.random() < 0.5:
        obj.rotation_euler.y = NAN
    else:
        obj.location.z = pick(rng, (INF, -INF, NAN, 1e7))


def _settings(rng, bpy, scene, bodies):
    """One physical setting of a body out of range: zero, negative, NaN, infinite or extreme."""
    c = _body(rng, bodies).contact_lab
    name, value = pick(rng, (("mass", 0.0), ("mass", -1.0), ("mass", INF), ("mass", 1e9), ("friction", INF),
                             ("youngs_modulus", 0.0), ("youngs_modulus", INF), ("poisson_ratio", 0.5),
                             ("density", 0.0), ("damping", -1.0), ("restitution", NAN), ("volume_compressibility", 0.5),
                             ("pin_group", "missing"), ("initial_velocity", (0.0, NAN, 0.0)),
                             ("lattice_resolution", 4)))  # fmt: skip
    setattr(c, name, value)


def _role_or_shape(rng, bpy, scene, bodies):
    c = _body(rng, bodies).contact_lab
    if rng.random() < 0.5:
        c.role = pick(rng, ("ACTIVE", "PASSIVE", "SOFT", "NONE"))
    else:
        c.shape = pick(rng, SHAPES, p=SHAPE_WEIGHTS)


def _engine(rng, bpy, scene, bodies):
    scene.contact_lab.engine = pick(rng, ("RIGID", "SOFT", "IPC"))


def _frames(rng, bpy, scene, bodies):
    s = scene.contact_lab
    s.frame_end = s.frame_start + pick(rng, (0, -1))


def _scene(rng, bpy, scene, bodies):
    """Gravity, Unit Scale or a solver setting out of range."""
    choice = int(rng.integers(5))
    if choice == 0:
        scene.gravity = pick(rng, ((0.0, NAN, -9.81), (0.0, 0.0, -INF), (1e7, 0.0, 0.0)))
    elif choice == 1:
        scene.unit_settings.scale_length = pick(rng, (1e-6, 0.01, 100.0, 1e6))
    elif choice == 2:
        scene.contact_lab.tolerance = INF
    elif choice == 3:
        scene.contact_lab.soft_output, scene.contact_lab.soft_cache_dir = "PC2", "//relative_to_an_unsaved_file/"
    else:
        scene.use_gravity = False


def _friction(rng, bpy, scene, bodies):
    """A direction-dependent friction model without its inputs (no UVs, no image, no attribute)."""
    c = _body(rng, bodies).contact_lab
    c.friction_model = pick(rng, ("ANISOTROPIC", "TEXTURE", "TENSOR", "MATCHSTICK"))
    c.structure_source = pick(rng, ("NONE", "AXIS", "ATTRIBUTE", "UV_TANGENT", "IMAGE"))
    c.friction_tensor = pick(rng, ((1.0, 0.0, 1.0), (1.0, 2.0, 1.0)))
    c.friction_spin = pick(rng, (0.0, 0.01))


def _overlap(rng, bpy, scene, bodies):
    """Two bodies (or a body and the ground) starting inside each other."""
    obj = _body(rng, bodies)
    other = bodies[0] if obj is not bodies[0] else None
    obj.location = other.location if other is not None else (obj.location.x, obj.location.y, 0.1)


def _parent(rng, bpy, scene, bodies):
    """A body parented to another (invalid for an active body; a part if the parent is a Compound Parent)."""
    if len(bodies) < 2:
        return
    bodies[1].parent = bodies[0]
    if rng.random() < 0.5:
        bodies[0].contact_lab.shape = "COMPOUND"


def _round_scale(rng, bpy, scene, bodies):
    """A Sphere or Capsule scaled non-uniformly (the bake refuses it; Check Scene once showed a false overlap)."""
    obj = _body(rng, bodies)
    obj.contact_lab.shape = pick(rng, ("SPHERE", "CAPSULE"))
    obj.scale = pick(rng, ((1.0, 1.0, 2.5), (0.4, 1.0, 1.0), (1.0, 1.0, -1.0)))


def _edges_mesh(rng, bpy, scene, bodies):
    """A passive Mesh collider that is empty or has only vertices and edges (nothing to collide with)."""
    verts = pick(rng, ([], [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (1.0, 1.0, 0.0)]))
    data = bpy.data.meshes.new("Wire")
    data.from_pydata(verts, [(0, 1), (1, 2)] if verts else [], [])
    data.update()
    obj = bpy.data.objects.new("Wire", data)
    scene.collection.objects.link(obj)
    obj.location = (float(rng.uniform(-3.0, 3.0)), 2.0, 0.5)
    obj.contact_lab.role, obj.contact_lab.shape = "PASSIVE", "MESH"


def _shear(rng, bpy, scene, bodies):
    """A body under a rotated, non-uniformly scaled parent: its world matrix is sheared."""
    parent = bpy.data.objects.new("Stretch", None)
    scene.collection.objects.link(parent)
    parent.scale = (1.0, float(rng.uniform(1.5, 3.0)), 1.0)
    obj = _body(rng, bodies)
    obj.parent = parent
    obj.rotation_euler.z = float(rng.uniform(0.3, 1.2))
    if obj.contact_lab.role == "ACTIVE" and rng.random() < 0.7:  # active bodies must not be parented at all
        obj.contact_lab.role = "PASSIVE"


def _keyed_scale(rng, bpy, scene, bodies):
    """A body's scale keyed fine at the start and zero, negative or flat at the end of the range."""
    obj = _body(rng, bodies)
    s = scene.contact_lab
    obj.keyframe_insert("scale", frame=s.frame_start)
    obj.scale = pick(rng, ((1.0, 1.0, 0.0), (0.0, 0.0, 0.0), (1.0, -1.0, 1.0), (1.0, 1.0, 3.0)))
    obj.keyframe_insert("scale", frame=s.frame_end)
    scene.frame_set(s.frame_start)
    if rng.random() < 0.5 and obj.contact_lab.role == "ACTIVE":
        obj.contact_lab.role = "PASSIVE"


def _raw_setting(rng, bpy, scene, bodies):
    """A setting out of its range, set from Python as an ID property (Blender clamps the panel, not this)."""
    c, s = _body(rng, bodies).contact_lab, scene.contact_lab
    owner, name, value = pick(rng, ((c, "friction", -1.0), (c, "restitution", 2.0), (c, "linear_damping", 2.0),
                                    (c, "angular_damping", -1.0), (c, "damping", -1.0), (s, "substeps", 0),
                                    (s, "iterations", 0), (s, "tolerance", -1.0), (s, "soft_substeps", 0),
                                    (s, "ipc_max_iterations", 0), (c, "mass", -2.0)))  # fmt: skip
    owner[name] = value


DEFECTS = {
    "mesh": _bad_mesh,
    "not_a_mesh": _not_a_mesh,
    "scale": _scale,
    "transform": _transform,
    "settings": _settings,
    "role_or_shape": _role_or_shape,
    "engine": _engine,
    "frames": _frames,
    "scene": _scene,
    "friction": _friction,
    "overlap": _overlap,
    "parent": _parent,
    "round_scale": _round_scale,
    "edges_mesh": _edges_mesh,
    "shear": _shear,
    "keyed_scale": _keyed_scale,
    "raw_setting": _raw_setting,
}
"""Ways a scene goes wrong, each a function ``(rng, bpy, scene, bodies)`` changing it in place."""


# the worker -----------------------------------------------------------------------------------------------------


def run_case(case: int, folder: str) -> dict:
    """Build, validate and bake case ``case`` in a fresh factory scene; the outcome as a JSON-able dict."""
    import bpy
    import contact_lab
    from contact_lab.addon.bake import driver as bake
    from contact_lab.addon.checks import validate
    from contact_lab.addon.errors import BakeError

    seed = BASE_SEED + case
    contact_lab.unregister()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    contact_lab.register()
    start = time.perf_counter()
    result = {"case": case, "seed": seed, "outcome": "", "message": ""}
    rng = np.random.default_rng(seed)
    result.update(build_scene(rng, bpy, folder))
    scene = bpy.context.scene
    try:
        findings = validate.validate_scene(scene)
    except Exception:  # noqa: BLE001 — any exception here is what the test looks for
        result.update(outcome="validate-crash", message=traceback.format_exc())
        return _timed(result, start)
    errors = [f.text for f in findings if f.level == "ERROR"]
    jobs = []
    start_bake = bake.start_bake
    bake.start_bake = lambda *args, **kwargs: jobs.append(start_bake(*args, **kwargs)) or jobs[-1]
    try:
        report = bake.bake_scene(scene)
    except BakeError as exc:
        message = str(exc).strip()
        result.update(outcome=_refusal(message, errors), message=message)
    except Exception:  # noqa: BLE001
        result.update(outcome="crash", message=traceback.format_exc())
    else:
        if errors:
            result.update(outcome="inconsistent", message=f"baked although the validation found: {errors[0]}")
        else:
            unconverged = unconverged_steps(report, jobs[0].per_frame_stats())
            warned = any("did not converge" in w for w in report.get("warnings", []))
            if unconverged and not warned:
                result.update(outcome="silent-garbage", message=f"{unconverged} without a 'did not converge' warning")
            else:
                result.update(outcome="baked", message="; ".join(report.get("warnings", [])[:2]))
    finally:
        bake.start_bake = start_bake
    return _timed(result, start)


def _refusal(message: str, errors: list[str]) -> str:
    """The outcome of a bake that raised a BakeError with ``message``, ``errors`` being the validation's ERRORs:
    'refused' (Check Scene named an error first), 'diverged' (the simulation blew up: not an input refusal, and
    said loudly), 'refused-late' (the bake refused input that Check Scene let through) or 'empty-message'."""
    if not message:
        return "empty-message"
    if errors:
        return "refused"
    return "diverged" if message.startswith("Simulation diverged") else "refused-late"


def unconverged_steps(report: dict, per_frame: dict) -> str:
    """What of a finished Soft or IPC bake did not converge, read from its report and per-frame stats ('' when all
    did): the per-frame ``converged`` flags where the bake records them, else ``stats.unconverged_frames``.

    A Rigid bake is judged by its divergence check alone ('diverged'): its contact solvers run a fixed iteration
    budget per step, as Bullet's do, and the projected ones (PGS, PROX, the default) keep every iterate inside the
    friction cone, so a solve stopped at the cap is a less exact impulse, not garbage; the report counts such
    frames (``stats.capped_frames``) without a warning, which would stand on every stack."""
    if report.get("engine") == "RIGID":
        return ""
    if "converged" in per_frame:
        count = int(np.count_nonzero(~np.asarray(per_frame["converged"][1:], dtype=bool)))
        return f"{count} unconverged frame(s)" if count else ""
    count = int(report.get("stats", {}).get("unconverged_frames", 0))
    return f"{count} unconverged frame(s)" if count else ""


def _timed(result: dict, start: float) -> dict:
    result["seconds"] = round(time.perf_counter() - start, 3)
    return result


def warm_up(folder: str) -> None:
    """One valid bake per engine, so that Numba's loading (or compiling) is not charged to a case."""
    import bpy
    import contact_lab
    from contact_lab.addon.bake import driver as bake

    for engine in ("RIGID", "SOFT", "IPC"):
        start = time.perf_counter()
        contact_lab.unregister()
        bpy.ops.wm.read_factory_settings(use_empty=True)
        contact_lab.register()
        scene = bpy.context.scene
        scene.contact_lab.engine = engine
        scene.contact_lab.frame_start, scene.contact_lab.frame_end = 1, 3
        verts, faces = _cube(0.4)
        for name, z, role, shape in (("Ground", 0.0, "PASSIVE", "PLANE"), ("Body", 0.5, "ACTIVE", "BOX")):
            data = bpy.data.meshes.new(name)
            data.from_pydata(verts, [], faces)
            obj = bpy.data.objects.new(name, data)
            scene.collection.objects.link(obj)
            obj.location.z = z
            obj.contact_lab.role = "SOFT" if engine != "RIGID" and role == "ACTIVE" else role
            obj.contact_lab.shape = shape
            obj.contact_lab.lattice_resolution = 2
        bake.bake_scene(scene)
        print("FUZZ " + json.dumps({"warm": engine, "seconds": round(time.perf_counter() - start, 3)}), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=0, help="first case number")
    parser.add_argument("--count", type=int, default=1, help="number of cases")
    parser.add_argument("--folder", help="scratch folder for PC2 caches (default: a temporary one)")
    parser.add_argument("--warm", action="store_true", help="bake one valid scene per engine first")
    parser.add_argument("--verbose", action="store_true", help="print the findings of each case")
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds per case before dumping stacks and exiting")
    args = parser.parse_args(argv)
    folder = args.folder or tempfile.mkdtemp(prefix="contact_lab_fuzz_")
    if args.warm:
        warm_up(folder)
    for case in range(args.first, args.first + args.count):
        if args.timeout:  # a hang: print every thread's stack to stderr and exit (the watchdog needs no GIL)
            faulthandler.dump_traceback_later(args.timeout, exit=True)
        result = run_case(case, folder)
        faulthandler.cancel_dump_traceback_later()
        if args.verbose:
            print(json.dumps(result, indent=2), flush=True)
        print("FUZZ " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
