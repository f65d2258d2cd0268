"""The ranges of :mod:`.validate`: every number of ``scene.contact_lab`` and ``obj.contact_lab`` against the range
the engines and physics can honour, found before simulating.

Two kinds of range:

- **Hard ranges** (:data:`SCENE_LIMITS`, :data:`OBJECT_LIMITS`): outside them the engine raises late (the core's
  ``ValueError("substeps must be at least 1")`` at frame 1) or computes garbage (a negative friction coefficient
  adds energy, a restitution above 1 too, a damping above 1 takes the velocity past zero). The slider limits of
  :mod:`.properties` clamp what is typed or assigned as an attribute (``settings.substeps = 0`` gives 1), but not a
  value written as an ID property (``settings["substeps"] = 0``), one from a file saved by another version or one
  set by a driver: every hard range is checked again here. Ranges the engines' own checks already report (the soft
  material, the IPC settings, the mass) are not repeated (:data:`ENGINE_CHECKED`).
- **Physics ranges** (:func:`physics_findings`): settings that are valid one by one but that the bake cannot
  honour together with the body's size and the time step. Each is derived in its function's docstring and its
  threshold measured:

  - speed against size and step (:func:`_speed_findings`),
  - Young's modulus against the step (:func:`_stiffness_findings`),
  - IPC Newton iterations (:func:`_iteration_findings`),
  - the soft contact thickness against the body's size is :mod:`.physics`'s hover check (over 10 %: an
    error, as the README's Check Scene table says).

A finite value of 1e30 is judged by these ranges, not called infinite (:data:`JUDGED_BY_RANGE`); Blender stores
an infinite float as 3.4e38, which :mod:`.validate` reports as infinite.

Every finding names the setting with its panel path and label, and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import units
from ..scene import mesh_arrays
from .findings import Finding, SceneView, error, warning

BAKE = "Scene ▸ Contact Lab Bake"
BODY = "Physics ▸ Contact Lab Body"
ALL_ENGINES = frozenset({"RIGID", "SOFT", "IPC"})
ANISO_MODELS = frozenset({"ANISOTROPIC", "MATCHSTICK"})
TENSOR_MODEL = frozenset({"TENSOR"})
TEXTURE_MODEL = frozenset({"TEXTURE"})
RIGID_ROLES = frozenset({"ACTIVE", "PASSIVE"})


@dataclass(frozen=True)
class Limit:
    """The hard range of one setting: outside ``[low, high]`` (``low`` excluded when ``open_low``) the bake is
    refused."""

    ident: str
    """Property identifier in ``scene.contact_lab`` or ``obj.contact_lab``."""
    label: str
    """Its label in the panel."""
    low: float | None
    high: float | None
    why: str
    """What goes wrong outside the range, for the message."""
    engines: frozenset = ALL_ENGINES
    """Engines that read the setting (others ignore it, so a bad value there is not reported)."""
    roles: frozenset | None = None
    """Object settings: roles that use it."""
    open_low: bool = False
    only_if: str | None = None
    """A boolean setting of the same group that must be on for this one to be read (``sleeping``)."""
    panel: str = BAKE
    models: frozenset | None = None
    """Object settings of the friction models: the ``friction_model`` values that read it (None: every one)."""


SCENE_LIMITS = (
    Limit("substeps", "Substeps", 1, None, "the solver needs at least one step per frame", frozenset({"RIGID"})),
    Limit("iterations", "Iterations", 1, None, "the solver needs at least one sweep per step", frozenset({"RIGID"})),
    Limit("tolerance", "Tolerance", 0.0, None, "a negative stopping tolerance is meaningless", frozenset({"RIGID"})),
    Limit(
        "sleep_time",
        "Sleep Time",
        0.0,
        None,
        "bodies must rest for a positive time before they sleep",
        frozenset({"RIGID"}),
        open_low=True,
        only_if="sleeping",
    ),
    Limit(
        "sleep_linear_speed",
        "Sleep Speed",
        0.0,
        None,
        "a resting speed must be positive",
        frozenset({"RIGID"}),
        open_low=True,
        only_if="sleeping",
    ),
    Limit(
        "sleep_angular_speed",
        "Sleep Spin",
        0.0,
        None,
        "a resting spin must be positive",
        frozenset({"RIGID"}),
        open_low=True,
        only_if="sleeping",
    ),
    Limit(
        "soft_substeps",
        "Soft Substeps",
        1,
        None,
        "the solver needs at least one step per frame",
        frozenset({"SOFT", "IPC"}),
    ),
    Limit(
        "soft_contact_thickness",
        "Contact Thickness",
        0.0,
        None,
        "a contact layer cannot be thinner than nothing (0 = automatic)",
        frozenset({"SOFT"}),
    ),
    Limit(
        "soft_friction_velocity",
        "Static Friction Speed",
        0.0,
        None,
        "the smoothed friction divides by it",
        frozenset({"SOFT"}),
        open_low=True,
    ),
)
"""Hard ranges of ``scene.contact_lab`` (panel: Scene ▸ Contact Lab Bake)."""

OBJECT_LIMITS = (
    Limit(
        "friction",
        "Friction",
        0.0,
        None,
        "a negative friction coefficient pushes sliding bodies faster instead of slowing them",
        roles=RIGID_ROLES,
        panel=BODY,
    ),
    Limit(
        "restitution",
        "Restitution",
        0.0,
        1.0,
        "0 is no bounce and 1 a perfectly elastic one: above 1 every bounce adds energy, below 0 bodies stick into "
        "each other",
        frozenset({"RIGID"}),
        RIGID_ROLES,
        panel=BODY,
    ),
    Limit(
        "linear_damping",
        "Damping Translation",
        0.0,
        1.0,
        "it is the fraction of the velocity lost per second: above 1 the velocity would turn round, below 0 it "
        "would grow by itself",
        frozenset({"RIGID"}),
        frozenset({"ACTIVE"}),
        panel=BODY,
    ),
    Limit(
        "angular_damping",
        "Damping Rotation",
        0.0,
        1.0,
        "it is the fraction of the spin lost per second: above 1 the spin would turn round, below 0 it would grow "
        "by itself",
        frozenset({"RIGID"}),
        frozenset({"ACTIVE"}),
        panel=BODY,
    ),
    *(
        Limit(
            ident,
            label,
            0.0,
            None,
            "a negative friction coefficient adds energy",
            frozenset({"RIGID"}),
            RIGID_ROLES,
            panel=BODY,
            models=ANISO_MODELS,
        )
        for ident, label in (("friction_t", "Friction Along"), ("friction_b", "Friction Across"))
    ),
    Limit(
        "friction_kappa",
        "Tensor Scale",
        0.0,
        None,
        "a negative friction scale adds energy",
        frozenset({"RIGID"}),
        RIGID_ROLES,
        panel=BODY,
        models=TENSOR_MODEL,
    ),
    Limit(
        "friction_spin",
        "Spin Friction",
        0.0,
        None,
        "a negative torsional friction spins bodies up",
        frozenset({"RIGID"}),
        RIGID_ROLES,
        panel=BODY,
    ),
    Limit(
        "normal_map_strength",
        "Strength",
        0.0,
        None,
        "a negative strength turns the facets upside down",
        frozenset({"RIGID"}),
        RIGID_ROLES,
        panel=BODY,
        models=TEXTURE_MODEL,
    ),
    Limit(
        "texture_patch_size",
        "Patch Size",
        0.0,
        None,
        "the facets are averaged over a patch of this size",
        frozenset({"RIGID"}),
        RIGID_ROLES,
        open_low=True,
        panel=BODY,
        models=TEXTURE_MODEL,
    ),
)
"""Hard ranges of ``obj.contact_lab`` (panel: Physics ▸ Contact Lab Body)."""

ENGINE_CHECKED = frozenset(
    {
        "mass",  # scene.object_problems: an active body's mass must be positive
        "youngs_modulus",  # soft.gather._material_problems, with poisson_ratio, density, damping,
        "poisson_ratio",  # friction (soft), volume_compressibility and lattice_resolution
        "density",
        "damping",
        "volume_compressibility",
        "lattice_resolution",
        "ipc_dhat",  # ipc.gather._settings_problems, with the other IPC settings
        "ipc_kappa",
        "ipc_eps_v",
        "ipc_tolerance",
        "ipc_max_iterations",
        "friction_tensor",  # friction_export: must be positive definite
    }
)
"""Numbers whose hard range the engines' own checks report (through :func:`.validate._engine_findings` and the
friction checks): not repeated here."""

NOT_INPUT = frozenset(
    {"settings_version", "frame_start_custom", "frame_end_custom", "frame_start", "frame_end", "bake_progress"}
)
"""Numbers that are bookkeeping, status, or checked by :mod:`.validate` (the frame range)."""

JUDGED_BY_RANGE = frozenset({"youngs_modulus", "initial_velocity", "soft_contact_thickness", "ipc_dhat"})
"""Settings a finite 1e30 is judged for by a physics range (the message says what it does to the bake), instead
of :mod:`.validate`'s generic "far too large"."""


