"""The geometric checks of :mod:`.validate`: sizes, mass ratios, overlaps at the start frame, lattice sizes.

Every threshold comes from a constant the engines really use, or from a measurement stated next to it:

- **Tiny bodies.** The rigid solver leaves up to ``DEFAULT_PENETRATION_SLOP`` = 0.5 mm of penetration uncorrected
  and generates contacts from ``DEFAULT_CONTACT_MARGIN`` = 1 cm away. A body thinner than the slop sinks out of
  sight (measured: a 0.1 mm box ends 90 % inside the ground, a 1 µm one falls through it; a 1 mm box rests
  correctly): an error; thinner than ten slops (5 mm) it can sink by a tenth of its size: a warning. The soft
  engine's penalty contact starts at its contact thickness (automatic: 0.5 % of the smallest soft body, at least
  0.1 mm) and IPC's barrier at ``dhat`` (automatic: 1/1000 of the soft bodies' bounding-box diagonal): a body
  hovers that far above what it rests on, a warning from 1 % of its size on, an error from 10 % (measured: a
  0.5 mm soft cube rests more than 0.1 mm above the ground). A thickness or barrier the user set is a choice
  up to 10 %; above it an error too (reported on Blender 5.2: a Soft Contact Thickness of 5 m took more than two
  minutes on frame 1, 1 km baked for 234 s and ended kilometres wide).
- **Huge bodies.** Gravity does not scale: a body 1 km across falls its own height in 14 s, which reads as slow
  motion, the usual sign of a scene modelled in centimetres or millimetres with a Unit Scale of 1 (a warning).
  Blender keeps transforms and keyframes in single precision: from 2²³ × 0.5 mm ≈ 4.2 km from the origin on their
  spacing is about the rigid slop (0.49 mm there, 0.98 mm from 8.4 km) and resting contacts jitter (a warning).
- **Mass ratios.** Measured with PROX at 100 iterations, a box resting on another for 1 s: 100:1 moves the stack
  by 1 cm, 300:1 by 4 cm, 1000:1 by 42 cm, 10⁴:1 sinks the heavy box 23 cm into the light one (PGS: 1 cm at
  1000:1). Only bodies that touch matter (each contact island is solved on its own: a 10⁵ kg box rests next to
  a 1 kg one 30 m away as it does alone). Two active bodies more than 100:1 apart are a warning (naming the pair
  that touches at the start, else the heaviest and the lightest, which may meet); more than 10⁴:1 while already
  within the contact margin of each other, an error.
- **Overlaps.** The rigid solver pushes overlapping bodies apart by 20 % of the depth beyond the slop per substep
  (measured at 24 fps, 4 substeps: 2 mm of overlap moves a box 3 mm, 5 cm throws it at 0.5 m/s, 20 cm at 2 m/s),
  so an overlap deeper than two slops (1 mm) is a warning; the IPC engine refuses any intersection, and surfaces
  that touch without a gap (an error).
- **Lattices.** A soft body's lattice has about ``6 (V/h³ + A/h²)`` tets for a mesh of volume V and area A at cell
  size h (:func:`estimate_lattice`). Its memory and time follow from the costs per tet that
  ``tests/benchmarks/bench_default_cube.py`` prints for the default cube (:data:`BYTES_PER_TET`,
  :data:`SECONDS_PER_TET_SUBSTEP`; more time with many contacts). Above :data:`LATTICE_TET_WARNING` tets a warning,
  above :data:`LATTICE_TET_LIMIT` an error: the bake would need gigabytes and minutes per frame (resolution 64 on a
  cube is 1.7 million tets, about 10 GB).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core import config
from ...core.fem.lattice import closed_mesh_volume
from .. import units
from ..rigid.gather import collision_mask
from ..rigid.joints import constraint_objects
from ..scene import evaluated_at, local_box, mesh_arrays, signed_volume
from . import ipc_start as start_check
from . import overlap
from .findings import Finding, SceneView, error, info, warning

SLOP = config.DEFAULT_PENETRATION_SLOP
"""Penetration the rigid solver leaves uncorrected [m] (0.5 mm)."""

MARGIN = config.DEFAULT_CONTACT_MARGIN
"""Distance from which the rigid engine generates contacts [m] (1 cm)."""

TINY_ERROR = SLOP
"""Rigid: a body thinner than this [m] can sink out of sight through the slop."""

TINY_WARNING = 10.0 * SLOP
"""Rigid: a body thinner than this [m] can sink by a tenth of its size."""

SOFT_MIN_THICKNESS = 1.0e-4
"""The soft engine's smallest automatic contact thickness [m] (``resolved_contact_thickness``'s floor)."""

SOFT_THICKNESS_FRACTION = 0.005
"""The soft engine's automatic contact thickness as a fraction of the smallest soft body's extent."""

IPC_DHAT_FRACTION = 1.0e-3
"""IPC's automatic barrier distance as a fraction of the soft bodies' bounding-box diagonal."""

HOVER_WARNING = 0.01
"""A contact layer (soft thickness, IPC dhat) above this fraction of a body's size shows as a gap: a warning."""

