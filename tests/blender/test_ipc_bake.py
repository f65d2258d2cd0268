"""IPC bakes through real Blender, compared with the core IPC simulation run directly.

Each scene is exported once by :func:`contact_lab.addon.ipc.gather.export_ipc_scene`; the export itself is
checked against independently built data (the lattice of the mesh, the evaluated collider mesh posed by the
object's world matrix, the scene's settings in metres), and its world is simulated with ``iter_simulate_ipc``
directly, the embedding applied with numpy. The bake must write exactly those positions (float32 storage).
Scenes are tiny (a 4-cell lattice, 12 frames) so the tier stays fast on three Blenders.
"""

import json
import math
import types

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from contact_lab.addon.errors import BakeError  # noqa: E402
from contact_lab.addon.ipc import gather as ipc_export  # noqa: E402
from contact_lab.addon.soft import gather as soft_export  # noqa: E402
from contact_lab.core.fem.lattice import tetrahedralize_lattice  # noqa: E402
from contact_lab.core.fem.world import ColliderKind  # noqa: E402
from contact_lab.core.ipc.frame_loop import iter_simulate_ipc  # noqa: E402
from contact_lab.core.ipc.ipc_solver import IpcSolver  # noqa: E402
from contact_lab.core.soft import frame_loop as soft_frame_loop  # noqa: E402
from mesh_readback import evaluated_world, mesh_arrays, scene_state  # noqa: E402

try:
    import ipctk
except ImportError:  # the bpy 4.2 and 5.2 tiers install no test peers
    ipctk = None

pytestmark = pytest.mark.blender

TOL = 1e-6
"""Positions [m]: the bake against the direct core run (float32 shape keys of ~0.2 m coordinates)."""

FRAMES = 12
RESOLUTION = 4
CUBE = 0.12
"""Soft cube edge [m]."""


# scene building ----------------------------------------------------------------------------------------


def add_soft_cube(name="Jelly", location=(0.0, 0.0, 0.11), size=CUBE):
    """A Flesh-preset soft cube (E 1e5 Pa) with a 4-cell lattice."""
    bpy.ops.mesh.primitive_cube_add(size=size, location=location)
    obj = bpy.context.object
    obj.name = name
    s = obj.contact_lab
    s.role = "SOFT"
    s.soft_preset = "FLESH"
    s.lattice_resolution = RESOLUTION
    return obj


def ipc_scene(frame_end=FRAMES):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frame_end
    s = scene.contact_lab
    s.engine = "IPC"
    s.check_intersections = True
    return scene