# hard ranges -----------------------------------------------------------------------------------------------


def setting_findings(view: SceneView) -> list[Finding]:
    """Hard ranges of the scene's settings for ``view.engine`` and of every taking part object's settings."""
    out = []
    settings = view.scene.contact_lab
    for limit in SCENE_LIMITS:
        if view.engine in limit.engines and (limit.only_if is None or getattr(settings, limit.only_if, False)):
            out += _check(None, settings, limit)
    limits = [limit for limit in OBJECT_LIMITS if view.engine in limit.engines]
    for obj in view.objects:
        settings = obj.contact_lab
        role = str(getattr(settings, "role", ""))
        model = str(getattr(settings, "friction_model", "")) if view.engine == "RIGID" else ""
        for limit in limits:
            if (limit.roles is None or role in limit.roles) and (limit.models is None or model in limit.models):
                out += _check(obj, settings, limit)
    return out + _enum_findings(view) + _iteration_findings(view)


def _enum_findings(view: SceneView) -> list[Finding]:
    """Choices (Engine, Solver, Role, Shape, ...) holding no valid item: a number written as an ID property
    outside the list reads back as ``''``, and the engines would skip the object or fail late.

    Every choice of the scene; every object's Role (a broken one hides the object from the bake); of the objects
    taking part, the choices their engine reads (:func:`_read_choices`)."""
    out = []
    groups = [(None, view.scene.contact_lab, BAKE, [ident for ident, _ in _enums(view.scene.contact_lab)])]
    groups += [(o, o.contact_lab, BODY, ("role",)) for o in view.scene.objects if o.contact_lab.role == ""]
    groups += [(o, o.contact_lab, BODY, _read_choices(view.engine, o.contact_lab)[1:]) for o in view.objects]
    for obj, settings, panel, names in groups:
        for ident in names:
            if getattr(settings, ident, None) != "":
                continue
            owner = "the scene's" if obj is None else f"'{obj.name}':"
            label = dict(_enums(settings)).get(ident, ident)
            out.append(
                error(
                    obj,
                    f"{owner} {label} holds none of its choices (a number written past the list)",
                    f"choose one in {panel} ▸ {label}",
                    setting=f"{'scene.' if obj is None else ''}contact_lab.{ident}",
                )
            )
    return out