HOVER_ERROR = 0.1
"""...and above this fraction the body visibly floats: an error."""

HUGE_SIZE = 1000.0
"""A body larger than this [m] moves in slow motion under real gravity (a warning)."""

FAR = 2.0**23 * SLOP
"""Distance from the origin [m] beyond which single-precision positions are spaced about the slop apart (4.2 km)."""

MASS_RATIO_WARNING = 100.0
"""Two active bodies more than this mass ratio apart: a warning (measured: 1 cm of error at 100:1, PROX)."""

MASS_RATIO_ERROR = 1.0e4
"""Two active bodies within the contact margin of each other more than this ratio apart: an error."""

OVERLAP_TOLERANCE = 2.0 * SLOP
"""Rigid and soft engines: overlaps deeper than this [m] are reported (1 mm)."""

IPC_OVERLAP_TOLERANCE = 1.0e-6
"""IPC engine: any overlap deeper than this [m] (numerical noise) is an error: IPC cannot start from it."""

IPC_TOUCH_GAP = 1.0e-9
"""IPC engine: surfaces closer than this [m] count as touching, which IPC refuses too (a body snapped onto the
ground). Judged only where the depth is exact (a plane, box–box, sphere–sphere, sphere–box): elsewhere the
overlap test's depth is a lower bound, 0 for a near miss."""

EXACT_DEPTH_KINDS = frozenset({("BOX", "BOX"), ("SPHERE", "SPHERE"), ("SPHERE", "BOX"), ("BOX", "SPHERE")})

LATTICE_TET_WARNING = 100_000
"""Tets of all soft bodies together above which the bake is slow (Soft engine: about 11 s per frame at 2 substeps,
see :func:`seconds_per_frame`): a warning."""

LATTICE_TET_LIMIT = 1_000_000
"""Tets above which the bake is refused: about 5.5 GB and minutes per frame."""

THIN_CELLS = 2.0
"""Lattice cells across a soft body's thinnest side below which Check Scene warns: one layer of linear tets locks
in bending, so a thin beam or sheet bends far less than its material would let it (a 10:1 beam at one cell across
sags by under a tenth of Euler–Bernoulli's deflection)."""
THIN_ADVICE_CELLS = 4
"""Cells across the thinnest side that the warning's fix asks for."""

BYTES_PER_TET = {"SOFT": 5500.0, "IPC": 1000.0}
"""Peak memory per tet of a bake [B], as ``tests/benchmarks/bench_default_cube.py`` prints it (Python's tracemalloc
over one more bake of the default cube: Soft 5.5 kB at 6,000, 5.3 kB at 35,000 and 5.1 kB at 105,000 tets; IPC,
its faces subdivided with 7 cuts, 1.0 kB and 0.8 kB). Arrays the compiled kernels allocate for themselves are not
traced."""

COST_REFERENCE_TETS = 6000
"""Tets of the default cube at the default Lattice Resolution (8): where :data:`SECONDS_PER_TET_SUBSTEP` is measured."""

SECONDS_PER_TET_SUBSTEP = {"SOFT": 16.0e-6, "IPC": 5.0e-6}
"""Simulation time per tet and solver step [s] at :data:`COST_REFERENCE_TETS` tets on an idle 2-core machine, as
``tests/benchmarks/bench_default_cube.py`` prints it (best warm run): the default cube resting on a plane, 16 µs
with the Soft engine (0.195 s per frame at 2 substeps) and, its faces subdivided with 7 cuts (``--cuts 7``) so
that IPC's contact rests on faces, 6.1 µs with IPC (0.074 s per frame) and 4.5 µs at 35,000 tets: 5 µs between
them. A lower bound: more with many contacts (the unsubdivided cube standing on its corners takes IPC 24 µs per tet
at 35,000 tets)."""

COST_GROWTH = {"SOFT": 0.43, "IPC": 0.0}
"""How the time per tet grows with the lattice: ``(tets / COST_REFERENCE_TETS) ** COST_GROWTH`` (the linear
solver needs more iterations on a finer lattice). Fitted to the benchmark's Soft runs: 16 µs at 6,000 tets, 35 µs at
35,000 (resolution 16), and it predicts the 57 µs measured at 105,000 (resolution 24, 8 frames) within 5 %; IPC's
subdivided cube shows no growth (6.1 µs and 4.5 µs)."""

WINDING_SECONDS_PER_PAIR = 15.0e-9
"""Lattice build: time per (cell, triangle) pair of the winding numbers [s] (``core.fem.lattice``)."""