def add_bowl(name="Bowl", radius=0.25, segments=16, rings=5):
    """A hemispherical bowl (open at the top, pole at the bottom) as a passive Mesh collider.

    Placed with a non-uniform scale (1.2, 1.2, 0.8), turned about Z and smoothed by a Subdivision modifier, so
    the export must read the *evaluated* mesh and bake the scale into it. The bottom is near z = 0.05.
    """
    vertices = [(0.0, 0.0, -radius)]
    for i in range(1, rings + 1):
        phi = -0.5 * math.pi * (1.0 - i / rings)
        for j in range(segments):
            theta = 2.0 * math.pi * j / segments
            vertices.append((radius * math.cos(phi) * math.cos(theta), radius * math.cos(phi) * math.sin(theta),
                             radius * math.sin(phi)))  # fmt: skip
    faces = [(0, 1 + j, 1 + (j + 1) % segments) for j in range(segments)]
    for i in range(rings - 1):
        a, b = 1 + i * segments, 1 + (i + 1) * segments
        faces += [(a + j, b + j, b + (j + 1) % segments, a + (j + 1) % segments) for j in range(segments)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(vertices, [], faces)
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = (0.0, 0.0, 0.25)
    obj.scale = (1.2, 1.2, 0.8)
    obj.rotation_euler = (0.0, 0.0, 0.3)
    obj.modifiers.new("Subdivision", "SUBSURF").levels = 1
    obj.contact_lab.role = "PASSIVE"
    obj.contact_lab.shape = "MESH"
    return obj


def core_run(export):
    """Simulate the export's IPC world directly; the soft body's render vertices per frame (F, V, 3) [BU]."""
    (body,) = export.bodies
    corners = body.tet_indices[body.embed_tet]  # (V, 4)
    out = []
    for _, state in iter_simulate_ipc(
        export.ipc_world,
        frame_count=export.frame_count,
        fps=export.fps,
        settings=export.ipc_settings(),
        pin_tracks=export.pin_tracks,
        collider_tracks=export.ipc_collider_tracks,
    ):
        x = state.x[export.world.body_node_start[body.body_index] :]
        out.append(np.einsum("vj,vjk->vk", body.embed_weights, x[corners]))
    return np.array(out) / export.length_scale


def baked_world(obj, frames):
    return np.array([evaluated_world(obj, f) for f in frames])


# tests --------------------------------------------------------------------------------------------------------


def test_drop_on_a_plane_matches_the_core_and_never_penetrates(lab):
    """A soft cube dropped 5 cm onto a Plane collider: the shape keys equal the direct core run (1e-6 m), the
    cube ends resting within a few dhat above the plane without ever crossing it, the checker finds nothing."""
    scene = ipc_scene()
    lab.add_ground(size=2.0)
    cube = add_soft_cube()
    scene.frame_set(1)
    export = ipc_export.export_ipc_scene(scene)
    # the export is the soft engine's world (lattice of the mesh at the object's place) plus the tessellated plane
    local, tris = mesh_arrays(cube)
    lattice = tetrahedralize_lattice(local, tris, resolution=RESOLUTION)  # IPC follows Lattice Fit (Fitted)
    (body,) = export.bodies
    rest = export.world.node_rest[export.world.body_node_start[0] : export.world.body_node_start[1]]
    np.testing.assert_allclose(rest, lattice.tet_vertices + np.array(cube.location), atol=1e-12, rtol=0)
    world = export.ipc_world
    assert world.collider_names == ["Ground"] and world.collider_kind[0] == ColliderKind.STATIC
    assert export.ipc_collider_tracks == {} and export.pin_tracks == {}
    dhat = export.resolved_dhat()
    assert dhat == pytest.approx(IpcSolver(world, export.ipc_settings()).dhat, rel=1e-15)  # the core's rule
    expected = core_run(export)

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    frames = range(1, FRAMES + 1)
    baked = baked_world(cube, frames)
    np.testing.assert_allclose(baked, expected, atol=TOL, rtol=0)
    lowest = baked[:, :, 2].min(axis=1)
    assert lowest[0] - lowest[-1] > 0.045  # it fell the 5 cm
    assert (lowest > 0.0).all() and lowest[-1] < 3.0 * dhat  # resting on the barrier, never through the plane
    report = json.loads(scene.contact_lab.last_report)
    assert report["status"] == "FINISHED" and report["engine"] == "IPC"
    assert report["bodies"] == {"soft": ["Jelly"], "active": [], "passive": ["Ground"]}
    settings, stats = report["settings"], report["stats"]
    assert settings["dhat"] == pytest.approx(dhat, rel=1e-12) and settings["dhat_automatic"]
    assert settings["kappa_automatic"] and settings["eps_v"] == pytest.approx(1e-3)
    assert (stats["intersections"], stats["inverted"], stats["checked_frames"]) == (0, 0, FRAMES)
    assert 0.0 < stats["min_distance"] < dhat and stats["max_kappa"] > 0.0 and stats["max_contacts"] > 0
    assert stats["max_newton_iterations"] >= stats["mean_newton_iterations"] > 0
    # Newton statistics over every solver step of every frame (the halvings' thrown-away solves included)
    assert stats["newton_solves"] == stats["solver_steps"] + stats["halved_steps"] >= FRAMES - 1
    assert stats["newton_iterations"] >= stats["newton_solves"]
    assert stats["mean_newton_iterations"] == pytest.approx(stats["newton_iterations"] / stats["newton_solves"])
    assert stats["tets"] == lattice.tet_count and stats["render_vertices"] == 8

    from contact_lab.panels import physics

    layout = lab.FakeLayout()
    physics.CONTACT_LAB_PT_scene.draw(types.SimpleNamespace(layout=layout), bpy.context)
    assert {"engine", "soft_output", "soft_substeps", "ipc_dhat", "check_intersections"} <= set(layout.props())
    assert (
        f"Intersection check: 0 surfaces passing through, 0 tets turned inside out, in {FRAMES} frames"
        in layout.labels()
    )


def test_mesh_collider_bowl(lab):
    """A concave Mesh collider (a subdivided, non-uniformly scaled bowl): the export poses its evaluated
    triangles exactly where Blender shows them; the cube falls into it, the bake equals the core run, the
    checker finds nothing. Animating the bowl makes it a kinematic collider with its track."""
    scene = ipc_scene()
    bowl = add_bowl()
    cube = add_soft_cube(location=(0.0, 0.0, 0.17))
    scene.frame_set(1)
    export = ipc_export.export_ipc_scene(scene)
    world = export.ipc_world
    (record,) = export.mesh_colliders
    k = record.collider_index
    assert world.collider_names[k] == "Bowl" and world.collider_soft_index[k] == -1
    assert world.collider_kind[k] == ColliderKind.STATIC
    shown = evaluated_world(bowl, 1)  # the subdivided mesh, scaled and turned
    assert len(shown) > len(bowl.data.vertices)
    posed = world.collider_vertices(k, world.collider_position[k], world.collider_orientation[k])
    np.testing.assert_allclose(posed, shown, atol=1e-6, rtol=0)
    bottom = shown[:, 2].min()
    expected = core_run(export)

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    baked = baked_world(cube, range(1, FRAMES + 1))
    np.testing.assert_allclose(baked, expected, atol=TOL, rtol=0)
    lowest = baked[:, :, 2].min(axis=1)
    assert lowest[0] - lowest[-1] > 0.03 and (lowest > bottom).all()  # it fell into the bowl, not through it
    report = json.loads(scene.contact_lab.last_report)
    assert report["bodies"]["passive"] == ["Bowl"]
    stats = report["stats"]
    assert (stats["intersections"], stats["inverted"], stats["checked_frames"]) == (0, 0, FRAMES)
    assert 0.0 < stats["min_distance"] < report["settings"]["dhat"]  # it touched the bowl

    # animated: kinematic, with its track under the IPC collider index; an animated scale is refused
    bowl.keyframe_insert("location", frame=1)
    bowl.location.z += 0.1
    bowl.keyframe_insert("location", frame=FRAMES)
    scene.frame_set(1)
    export = ipc_export.export_ipc_scene(scene)
    k = export.mesh_colliders[0].collider_index
    assert export.ipc_world.collider_kind[k] == ColliderKind.KINEMATIC
    positions, quaternions = export.ipc_collider_tracks[k]
    assert positions.shape == (FRAMES, 3) and quaternions.shape == (FRAMES, 4)
    np.testing.assert_allclose(positions[[0, -1], 2], [0.25, 0.35], atol=1e-6)
    np.testing.assert_allclose(np.abs(quaternions[:, [0, 3]]), [[math.cos(0.15), math.sin(0.15)]] * FRAMES, atol=1e-6)
    bowl.keyframe_insert("scale", frame=1)
    bowl.scale = (1.0, 1.0, 1.0)
    bowl.keyframe_insert("scale", frame=FRAMES)
    with pytest.raises(BakeError, match="'Bowl': its scale changes at frame 2"):
        ipc_export.export_ipc_scene(scene)


def test_intersecting_start_is_a_clean_error(lab, monkeypatch):
    """A soft cube already through the plane at the start: the validation refuses it before anything runs, and
    without the validation the core's exact check does, with a clean error naming the problem, nothing written;
    the Soft engine refuses a Mesh collider with a message pointing to IPC."""
    from contact_lab.addon.bake import driver as addon_bake

    scene = ipc_scene(frame_end=4)
    lab.add_ground(size=2.0)
    add_soft_cube(location=(0.0, 0.0, 0.02))  # its bottom 4 cm below the plane
    scene.frame_set(1)
    before = scene_state(scene)
    with pytest.raises(RuntimeError, match="'Jelly' and 'Ground' overlap by 4 cm at frame 1: IPC cannot start"):
        bpy.ops.contact_lab.bake()
    assert scene_state(scene) == before

    monkeypatch.setattr(addon_bake, "check_before_bake", lambda *args, **kwargs: [])
    with pytest.raises(RuntimeError, match="IPC needs a start without contact or intersection") as info:
        bpy.ops.contact_lab.bake()
    assert "Move the objects apart at frame 1" in str(info.value) and "nothing was changed" in str(info.value)
    assert "surfaces intersect" in str(info.value) and "Jelly" in str(info.value)
    assert scene_state(scene) == before and len(bpy.data.shape_keys) == 0
    report = json.loads(scene.contact_lab.last_report)
    assert report["status"] == "FAILED" and report["frames"]["simulated"] == 0

    add_bowl()
    scene.contact_lab.engine = "SOFT"
    scene.frame_set(1)  # evaluate the new object's world matrix
    before = scene_state(scene)
    with pytest.raises(
        RuntimeError, match="'Bowl': the Mesh shape is a collider of the Rigid and IPC engines, the Soft engine cannot"
    ):
        bpy.ops.contact_lab.bake()
    assert scene_state(scene) == before


def test_settings_round_trip_in_scene_units(lab):
    """With 1 BU = 1 cm, a Barrier Distance of 0.05 BU is 0.5 mm in the solver and the report; the other IPC
    settings reach the solver unchanged and the bake still equals the core run (in BU)."""
    scene = ipc_scene(frame_end=3)
    scene.unit_settings.scale_length = 0.01
    s = scene.contact_lab
    s.ipc_dhat, s.ipc_kappa, s.ipc_eps_v, s.ipc_tolerance, s.ipc_max_iterations = 0.05, 2.0e5, 2e-3, 5e-4, 50
    s.soft_substeps = 1
    lab.add_ground(size=200.0)
    cube = add_soft_cube(location=(0.0, 0.0, 30.0), size=100.0 * CUBE)
    scene.frame_set(1)
    export = ipc_export.export_ipc_scene(scene)
    settings = export.ipc_settings()
    assert settings.dhat == pytest.approx(5e-4, rel=1e-6) and export.resolved_dhat() == settings.dhat
    assert (settings.kappa, settings.max_iterations, settings.substeps) == (pytest.approx(2.0e5), 50, 1)
    assert (settings.eps_v, settings.tolerance) == (pytest.approx(2e-3), pytest.approx(5e-4))
    assert settings.check_intersections
    expected = core_run(export)

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    np.testing.assert_allclose(baked_world(cube, (1, 2, 3)), expected, atol=TOL / 0.01, rtol=0)
    assert expected[0, :, 2].min() - expected[-1, :, 2].min() > 0.5  # falling [BU = cm]
    report = json.loads(scene.contact_lab.last_report)
    assert report["settings"]["dhat"] == pytest.approx(5e-4, rel=1e-6) and not report["settings"]["dhat_automatic"]
    assert report["settings"]["kappa"] == pytest.approx(2.0e5) and not report["settings"]["kappa_automatic"]
    assert report["unit_scale"] == pytest.approx(0.01) and report["stats"]["min_distance"] is None  # no contact


def test_thrown_cube_starts_with_its_initial_velocity(lab):
    """``initial_velocity`` (scene units per second) reaches every node in m/s; in free flight the baked
    centroid moves by v t + g t²/2 (backward Euler: the discrete sum), exactly as the core run."""
    scene = ipc_scene(frame_end=4)
    scene.unit_settings.scale_length = 0.5  # 1 BU = 0.5 m
    cube = add_soft_cube(location=(0.0, 0.0, 2.0))
    cube.contact_lab.initial_velocity = (3.0, 0.0, 1.0)  # BU/s
    scene.frame_set(1)
    export = ipc_export.export_ipc_scene(scene)
    np.testing.assert_allclose(export.world.node_velocity, np.tile([1.5, 0.0, 0.5], (export.world.node_count, 1)))
    expected = core_run(export)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    baked = baked_world(cube, range(1, 5))
    np.testing.assert_allclose(baked, expected, atol=TOL, rtol=0)
    h = 1.0 / (scene.render.fps * scene.contact_lab.soft_substeps)
    steps = np.arange(4) * scene.contact_lab.soft_substeps
    drop = 9.81 * h * h * steps * (steps + 1) / 2.0  # backward Euler: z_n = z_0 + v n h - g h² n(n+1)/2
    centroid = baked.mean(axis=1) * 0.5  # BU → m
    np.testing.assert_allclose(centroid[:, 0] - centroid[0, 0], 1.5 * h * steps, atol=1e-6)
    np.testing.assert_allclose(centroid[:, 2] - centroid[0, 2], 0.5 * h * steps - drop, atol=1e-6)


def _tops(export, states) -> np.ndarray:
    """The highest render vertex [m] of the export's one soft body in each of ``states`` (node positions)."""
    (body,) = export.bodies
    corners = body.tet_indices[body.embed_tet]
    start = export.world.body_node_start[body.body_index]
    return np.array([np.einsum("vj,vjk->vk", body.embed_weights, x[start:][corners])[:, 2].max() for x in states])


def test_the_default_cube_rests_on_its_face_as_with_the_soft_engine(lab):
    """Blender's default cube (8 vertices, 2 m) dropped 10 cm onto the ground: IPC holds it by its faces, split 6 × 6
    (edges of at most two lattice cells: 8 + 12 × 5 + 6 × 25 points), so over its third second its top stays within
    2 cm of the Soft engine's (with the mesh's
    own triangles alone it stood on its corners, its lattice sagging between them). The
    split surface is closed; the bake, with its intersection check on every frame, finishes, and (where the IPC
    Toolkit is installed) ipctk's continuous collision check finds no crossing in any solver step."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 73
    lab.add_ground(size=20.0)
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=(0.0, 0.0, 1.1))
    cube = bpy.context.object
    cube.contact_lab.role = "SOFT"
    scene.frame_set(1)
    scene.contact_lab.engine = "SOFT"
    soft = soft_export.export_soft_scene(scene)
    run = soft_frame_loop.iter_simulate(soft.world, frame_count=73, fps=soft.fps, settings=soft.solver_settings())
    traj = list(run)[-1][1]
    soft_tops = _tops(soft, traj.node_pos)
    scene.contact_lab.engine = "IPC"
    scene.contact_lab.check_intersections = True
    ipc = ipc_export.export_ipc_scene(scene)
    world = ipc.ipc_world
    start, end = world.body_vertex_range[0]
    faces = world.faces[(world.faces >= start).all(axis=1) & (world.faces < end).all(axis=1)]
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    assert end - start == 218 and len({tuple(e) for e in edges.tolist()}) == len(edges)
    assert {tuple(e) for e in edges[:, ::-1].tolist()} == {tuple(e) for e in edges.tolist()}  # closed
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}  # every frame checked for intersections
    ipc_tops = baked_world(cube, range(1, 74))[:, :, 2].max(axis=1)
    if ipctk is not None:  # the same run, every solver step's motion through ipctk's continuous collision check
        mesh = ipctk.CollisionMesh(world.surface_rest, world.edges, world.faces)
        ccd = ipctk.TightInclusionCCD(1e-6, 10_000_000, 1.0)  # contact only, no conservative margin
        crossing = []

        def audit(x0, x1):
            xs0, xs1 = world.surface_positions(x0), world.surface_positions(x1)
            crossing.append(not ipctk.is_step_collision_free(mesh, xs0, xs1, narrow_phase_ccd=ccd))

        for _ in iter_simulate_ipc(world, frame_count=73, fps=ipc.fps, settings=ipc.ipc_settings(), on_step=audit):
            pass
        assert len(crossing) >= 72 * ipc.ipc_settings().substeps and not any(crossing)
    third = slice(49, 73)
    print(f"top over the third second: soft {soft_tops[third].mean():.4f} m, IPC {ipc_tops[third].mean():.4f} m")
    assert abs(ipc_tops[third].mean() - soft_tops[third].mean()) < 0.02
    assert ipc_tops.min() > 1.7  # it never sagged onto its corners