def _read_choices(engine: str, settings) -> tuple[str, ...]:
    """The choices of a taking part object's settings that ``engine`` reads, Role first."""
    if getattr(settings, "role", "") == "SOFT":
        return ("role", "shape", "volume_law")
    if engine != "RIGID":
        return ("role", "shape")
    model = getattr(settings, "friction_model", "")
    if model not in ("ANISOTROPIC", "MATCHSTICK", "TENSOR"):
        return ("role", "shape", "friction_model")
    if getattr(settings, "structure_source", "") != "AXIS":
        return ("role", "shape", "friction_model", "structure_source")
    return ("role", "shape", "friction_model", "structure_source", "structure_axis")


_ENUMS: dict[str, list[tuple[str, str]]] = {}
"""``{PropertyGroup identifier: [(identifier, label)]}`` of its enum properties."""


def _enums(settings) -> list[tuple[str, str]]:
    rna = getattr(settings, "bl_rna", None)
    if rna is None:  # a stand-in without RNA (tests)
        return []
    if rna.identifier not in _ENUMS:
        _ENUMS[rna.identifier] = [
            (p.identifier, p.name) for p in rna.properties if p.type == "ENUM" and not p.is_enum_flag
        ]
    return _ENUMS[rna.identifier]


def _check(obj, settings, limit: Limit) -> list[Finding]:
    raw = getattr(settings, limit.ident, None)
    if raw is None:
        return []  # a stand-in without the setting (tests)
    value = float(raw)
    if not abs(value) < 3.0e38:
        return []  # NaN and infinity: validate's own check names them
    low_ok = limit.low is None or (value > limit.low if limit.open_low else value >= limit.low)
    high_ok = limit.high is None or value <= limit.high
    if low_ok and high_ok:
        return []
    owner = "the scene's" if obj is None else f"'{obj.name}':"
    if limit.low is not None and limit.high is not None:
        wanted = f"between {_num(limit.low)} and {_num(limit.high)}"
    elif limit.open_low:
        wanted = f"above {_num(limit.low)}"
    else:
        wanted = f"at least {_num(limit.low)}"
    return [
        error(
            obj,
            f"{owner} {limit.label} is {_num(value)}, outside its range ({wanted}): {limit.why}",
            f"set {limit.panel} ▸ {limit.label} {wanted} (a value assigned as an ID property, by a driver or "
            "from another version's file skips the slider's limits)",
            setting=f"{'scene.' if obj is None else ''}contact_lab.{limit.ident}",
        )
    ]