# lattice estimate ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatticeEstimate:
    """The size of the lattice :func:`core.fem.lattice.tetrahedralize_lattice` would build, estimated."""

    cells: int
    """Occupied cells (each 6 tets)."""
    grid_cells: int
    """All cells of the grid, padding included (the most that can be occupied)."""
    cell_size: float
    """Cell edge h [mesh units]."""
    thinnest_cells: float = 0.0
    """Cells across the mesh's thinnest side along its own axes (the lattice's axes)."""

    @property
    def tets(self) -> int:
        return 6 * self.cells


def estimate_lattice(
    vertices: np.ndarray, triangles: np.ndarray, resolution: int, fitted: bool = True
) -> LatticeEstimate:
    """Estimate the lattice of a mesh without building it (no Numba, O(V + T)).

    The grid is the builder's (``resolution`` cells along the longest side, one padding layer). Occupied cells:
    those inside (volume V / h³) plus about one shell of cells cut by the surface (area A / h²), at most the grid;
    ``fitted`` (*Lattice Fit*) and a closed mesh: faces lying on cell planes add no shell, and no cell lies outside
    the grid's inner box (the fitted lattice ends at them; only they reach the padding layer).
    Against the builder's counts at resolutions 8–24 (cube, sphere, torus, flattened shapes) this is within
    −10 % to +120 % (thin slabs are over-estimated: their two sides share the cells).

    Args:
        vertices: (V, 3) mesh vertices, already scaled as the object is (any length unit).
        triangles: (T, 3) int.
        resolution: ``lattice_resolution``.
    """
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    resolution = max(int(resolution), 1)
    if vertices.shape[0] == 0:
        return LatticeEstimate(0, 0, 0.0)
    extent = np.ptp(vertices, axis=0)
    longest = float(extent.max())
    h = longest / resolution if longest > 0.0 else 1.0
    inner = np.maximum(np.ceil(extent / h - 1e-9), 1.0)
    grid = int(np.prod(inner + 2.0))
    volume, area, cap = 0.0, 0.0, grid
    if triangles.shape[0]:
        a, b, c = (vertices[triangles[:, k]] for k in range(3))
        volume = abs(float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum()) / 6.0)
        area = 0.5 * float(np.linalg.norm(np.cross(b - a, c - a), axis=1).sum())
        if fitted and np.isfinite(closed_mesh_volume(vertices, triangles)):
            area -= _area_on_cell_planes(vertices, triangles, inner, h)
            cap = int(np.prod(inner))
    cells = int(min(cap, np.ceil(volume / h**3 + area / h**2)))
    return LatticeEstimate(max(cells, 1), grid, h, float(extent.min()) / h)


def _area_on_cell_planes(vertices, triangles, inner, h) -> float:
    """Area of the triangles lying on a plane of the builder's grid (``lattice._grid``: centred on the bounding box)."""
    origin = 0.5 * (vertices.min(axis=0) + vertices.max(axis=0)) - 0.5 * inner * h
    corners = vertices[triangles]  # (T, 3 corners, 3)
    on_plane = np.zeros(triangles.shape[0], dtype=bool)
    for d in range(3):
        u = (corners[:, :, d] - origin[d]) / h
        on_plane |= (np.ptp(u, axis=1) < 1e-9) & (np.abs(u[:, 0] - np.rint(u[:, 0])) < 1e-9)
    a, b, c = corners[on_plane, 0], corners[on_plane, 1], corners[on_plane, 2]
    return 0.5 * float(np.linalg.norm(np.cross(b - a, c - a), axis=1).sum())


# gathering the bodies ---------------------------------------------------------------------------------------


@dataclass
class _Body:
    """One simulated object as the checks see it."""

    obj: Any
    """The ``bpy.types.Object`` (Any: its ``contact_lab`` settings are registered at run time, unknown to the stubs)."""
    role: str
    """'ACTIVE', 'PASSIVE' or 'SOFT'."""
    solids: list
    """Its :class:`.overlap.Solid` s (a compound's parts; none for a passive Mesh collider)."""
    dims: np.ndarray | None
    """Full size of its shape(s) along its axes [m], (3,); None where size does not matter (planes, Mesh colliders)."""
    mass: float = 0.0
    """[kg] (active and soft bodies)."""
    lattice: LatticeEstimate | None = None


def _decompose(matrix: np.ndarray):
    t, r, s, _ = (a[0] for a in units.decompose_matrices(np.asarray(matrix)[None]))
    return t, r, s


def _primitive(owner: int, obj, matrix: np.ndarray, metres: float, decomposed) -> overlap.Solid:
    """A primitive shape fitted to ``obj``'s bounding box (as :func:`.rigid.shapes.primitive_shape` fits it);
    ``decomposed`` = its matrix's ``(translation, rotation, scale)``."""
    shape = obj.contact_lab.shape
    t, r, s = decomposed
    if shape == "PLANE":
        return overlap.Solid(owner, "PLANE", t * metres, r, np.zeros(3))
    centre_local, size = local_box(obj)
    centre = (matrix @ np.append(centre_local, 1.0))[:3] * metres
    x, y, z = np.abs(s) * size * metres
    if shape == "BOX":
        return overlap.Solid(owner, "BOX", centre, r, 0.5 * np.array([x, y, z]))
    if shape == "SPHERE":
        radius = 0.5 * max(x, y, z)
        return overlap.Solid(owner, "SPHERE", centre, r, np.full(3, radius), radius=radius)
    radius = 0.5 * max(x, y)
    if shape == "CAPSULE":
        hh = max(0.5 * z - radius, 0.0)
        return overlap.Solid(owner, "CAPSULE", centre, r, np.array([radius, radius, hh + radius]), radius, hh)
    return overlap.Solid(owner, shape, centre, r, np.array([radius, radius, 0.5 * z]), radius, 0.5 * z)


def _meshed(owner: int, obj, matrix: np.ndarray, metres: float, kind: str, load) -> overlap.Solid:
    """A Convex Hull, Mesh or soft body: oriented box from the local bounding box, triangles read by ``load``."""
    t, r, s = _decompose(matrix)
    centre_local, size = local_box(obj) if kind != "SOFT" else _data_box(obj)
    centre = (matrix @ np.append(centre_local, 1.0))[:3] * metres
    solid = overlap.Solid(owner, "MESH" if kind == "SOFT" else kind, centre, r, 0.5 * np.abs(s) * size * metres)
    vertices, triangles = load(obj)
    solid.vertices = (vertices @ matrix[:3, :3].T + matrix[:3, 3]) * metres
    solid.triangles = triangles
    return solid


def _data_box(obj) -> tuple[np.ndarray, np.ndarray]:
    """Centre and size of a mesh's own vertices (before modifiers: what a soft body simulates) [BU]."""
    vertices, _ = mesh_arrays(obj.data)
    if vertices.shape[0] == 0:
        return np.zeros(3), np.zeros(3)
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    return 0.5 * (lo + hi), hi - lo


def _dims(solid: overlap.Solid) -> np.ndarray | None:
    if solid.kind == "PLANE":
        return None
    return 2.0 * np.asarray(solid.half_extents, dtype=np.float64)


def _bodies(view: SceneView, depsgraph) -> list[_Body]:
    """Every body of the view with its solids, size and mass, in the engine's order (active, passive, soft)."""
    metres = view.metres
    m = view.matrices or {}  # findings() calls this only when the matrices are there

    def evaluated(obj):
        mesh = obj.evaluated_get(depsgraph).to_mesh()
        try:
            return mesh_arrays(mesh)
        finally:
            obj.evaluated_get(depsgraph).to_mesh_clear()

    def solid_of(owner, obj):
        shape = obj.contact_lab.shape
        if shape in ("CONVEX_HULL", "MESH"):
            if obj.type != "MESH":
                return None
            return _meshed(owner, obj, m[obj.name], metres, "HULL" if shape == "CONVEX_HULL" else "MESH", evaluated)
        return _primitive(owner, obj, m[obj.name], metres, decomposed[obj.name])

    bodies: list[_Body] = []
    usable = [o for o in view.rigid if o.name in m]
    names = [o.name for o in usable] + [p.name for o in usable for p in view.parts.get(o.name, []) if p.name in m]
    decomposed = {}
    if names:  # one batched decomposition for all bodies and parts
        t, r, s, _ = units.decompose_matrices(np.stack([m[name] for name in names]))
        decomposed = {name: (t[k], r[k], s[k]) for k, name in enumerate(names)}
    for obj in usable:
        owner = len(bodies)
        shape, role = obj.contact_lab.shape, obj.contact_lab.role
        if shape == "COMPOUND":
            parts = [p for p in view.parts.get(obj.name, []) if p.name in m]
            solids = [s for s in (solid_of(owner, p) for p in parts) if s is not None]
            dims = None
        elif role == "PASSIVE" and shape == "MESH":
            solids, dims = [], None  # open surfaces (grounds, terrains): no inside to overlap, no size to judge
        else:
            solid = solid_of(owner, obj)
            solids = [solid] if solid is not None else []
            dims = _dims(solid) if solid is not None else None
        mass = float(obj.contact_lab.mass) if role == "ACTIVE" else 0.0
        bodies.append(_Body(obj, role, solids, dims, mass))
    for obj in view.soft:
        if obj.name not in m or obj.type != "MESH":
            continue
        owner = len(bodies)
        vertices, triangles = mesh_arrays(obj.data)
        if vertices.shape[0] < 4 or triangles.shape[0] == 0:
            continue  # the soft checks already refuse it
        solid = _meshed(owner, obj, m[obj.name], metres, "SOFT", lambda o, v=vertices, t=triangles: (v, t))
        world = solid.vertices
        assert world is not None  # _meshed set it
        scaled = vertices * np.linalg.norm(m[obj.name][:3, :3], axis=0)
        volume = abs(signed_volume(world, triangles))
        s = obj.contact_lab
        mass = float(s.density) * volume if np.isfinite(s.density) else 0.0
        estimate = estimate_lattice(scaled, triangles, int(s.lattice_resolution), str(s.lattice_fit) == "FITTED")
        bodies.append(_Body(obj, "SOFT", [solid], np.ptp(world, axis=0), mass, estimate))
    return bodies