def _num(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"


# physics ranges --------------------------------------------------------------------------------------------

SPEED_ERROR_SIZES = {"SOFT": 10.0, "IPC": 100.0}
"""An initial velocity moving a soft body more than this many times its own size per substep is refused, per
engine (derivation and measurement: :func:`_speed_findings`)."""

SOFT_TUNNEL_SIZES = 1.0
"""Soft engine: more than this many sizes per substep, a warning (it can pass through bodies unseen)."""

COURANT_WARNING = 5.0e4
"""Elastic waves crossing more than this many lattice cells per substep: a warning (see
:func:`_stiffness_findings`; measured: up to 3.3e4 every step converged, from 8e4 some did not)."""

COURANT_ERROR = 5.0e5
"""...more than this many: an error (measured: up to 3.3e5 dropped cubes landed straight; at 8.1e5 one drifted
15 cm sideways, at 1e6 one stopped in mid-air)."""

IPC_MIN_ITERATIONS = 10
"""IPC Max Iterations below this: a warning (see :func:`_iteration_findings`: a resting drop needs up to 8)."""


@dataclass(frozen=True)
class _Soft:
    """A soft body as the physics ranges see it."""

    obj: Any
    """The ``bpy.types.Object`` (Any: its ``contact_lab`` settings are registered at run time)."""
    size: float
    """Largest extent of its mesh in the world at the start frame [m]."""
    cell: float
    """Lattice cell edge [m]: ``size / lattice_resolution``."""


def physics_findings(view: SceneView) -> list[Finding]:
    """Speed against size and step, stiffness against step (Soft and IPC engines; needs ``view.matrices``)."""
    if view.engine == "RIGID" or not view.matrices:
        return []
    bodies = _soft_bodies(view)
    substeps = max(int(view.scene.contact_lab.soft_substeps), 1)
    fps = units.scene_fps(view.scene)
    if not bodies or not fps > 0.0:
        return []
    dt = 1.0 / (fps * substeps)
    return _speed_findings(view, bodies, dt) + _stiffness_findings(view, bodies, dt)


def _soft_bodies(view: SceneView) -> list[_Soft]:
    out = []
    for obj in view.soft:
        matrix = (view.matrices or {}).get(obj.name)
        if matrix is None or obj.name in view.broken or obj.type != "MESH":
            continue
        vertices, _ = mesh_arrays(obj.data)
        if vertices.shape[0] < 2:
            continue
        world = vertices @ np.asarray(matrix)[:3, :3].T
        size = float(np.ptp(world, axis=0).max()) * view.metres
        if not (np.isfinite(size) and size > 0.0):
            continue
        out.append(_Soft(obj, size, size / max(int(obj.contact_lab.lattice_resolution), 1)))
    return out


def _speed_findings(view: SceneView, bodies: list[_Soft], dt: float) -> list[Finding]:
    """A soft body's Initial Velocity against its size and the substep.

    Neither soft engine looks ahead in time the way a rigid sweep would. The Soft engine's penalty contact only
    sees where a body ends a step: a body travelling more than its own size ``L`` per substep (``|v| dt / L > 1``)
    can jump through another body unseen (a warning, :data:`SOFT_TUNNEL_SIZES`), and further it lands deep inside
    what it meets and the penalty forces tear it apart. IPC's continuous collision detection cannot be jumped
    through, but it halves the step until no surface crosses another, and the Newton solve then has to carry the
    body across the whole distance. Measured (two 10 cm Rubber balls, one thrown at the ground, 24 fps,
    2 substeps, 9 frames, on a loaded 2-core machine): at 20 m/s (4.2 sizes per substep) both engines bake
    correctly (the IPC throw test is this speed; IPC in 22 s); at 200 m/s (42 sizes) IPC bakes correctly in 46 s
    but the Soft engine had not finished in 200 s; at 2,000 m/s (420 sizes) IPC had not finished in 240 s; at
    1e6 m/s (2e5 sizes) the Soft engine finished with the ball 6,700 km wide and the untouched neighbour 650 km
    wide. Hence an error from :data:`SPEED_ERROR_SIZES` sizes per substep: 10 for Soft, 100 for IPC.
    """
    out = []
    engine = "IPC" if view.engine == "IPC" else "Soft"
    substeps_now = max(int(view.scene.contact_lab.soft_substeps), 1)
    for body in bodies:
        velocity = np.asarray(tuple(body.obj.contact_lab.initial_velocity), dtype=np.float64) * view.metres
        speed = float(np.linalg.norm(velocity))
        ratio = speed * dt / body.size
        severe = ratio > SPEED_ERROR_SIZES[view.engine]
        if not np.isfinite(ratio) or not (severe or (engine == "Soft" and ratio > SOFT_TUNNEL_SIZES)):
            continue
        allowed = SPEED_ERROR_SIZES[view.engine] if severe else SOFT_TUNNEL_SIZES
        substeps = int(np.ceil(ratio / allowed * substeps_now))
        if severe:
            consequence = (
                "its collision search cannot finish a frame in minutes"
                if engine == "IPC"
                else "it lands deep inside what it meets and is torn apart, and so is what it hits"
            )
        else:
            consequence = "it can pass through a body of its size within one step without touching it"
        out.append(
            (error if severe else warning)(
                body.obj,
                f"'{body.obj.name}': its Initial Velocity of {speed:.3g} m/s moves it {_length(speed * dt)} per "
                f"substep, {ratio:.3g} times its size ({_length(body.size)}); the {engine} engine handles up to "
                f"{allowed:g} times: {consequence}",
                f"lower {BODY} ▸ Initial Velocity below {allowed * body.size / dt:.3g} m/s, or raise {BAKE} ▸ "
                f"Soft Substeps to {substeps:,} or more",
                setting="contact_lab.initial_velocity",
            )
        )
    return out


def _stiffness_findings(view: SceneView, bodies: list[_Soft], dt: float) -> list[Finding]:
    """Young's modulus against the substep: the elastic wave speed ``c = sqrt(E / ρ)`` [m/s] against the lattice
    cell ``h`` [m] gives the number of cells a wave crosses per substep, ``C = c dt / h`` (the Courant number).

    Both engines step implicitly, so a large ``C`` does not blow up, but the Newton system's stiffness grows like
    ``C²`` against its inertia, and Newton's tolerance (relative to the largest force) stops seeing gravity and
    contact next to the elastic forces. Measured with the Soft engine, a cube dropped on the ground (24 fps,
    2 substeps, 24 frames, lattice resolution 8): a 2 m cube converged every step up to 1e14 Pa (C = 2.6e4), left
    2 frames unconverged at 1e15 Pa (C = 8.1e4) and 1 at 1e16 Pa (C = 2.6e5), landing straight, and at 1e17 Pa
    (C = 8.1e5) drifted 15 cm sideways in its straight drop; a 0.5 m cube converged up to 1e13 Pa (C = 3.3e4),
    left 2 unconverged at 1e14 Pa (C = 1.0e5), landed at 1e15 Pa (C = 3.3e5) and at 1e16 Pa (C = 1.0e6) stopped
    10.6 cm above the ground after 2 Newton iterations per step, reported converged. Hence a warning from
    :data:`COURANT_WARNING` and an error from :data:`COURANT_ERROR`. Real materials are far below: steel (2e11 Pa)
    in 25 cm cells at 48 steps a second is C = 420.
    """
    out = []
    for body in bodies:
        s = body.obj.contact_lab
        modulus, density = float(s.youngs_modulus), float(s.density)
        if not (modulus > 0.0 and density > 0.0 and np.isfinite(modulus) and np.isfinite(density)):
            continue  # the material check refuses it
        wave = np.sqrt(modulus / density)
        courant = wave * dt / body.cell
        if courant <= COURANT_WARNING:
            continue
        highest = (COURANT_WARNING * body.cell / dt) ** 2 * density
        severe = courant > COURANT_ERROR
        consequence = (
            "the solver no longer sees gravity or contact next to the elastic forces, and the body stops moving"
            if severe
            else "the solver stops converging in some steps, and the motion can drift"
        )
        out.append(
            (error if severe else warning)(
                body.obj,
                f"'{body.obj.name}': its Young's Modulus of {modulus:.3g} Pa sends elastic waves across "
                f"{courant:.3g} lattice cells per substep (wave speed {wave:.3g} m/s, cells of "
                f"{_length(body.cell)}): {consequence}",
                f"lower {BODY} ▸ Young's Modulus to {highest:.3g} Pa or less (the motion of a body this stiff "
                "hardly differs), or raise the Soft Substeps",
                setting="contact_lab.youngs_modulus",
            )
        )
    return out


def _iteration_findings(view: SceneView) -> list[Finding]:
    """IPC Max Iterations too low for Newton to converge.

    IPC's Newton needs several iterations per step whenever contacts appear or change. Measured: a 0.5 m cube
    dropped 20 cm on the ground (24 fps, 2 substeps, 12 frames) used at most 8 iterations per step; capped at 1
    it left 11 of 12 frames unconverged and sank 5 mm into the ground, at 2 10 frames, at 3 and 5 two or three,
    at 10 none. Hence a warning below :data:`IPC_MIN_ITERATIONS`.
    """
    if view.engine != "IPC":
        return []
    n = int(getattr(view.scene.contact_lab, "ipc_max_iterations", IPC_MIN_ITERATIONS))
    if not 1 <= n < IPC_MIN_ITERATIONS:
        return []  # below 1: the IPC settings check refuses it
    return [
        warning(
            None,
            f"the scene's IPC Max Iterations is {n}: Newton stops before it converges in most steps, so contacts "
            "sink in or bounce wrongly",
            f"set {BAKE} ▸ Max Iterations to {IPC_MIN_ITERATIONS} or more (default 100)",
            setting="scene.contact_lab.ipc_max_iterations",
        )
    ]


def _length(metres: float) -> str:
    from .physics import _length as length

    return length(metres)