# checks ------------------------------------------------------------------------------------------------------


def findings(view: SceneView) -> list[Finding]:
    """Sizes, mass ratios, overlaps and lattices of ``view``'s bodies (their start-frame matrices are in
    ``view.matrices``; objects in ``view.broken`` are left out)."""
    if not view.matrices:
        return []
    meshes = any(o.contact_lab.shape in ("CONVEX_HULL", "MESH") for o in view.rigid + sum(view.parts.values(), []))
    if meshes:  # hulls and meshes are read from the evaluated depsgraph at the start frame
        with evaluated_at(view.scene, view.start) as depsgraph:
            bodies = _bodies(view, depsgraph)
    else:
        bodies = _bodies(view, None)
    overlaps = _overlap_findings(view, bodies, _collides(view))
    return (
        _size_findings(view, bodies)
        + _mass_findings(view, bodies, _collides(view))
        + overlaps
        + start_check.findings(view, overlaps)  # IPC: mesh surfaces intersecting themselves or each other
        + _lattice_findings(view, bodies)
    )


def _size_findings(view: SceneView, bodies: list[_Body]) -> list[Finding]:
    out = []
    layer, explicit = _soft_layer(view, bodies)
    for body in bodies:
        if body.dims is None or body.role == "PASSIVE":
            continue  # a thin collider does not sink, and the size of a static world does not matter
        name, dims = body.obj.name, body.dims
        thinnest, largest = float(dims.min()), float(dims.max())
        if view.engine == "RIGID" and thinnest < TINY_WARNING:
            severe = thinnest < TINY_ERROR
            make = error if severe else warning
            out.append(
                make(
                    body.obj,
                    f"'{name}' is only {_length(thinnest)} thick: the rigid solver leaves up to "
                    f"{_length(SLOP)} of overlap uncorrected, so it "
                    + ("can sink out of sight or fall through the ground" if severe else "can sink by a tenth of it"),
                    _scale_fix(view, thinnest, TINY_WARNING),
                    "scale",
                )
            )
        elif view.engine != "RIGID" and layer > 0.0 and largest > 0.0:
            out += _hover_findings(view, body, largest, layer, explicit)
        if body.role != "PASSIVE" and largest > HUGE_SIZE:
            fall = np.sqrt(2.0 * largest / 9.81)
            out.append(
                warning(
                    body.obj,
                    f"'{name}' is {_length(largest)} across: under real gravity it falls its own height in {fall:.0f} "
                    "s, which looks like slow motion",
                    "if the scene is modelled in centimetres or millimetres, set Scene Properties ▸ Units ▸ Unit "
                    "Scale to 0.01 or 0.001 (or scale the scene down)",
                    "scene.unit_settings.scale_length",
                )
            )
        if body.role != "PASSIVE":
            centre = np.max([np.abs(s.centre).max() for s in body.solids]) if body.solids else 0.0
            if centre > FAR:
                spacing = _length(float(np.spacing(np.float32(centre))))
                out.append(
                    warning(
                        body.obj,
                        f"'{name}' is {_length(centre)} from the world origin: Blender stores positions in single "
                        f"precision, spaced about {spacing} apart there, so resting "
                        "contacts jitter",
                        "move the scene closer to the origin",
                        "location",
                    )
                )
    return out


def _hover_findings(view: SceneView, body: _Body, size: float, layer: float, explicit: bool) -> list[Finding]:
    """A soft-engine body hovering on its contact layer: automatic layers from 1 % of its size (warning) and 10 %
    (error); a layer the user set is their choice up to 10 %, an error above."""
    ratio = layer / size
    if ratio <= (HOVER_ERROR if explicit else HOVER_WARNING):
        return []
    what = "Barrier Distance" if view.engine == "IPC" else "Contact Thickness"
    name = body.obj.name
    if explicit:  # a layer the user set, over 10 % of the body: the body floats (the Soft engine at 5 m: minutes)
        return [
            error(
                body.obj,
                f"'{name}' is {_length(size)} across and the {what} set in Scene ▸ Contact Lab Bake is "
                f"{_length(layer)} ({ratio:.0%} of it): it would hover visibly above what it rests on",
                f"set a {what} below {_length(HOVER_WARNING * size)}, or 0 (automatic)",
                f"scene.contact_lab.{'ipc_dhat' if view.engine == 'IPC' else 'soft_contact_thickness'}",
            )
        ]
    make = error if ratio > HOVER_ERROR else warning
    return [
        make(
            body.obj,
            f"'{name}' is {_length(size)} across and the {view.engine.title()} engine's automatic {what.lower()} is "
            f"{_length(layer)} ({ratio:.0%} of it): it would hover visibly above what it rests on",
            _scale_fix(view, size, layer / HOVER_WARNING) + f", or set a smaller {what} in Scene ▸ Contact Lab Bake",
            "scale",
        )
    ]


def _soft_layer(view: SceneView, bodies: list[_Body]) -> tuple[float, bool]:
    """``(the soft engine's contact thickness or IPC's barrier distance this scene would use [m] (0: rigid),
    whether the user set it)``."""
    soft = [(b, b.dims) for b in bodies if b.role == "SOFT" and b.dims is not None]
    if view.engine == "RIGID" or not soft:
        return 0.0, False
    s = view.scene.contact_lab
    if view.engine == "IPC":
        if s.ipc_dhat > 0.0:
            return float(s.ipc_dhat) * view.metres, True
        points = np.concatenate([b.solids[0].vertices for b, _ in soft])
        return IPC_DHAT_FRACTION * float(np.linalg.norm(np.ptp(points, axis=0))), False
    if s.soft_contact_thickness > 0.0:
        return float(s.soft_contact_thickness) * view.metres, True
    return max(SOFT_MIN_THICKNESS, SOFT_THICKNESS_FRACTION * min(float(dims.max()) for _, dims in soft)), False


def _length(metres: float) -> str:
    """A length for messages, in the unit that reads best."""
    for unit, size, start in (("km", 1e3, 1e3), ("m", 1.0, 1.0), ("cm", 1e-2, 1e-2), ("mm", 1e-3, 1e-4)):
        if metres >= start:
            value = metres / size
            return f"{value:,.0f} {unit}" if value >= 1000.0 else f"{value:.3g} {unit}"
    return f"{metres * 1e6:.3g} µm"


def _scale_fix(view: SceneView, size: float, wanted: float) -> str:
    factor = wanted / size if size > 0.0 else np.inf
    unit = float(view.scene.unit_settings.scale_length)
    text = "scale the scene up (and the Unit Scale down by the same factor, so the physics stays in metres)"
    if np.isfinite(factor) and factor < 1e12:
        text += f": ×{factor:.3g} brings it to {_length(wanted)} (Unit Scale {unit / factor:.3g})"
    return text


def _collides(view: SceneView):
    """``collides(obj_a, obj_b)``: whether the engine lets the two bodies touch. The rigid engine keeps apart what
    Blender keeps apart: bodies without a shared Collision Collection, and bodies joined by an enabled Rigid Body
    Constraint with Disable Collisions (so neither overlaps nor mass ratios of such pairs are reported)."""
    if view.engine != "RIGID":
        return lambda a, b: True
    joined = set()
    for obj in constraint_objects(view.scene):
        c = obj.rigid_body_constraint
        if c.enabled and c.disable_collisions and c.object1 is not None and c.object2 is not None:
            joined.add(frozenset((c.object1.name, c.object2.name)))

    def collides(a, b) -> bool:
        return bool(collision_mask(a) & collision_mask(b)) and frozenset((a.name, b.name)) not in joined

    return collides


def _mass_findings(view: SceneView, bodies: list[_Body], collides) -> list[Finding]:
    moving = [b for b in bodies if b.role == "ACTIVE" and np.isfinite(b.mass) and b.mass > 0.0]
    if len(moving) < 2:
        return []
    masses = np.array([b.mass for b in moving])
    heavy, light = moving[int(masses.argmax())], moving[int(masses.argmin())]
    out = []
    touching = [(i, j) for i, j in _touching_pairs(moving) if collides(moving[i].obj, moving[j].obj)]
    for i, j in touching:
        ratio = _ratio(moving[i], moving[j])
        if ratio > MASS_RATIO_ERROR:
            a, b = sorted((moving[i], moving[j]), key=lambda body: -body.mass)
            out.append(
                error(
                    a.obj,
                    f"'{a.obj.name}' ({a.mass:.4g} kg) and '{b.obj.name}' ({b.mass:.4g} kg) touch at the start with a "
                    f"mass ratio of {ratio:.3g}:1: the contact solver cannot hold them apart (measured at 10⁴:1: "
                    "the heavy box sinks 23 cm into the light one in a second)",
                    "bring the masses within 100:1 of each other (Physics ▸ Contact Lab Body ▸ Mass)",
                    "contact_lab.mass",
                )
            )
            return out  # the worst pair says it: the warning below would repeat it
    fix = (
        "keep the masses of bodies that touch within 100:1 of each other, or switch Scene ▸ Contact Lab Bake ▸ "
        "Solver to PGS (about 1 cm up to 1000:1)"
    )
    close = [(_ratio(moving[i], moving[j]), i, j) for i, j in touching]
    worst = max(close, default=None)
    if worst is not None and worst[0] > MASS_RATIO_WARNING:
        a, b = sorted((moving[worst[1]], moving[worst[2]]), key=lambda body: -body.mass)
        message = (
            f"'{a.obj.name}' ({a.mass:.4g} kg) and '{b.obj.name}' ({b.mass:.4g} kg) touch at the start with a mass "
            f"ratio of {worst[0]:.3g}:1: the contact solver does not converge between them and they sink into each "
            "other or jump (measured with PROX: 1 cm at 100:1, 42 cm at 1000:1)"
        )
        return [*out, warning(a.obj, message, fix, "contact_lab.mass")]
    ratio = heavy.mass / light.mass
    if ratio > MASS_RATIO_WARNING:
        # they do not touch now: bodies that never touch do not affect each other (each contact island is solved
        # on its own), so the warning is about the moment they might meet
        message = (
            f"'{heavy.obj.name}' ({heavy.mass:.4g} kg) is {ratio:.3g} times as heavy as '{light.obj.name}' "
            f"({light.mass:.4g} kg); they do not touch at the start, but should they meet, the contact solver does "
            "not converge between them and they sink into each other or jump (measured with PROX: 1 cm at 100:1, "
            "42 cm at 1000:1)"
        )
        out.append(warning(heavy.obj, message, fix, "contact_lab.mass"))
    return out


def _ratio(a: _Body, b: _Body) -> float:
    return max(a.mass, b.mass) / min(a.mass, b.mass)


def _touching_pairs(bodies: list[_Body]) -> list[tuple[int, int]]:
    """Pairs of bodies whose oriented boxes are within the contact margin of each other."""
    solids = [(k, s) for k, b in enumerate(bodies) for s in b.solids if s.kind != "PLANE"]
    if len(solids) < 2:
        return []
    boxes = overlap.stacked([s for _, s in solids])
    lower, upper = overlap.bounds(*boxes)
    pairs = overlap.candidate_pairs(lower - MARGIN, upper + MARGIN)
    owner = np.array([k for k, _ in solids])
    pairs = pairs[owner[pairs[:, 0]] != owner[pairs[:, 1]]]
    if not pairs.shape[0]:
        return []
    a, b = ([x[pairs[:, side]] for x in boxes] for side in (0, 1))
    near = pairs[overlap.obb_depth(*a, *b) > -MARGIN]
    return sorted({(int(min(owner[i], owner[j])), int(max(owner[i], owner[j]))) for i, j in near})


def _overlap_findings(view: SceneView, bodies: list[_Body], collides) -> list[Finding]:
    solids, movable = [], []
    for body in bodies:
        for solid in body.solids:
            solids.append(solid)
            movable.append(body.role != "PASSIVE")
    if len(solids) < 2:
        return []
    ipc = view.engine == "IPC"
    tolerance = -IPC_TOUCH_GAP if ipc else OVERLAP_TOLERANCE
    found = overlap.overlapping_pairs(solids, tolerance=tolerance, movable=np.array(movable))
    if ipc:  # a touch (a depth within the gap of zero) only where the depth is exact
        found = [(i, j, d) for i, j, d in found if d > IPC_OVERLAP_TOLERANCE or _exact_depth(solids[i], solids[j])]
    out, seen = [], set()
    for i, j, depth in found:
        a, b = bodies[solids[i].owner], bodies[solids[j].owner]
        key = (solids[i].owner, solids[j].owner)
        if key in seen or not collides(a.obj, b.obj):
            continue
        seen.add(key)
        if a.role == "PASSIVE":
            a, b = b, a
        if ipc:
            consequence = "IPC cannot start from intersecting surfaces and will refuse the bake"
        elif b.role == "PASSIVE":
            consequence = "the solver pushes it out at the first frames, a visible jump"
        else:
            consequence = "the solver pushes them apart at the first frames, so they fly apart"
        make = error if ipc else warning
        how = f"overlap by {_length(depth)}" if depth > IPC_OVERLAP_TOLERANCE else "touch (no gap between them)"
        if ipc and depth <= IPC_OVERLAP_TOLERANCE:
            consequence = "IPC needs a gap between surfaces at the start and will refuse the bake"
        out.append(
            make(
                a.obj,
                f"'{a.obj.name}' and '{b.obj.name}' {how} at frame {view.start}: {consequence}",
                f"move them apart at frame {view.start} (or change the Start frame)",
                "location",
            )
        )
    return out


def _exact_depth(a: overlap.Solid, b: overlap.Solid) -> bool:
    """Whether the overlap test's depth of ``a`` and ``b`` is exact (not the sample-point lower bound)."""
    return "PLANE" in (a.kind, b.kind) or (a.kind, b.kind) in EXACT_DEPTH_KINDS


def _lattice_findings(view: SceneView, bodies: list[_Body]) -> list[Finding]:
    soft = [(b, b.lattice) for b in bodies if b.lattice is not None]
    if not soft:
        return []
    s = view.scene.contact_lab
    engine = view.engine
    substeps = max(int(s.soft_substeps), 1)
    frames = max(view.end - view.start, 1)
    out = []
    for body, lattice in soft:
        tets = lattice.tets
        seconds = seconds_per_frame(tets, tets, substeps, engine)
        out.append(
            info(
                body.obj,
                f"'{body.obj.name}': lattice resolution {int(body.obj.contact_lab.lattice_resolution)} gives about "
                f"{tets:,} tets (cells of {_length(lattice.cell_size * view.metres)}), "
                f"{_bytes(tets * BYTES_PER_TET[engine])}, {_duration(seconds)} per frame",
                "",
                "contact_lab.lattice_resolution",
            )
        )
        out.extend(_thin_findings(body, lattice, view.metres))
    total = sum(lattice.tets for _, lattice in soft)
    biggest, biggest_lattice = max(soft, key=lambda pair: pair[1].tets)
    memory = _bytes(total * BYTES_PER_TET[engine])
    per_frame = seconds_per_frame(total, biggest_lattice.tets, substeps, engine)
    estimate = (
        f"about {total:,} tets, {memory} of memory and at least {_duration(per_frame)} per frame "
        f"({_duration(per_frame * frames)} for {frames} frames)"
    )
    fix = (
        f"lower Lattice Resolution on '{biggest.obj.name}' (Physics ▸ Contact Lab Body; "
        f"{int(biggest.obj.contact_lab.lattice_resolution)} now)"
    )
    name, res = biggest.obj.name, int(biggest.obj.contact_lab.lattice_resolution)
    whose = f"'{name}'" if len(soft) == 1 else f"the soft bodies ('{name}' alone {biggest_lattice.tets:,})"
    setting = "contact_lab.lattice_resolution"
    if total > LATTICE_TET_LIMIT:
        message = (
            f"{whose} at lattice resolution {res} would need {estimate}: more than the {LATTICE_TET_LIMIT:,} tets a "
            "bake may have"
        )
        out.append(error(biggest.obj, message, fix, setting))
    elif total > LATTICE_TET_WARNING:
        out.append(warning(biggest.obj, f"{whose} at lattice resolution {res} would need {estimate}", fix, setting))
    return out


def _thin_findings(body: _Body, lattice: LatticeEstimate, metres: float) -> list[Finding]:
    """A warning when the body's thinnest side holds fewer than :data:`THIN_CELLS` lattice cells."""
    across = lattice.thinnest_cells
    if not 0.0 < across < THIN_CELLS:
        return []
    resolution = int(body.obj.contact_lab.lattice_resolution)
    wanted = int(np.ceil(resolution * THIN_ADVICE_CELLS / across - 1e-9))
    return [
        warning(
            body.obj,
            f"'{body.obj.name}' is {across:.1f} lattice cells thick (cells of {_length(lattice.cell_size * metres)} "
            f"at lattice resolution {resolution}): it will bend far less than its material, because one layer of "
            "tets locks in bending",
            f"raise Lattice Resolution to about {wanted} for {THIN_ADVICE_CELLS} cells across its thinnest side "
            "(Physics ▸ Contact Lab Body)",
            "contact_lab.lattice_resolution",
        )
    ]


def seconds_per_frame(tets: int, largest: int, substeps: int, engine: str) -> float:
    """Estimated simulation time per frame [s] of ``tets`` tets in all (``largest`` in the biggest body, whose
    lattice sets how many iterations the one linear solve of a step needs) at ``substeps`` steps per frame."""
    growth = max(largest / COST_REFERENCE_TETS, 1.0) ** COST_GROWTH[engine]
    return tets * substeps * SECONDS_PER_TET_SUBSTEP[engine] * growth


def _bytes(count: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count / 1e3:.3g} kB"


def _duration(seconds: float) -> str:
    if seconds >= 3600.0:
        return f"{seconds / 3600.0:.3g} h"
    if seconds >= 60.0:
        return f"{seconds / 60.0:.3g} min"
    return f"{seconds:.2g} s"
