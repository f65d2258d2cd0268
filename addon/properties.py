"""PropertyGroups: ``Scene.contact_lab`` (bake settings, last report), ``Object.contact_lab`` (role, shape, material).

Units: masses in [kg]; friction and restitution are dimensionless. Shape sizes come from the object's
bounding box, converted to metres in :mod:`.rigid.gather`. The only stored lengths are the texture patch size,
the spin friction, the soft contact thickness and the IPC barrier distance (Blender units, shown in scene units,
converted by the scene's Unit Scale at bake time). The friction settings are read by :mod:`.friction_export`
(course ch. 6), the soft-body settings by :mod:`.soft.gather`, the IPC settings by :mod:`.ipc.gather`. Soft
materials are SI: Young's modulus [Pa], density [kg/m³], damping [s]; the IPC barrier stiffness is in [Pa/m], its
static friction speed in [m/s]. The enum settings' choices and the material presets' values are plain data in
:mod:`.property_items`, re-exported here.
"""

# Blender declares properties as class annotations holding a call (``name: FloatProperty(...)``) and reads them
# at registration; a call is no type, so the checker's rule for type expressions is off in this file.
# pyright: reportInvalidTypeForm=false

from typing import Any

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from .property_items import (
    AXIS_ITEMS,
    COMBINE_ITEMS,
    COMBINE_PHRASES,
    ENGINE_ITEMS,
    FRICTION_MODEL_ITEMS,
    RIGID_ONLY_SHAPES,
    ROLE_ITEMS,
    SHAPE_ITEMS,
    SOFT_CONTACT_ITEMS,
    SOFT_MATERIAL_FIELDS,
    SOFT_OUTPUT_ITEMS,
    SOFT_PRESET_ITEMS,
    SOFT_PRESETS,
    SOLVER_ITEMS,
    STRUCTURE_SOURCE_ITEMS,
)

__all__ = [
    "AXIS_ITEMS",
    "CLASSES",
    "COMBINE_ITEMS",
    "COMBINE_PHRASES",
    "CONTACT_LAB_ObjectSettings",
    "CONTACT_LAB_SceneSettings",
    "ENGINE_ITEMS",
    "FRICTION_MODEL_ITEMS",
    "RIGID_ONLY_SHAPES",
    "ROLE_ITEMS",
    "SHAPE_ITEMS",
    "SOFT_CONTACT_ITEMS",
    "SOFT_MATERIAL_FIELDS",
    "SOFT_OUTPUT_ITEMS",
    "SOFT_PRESETS",
    "SOFT_PRESET_ITEMS",
    "SOLVER_ITEMS",
    "STRUCTURE_SOURCE_ITEMS",
]
"""The item tables and presets stay importable from here (scripts and tests read ``properties.SHAPE_ITEMS``)."""


def _scene_of(settings):
    return settings.id_data


def _get_frame_start(self):
    return self.frame_start_custom if not self.use_scene_frame_range else _scene_of(self).frame_start


def _set_frame_start(self, value):
    if self.use_scene_frame_range:
        self.frame_end_custom = _scene_of(self).frame_end
    self.frame_start_custom = value
    self.use_scene_frame_range = False


def _get_frame_end(self):
    return self.frame_end_custom if not self.use_scene_frame_range else _scene_of(self).frame_end


def _set_frame_end(self, value):
    if self.use_scene_frame_range:
        self.frame_start_custom = _scene_of(self).frame_start
    self.frame_end_custom = value
    self.use_scene_frame_range = False


_applying_preset = [False]
"""True while :func:`_apply_soft_preset` writes the material values (their updates must not switch to Custom)."""


def _apply_soft_preset(self, context=None):
    """``soft_preset`` update: copy the preset's material values into the settings (Custom changes nothing)."""
    values = SOFT_PRESETS.get(self.soft_preset)
    if values is None:
        return
    _applying_preset[0] = True
    try:
        for name, value in values.items():
            setattr(self, name, value)
    finally:
        _applying_preset[0] = False


def _material_edited(self, context=None):
    """Update of a material value: a value that differs from the chosen preset's switches the preset to Custom."""
    if _applying_preset[0]:
        return
    values = SOFT_PRESETS.get(self.soft_preset)
    if values is None:
        return
    # float properties are stored in single precision: compare with a relative tolerance
    if any(abs(float(getattr(self, k)) - v) > 1e-6 * max(abs(v), 1e-12) for k, v in values.items()):
        self.soft_preset = "CUSTOM"


def _blend_relative_path_options() -> Any:
    """Property options of a path setting that may be ``//``-relative: Blender 4.5+ warns about a ``//`` value of
    a path property without the ``PATH_SUPPORTS_BLEND_RELATIVE`` flag; older versions do not know the flag (Any:
    the stubs of each Blender version type the options as a set of their own flag literals)."""
    options = {"ANIMATABLE"}  # StringProperty's default
    try:
        supported = "is_path_supports_blend_relative" in bpy.types.Property.bl_rna.properties
    except (AttributeError, TypeError):
        supported = False
    if supported is True:
        options.add("PATH_SUPPORTS_BLEND_RELATIVE")
    return options


class CONTACT_LAB_SceneSettings(bpy.types.PropertyGroup):
    """Bake settings of a scene (``scene.contact_lab``)."""

    settings_version: IntProperty(
        name="Settings Version",
        description="Contact Lab settings version this scene was saved with (files of older versions keep the "
        "defaults they were made with)",
        default=0,
        min=0,
        options={"HIDDEN"},
    )
    engine: EnumProperty(
        name="Engine",
        description=(
            "Which simulation the Bake button runs: Rigid for solid objects, Soft for squishy ones, IPC for squishy "
            "ones that must never pass through anything"
        ),
        items=ENGINE_ITEMS,
        default="RIGID",
    )

    use_scene_frame_range: BoolProperty(
        name="Use Scene Frame Range",
        description="Bake the scene's frame range; setting Start or End turns this off",
        default=True,
    )
    frame_start_custom: IntProperty(name="Custom Start", description="Stored custom first frame", default=1)
    frame_end_custom: IntProperty(name="Custom End", description="Stored custom last frame", default=250)
    frame_start: IntProperty(
        name="Start",
        description="First baked frame (the initial state); follows the scene's range until set",
        get=_get_frame_start,
        set=_set_frame_start,
    )
    frame_end: IntProperty(
        name="End",
        description="Last baked frame; follows the scene's range until set",
        get=_get_frame_end,
        set=_set_frame_end,
    )
    substeps: IntProperty(
        name="Substeps",
        description=(
            "Rigid-body solver steps per frame: more give firmer, more accurate contact (fast objects, tall "
            "stacks) and a slower bake"
        ),
        default=4,
        min=1,
        soft_max=64,
    )
    solver: EnumProperty(
        name="Solver",
        description=(
            "How the contact forces are computed: PROX is accurate, PGS is faster with rougher friction, Newton is "
            "the slowest"
        ),
        items=SOLVER_ITEMS,
        default="PROX",
    )
    iterations: IntProperty(
        name="Iterations",
        description=(
            "Most solver sweeps per step: raise it when stacks sag or jitter (the report shows the most used)"
        ),
        default=100,
        min=1,
        soft_max=1000,
    )
    tolerance: FloatProperty(
        name="Tolerance",
        description=(
            "How precisely the rigid solver settles each step: smaller is more precise and slower. It stops when a "
            "sweep changes the contact impulses by less than this fraction of the largest impulse (relative, "
            "no unit)"
        ),
        default=1e-6,
        min=0.0,
        soft_max=1e-2,
        precision=7,
    )
    shock_propagation: BoolProperty(
        name="Shock Propagation",
        description=(
            "Tall stacks stand even at few iterations: after each solve the contacts are solved again from the "
            "ground up, each layer of bodies resting on the layer below as if that could not move (a stack hit "
            "from above then answers less than it should)"
        ),
        default=False,
    )
    merit_history: BoolProperty(
        name="Convergence History",
        description=(
            "Write into the bake report how close each frame's last solve came to the exact contact answer after "
            "every iteration, to see whether more iterations would help (FCLIB's natural-map error after each "
            "sweep; the motion is the same, each frame's last step takes up to a third longer)"
        ),
        default=False,
    )
    sleeping: BoolProperty(
        name="Sleeping",
        description=(
            "Bodies that have rested for Sleep Time keep still until something touches them, so a settled pile "
            "or stack bakes without jitter (Blender's Deactivation); off: a body barely sliding keeps sliding"
        ),
        default=False,
    )
    sleep_time: FloatProperty(
        name="Sleep Time",
        description="How long every body touching a group must have rested before the group sleeps [s]",
        default=0.5,
        min=0.01,
        soft_max=5.0,
        unit="TIME_ABSOLUTE",
    )
    sleep_linear_speed: FloatProperty(
        name="Sleep Speed",
        description="A body rests below this speed [m/s]",
        default=0.05,
        min=1e-6,
        soft_max=1.0,
        precision=3,
    )
    sleep_angular_speed: FloatProperty(
        name="Sleep Spin",
        description="A body rests below this angular speed [rad/s]",
        default=0.05,
        min=1e-6,
        soft_max=1.0,
        precision=3,
    )
    friction_combine: EnumProperty(
        name="Friction Combine",
        description=(
            "How the Friction of two touching surfaces combines into the pair's friction (Blender's Bullet uses "
            "Product)"
        ),
        items=COMBINE_ITEMS,
        default="GEOMETRIC",
    )
    restitution_combine: EnumProperty(
        name="Restitution Combine",
        description="How the Restitution (bounciness) of two touching surfaces combines into the pair's",
        items=COMBINE_ITEMS,
        default="MAXIMUM",
    )
    # soft engine ---------------------------------------------------------------------------
    soft_output: EnumProperty(
        name="Soft Output",
        description="How the soft bodies' deformation is stored",
        items=SOFT_OUTPUT_ITEMS,
        default="SHAPE_KEYS",
    )
    soft_contact: EnumProperty(
        name="Soft Contact",
        description=(
            "How the Soft engine handles contact and friction: Implicit for most scenes, Dual for exact sticking "
            "with few contacts"
        ),
        items=SOFT_CONTACT_ITEMS,
        default="IMPLICIT",
    )
    soft_integrator: EnumProperty(
        name="Integrator",
        description=(
            "How the Soft engine steps through time: Backward Euler calms fast motion, BDF2 keeps more bounce"
        ),
        items=(
            ("BE", "Backward Euler", "Robust, the default: calms fast motion and bounces (first order)"),
            (
                "BDF2",
                "BDF2",
                "Livelier bounces and wobbles, much less damping by the time stepping (second order; Implicit "
                "contact only)",
            ),
        ),
        default="BE",
    )
    soft_substeps: IntProperty(
        name="Soft Substeps",
        description=(
            "Solver steps per frame of the Soft and IPC engines: more give firmer contact and finer motion and a "
            "slower bake"
        ),
        default=2,
        min=1,
        soft_max=32,
    )
    soft_contact_thickness: FloatProperty(
        name="Contact Thickness",
        description=(
            "Distance at which the soft penalty contact starts pushing (scene units); 0 = automatic from the "
            "lattice cell size"
        ),
        default=0.0,
        min=0.0,
        soft_max=0.1,
        subtype="DISTANCE",
        unit="LENGTH",
        precision=4,
    )
    soft_friction_velocity: FloatProperty(
        name="Static Friction Speed",
        description=(
            "Below this sliding speed the Soft engine treats a contact as sticking [m/s]: smaller holds more "
            "firmly and bakes slower. A sticking contact is held by a spring to the point where it stuck, which "
            "gives at most this speed × step time (0.2 mm at 0.01 m/s, 24 fps, 2 substeps) before it slides, so "
            "resting bodies do not creep (smoothed static friction, ε_v)"
        ),
        default=1.0e-2,
        min=1.0e-7,
        soft_max=0.1,
        precision=6,
    )
    soft_cache_dir: StringProperty(
        name="Cache Folder",
        description=(
            "Folder of the PC2 cache files (one per soft object); '//' is relative to the .blend file the bake is "
            "saved into"
        ),
        default="//contact_lab_cache/",
        subtype="DIR_PATH",
        options=_blend_relative_path_options(),
    )
    # IPC engine (also uses soft_output, soft_substeps and soft_cache_dir; read by addon.ipc.gather) -----
    ipc_dhat: FloatProperty(
        name="Barrier Distance",
        description=(
            "Surfaces closer than this push each other apart (scene units): smaller gives tighter contact and a "
            "slower bake. 0 = automatic, 1/1000 of the soft bodies' bounding-box diagonal (IPC's dhat)"
        ),
        default=0.0,
        min=0.0,
        soft_max=0.01,
        subtype="DISTANCE",
        unit="LENGTH",
        precision=5,
    )
    ipc_kappa: FloatProperty(
        name="Barrier Stiffness",
        description=(
            "How hard surfaces push back when they come closer than the Barrier Distance [Pa/m]: 0 = automatic "
            "from the masses, elasticity and gravity; it grows during a step while surfaces keep approaching "
            "(IPC's barrier stiffness κ, energy κ·Σ b(d))"
        ),
        default=0.0,
        min=0.0,
        soft_max=1.0e9,
        precision=1,
    )
    ipc_eps_v: FloatProperty(
        name="IPC Static Friction Speed",
        description=(
            "Below this sliding speed the IPC engine treats a contact as sticking [m/s]: smaller is stickier and "
            "needs more Newton iterations (smoothed static friction, IPC's ε_v)"
        ),
        default=1.0e-3,
        min=1.0e-7,
        soft_max=0.1,
        precision=5,
    )
    ipc_tolerance: FloatProperty(
        name="IPC Tolerance",
        description=(
            "How precisely the IPC engine settles each step: smaller is more precise and slower [1/s]. Its Newton "
            "solve stops when the largest position update divided by the time step falls below this times the "
            "soft bodies' bounding-box diagonal"
        ),
        default=1.0e-3,
        min=1.0e-9,
        soft_max=0.1,
        precision=5,
    )
    ipc_max_iterations: IntProperty(
        name="Max Iterations",
        description=(
            "Most Newton iterations per IPC step: steps that reach it are counted in the report as not converged"
        ),
        default=100,
        min=1,
        soft_max=1000,
    )
    check_intersections: BoolProperty(
        name="Check Intersections",
        description=(
            "After an IPC bake, test every baked frame for intersections (surfaces passing through each other) "
            "and tets turned inside out, with an independent exact checker, and report the counts (slower)"
        ),
        default=False,
    )
    last_report: StringProperty(
        name="Last Report",
        description="JSON report of the last bake (read-only for users)",
        default="",
    )
    last_validation: StringProperty(
        name="Last Check",
        description="JSON findings of the last Check Scene: errors, warnings and notes (read-only for users)",
        default="",
    )
    last_import_report: StringProperty(
        name="Last Import Report",
        description=(
            "JSON report of the last Import Blender Rigid Bodies: what was converted and what could not be carried "
            "over (read-only for users)"
        ),
        default="",
    )
    is_baking: BoolProperty(name="Baking", description="A bake is running in the UI", default=False)
    bake_progress: FloatProperty(
        name="Progress",
        description="Fraction of the running bake that is done",
        default=0.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
    )
    bake_status: StringProperty(name="Status", description="What the running bake is doing", default="")


class CONTACT_LAB_ObjectSettings(bpy.types.PropertyGroup):
    """Per-object settings (``obj.contact_lab``); bookkeeping fields keep what a bake replaced."""

    role: EnumProperty(
        name="Role",
        description="Part this object plays in the simulation: moved (Active, Soft), collider (Passive) or none",
        items=ROLE_ITEMS,
    )
    shape: EnumProperty(
        name="Shape",
        description="Shape the object collides as; its size comes from the object's dimensions",
        items=SHAPE_ITEMS,
        default="BOX",
    )
    mass: FloatProperty(
        name="Mass",
        description="Mass of an active body [kg]; must be positive",
        default=1.0,
        soft_min=0.001,
        soft_max=1000.0,
        precision=3,
    )
    friction: FloatProperty(
        name="Friction",
        description=(
            "How grippy this surface is: 0 slides freely, 1 holds on a 45° slope; a touching pair uses both "
            "surfaces' values combined by the scene's Friction Combine rule (Coulomb coefficient μ)"
        ),
        default=0.5,
        min=0.0,
        soft_max=2.0,
        update=_material_edited,
    )
    restitution: FloatProperty(
        name="Restitution",
        description=(
            "Bounciness of this surface (0 = no bounce, 1 = elastic); a touching pair uses both "
            "surfaces' values combined by the scene's Restitution Combine rule"
        ),
        default=0.0,
        min=0.0,
        max=1.0,
    )
    linear_damping: FloatProperty(
        name="Linear Damping",
        description=(
            "Fraction of an active body's velocity taken away per second, like air drag (0 = none); Blender's "
            "rigid body default"
        ),
        default=0.04,
        min=0.0,
        max=1.0,
    )
    angular_damping: FloatProperty(
        name="Angular Damping",
        description=(
            "Fraction of an active body's spin taken away per second, so rolling and spinning die down (0 = none); "
            "Blender's rigid body default"
        ),
        default=0.1,
        min=0.0,
        max=1.0,
    )
    # soft body (role 'SOFT'; read by addon.soft.gather) ---------------------------------------
    soft_preset: EnumProperty(
        name="Material",
        description=(
            "What the soft body is made of: a preset sets Young's Modulus, Poisson Ratio, Density, Damping and Friction"
        ),
        items=SOFT_PRESET_ITEMS,
        default="FLESH",
        update=_apply_soft_preset,
    )
    youngs_modulus: FloatProperty(
        name="Young's Modulus",
        description=(
            "How stiff the soft material is [Pa]: gel 1e4, flesh 1e5, rubber 1e6 to 5e6; must be positive "
            "(Young's modulus E)"
        ),
        default=1.0e5,  # the defaults are the Flesh preset's values
        soft_min=100.0,
        soft_max=1.0e8,
        precision=0,
        update=_material_edited,
    )
    poisson_ratio: FloatProperty(
        name="Poisson Ratio",
        description=(
            "How much the material keeps its volume: 0 = none (cork), towards 0.5 = incompressible (rubber); "
            "must be in [0, 0.5)"
        ),
        default=0.45,
        soft_min=0.0,
        soft_max=0.49,
        precision=3,
        update=_material_edited,
    )
    density: FloatProperty(
        name="Density",
        description="Mass per volume of the soft body [kg/m³] (water 1000); the mass follows from the filled volume",
        default=1050.0,
        soft_min=1.0,
        soft_max=20000.0,
        precision=1,
        update=_material_edited,
    )
    damping: FloatProperty(
        name="Damping",
        description=(
            "How quickly wobbling dies down [s]: 0 = only the time stepping's own damping (Rayleigh stiffness "
            "damping β: damping ratio β·ω/2 at angular frequency ω)"
        ),
        default=0.02,
        soft_min=0.0,
        soft_max=1.0,
        precision=4,
        update=_material_edited,
    )
    pin_group: StringProperty(
        name="Pin Group",
        description=(
            "Vertex group of pinned vertices (weight above 0.5): they follow the object's own animation (or stay "
            "put); empty = nothing pinned"
        ),
        default="",
    )
    volume_compressibility: FloatProperty(
        name="Volume Compressibility",
        description=(
            "Keeps the soft body's volume, on top of the material, against squeezing [1/atm]: 0 = off, smaller "
            "holds the volume more firmly. 1 is air at sea level; 0.01 is a bulk modulus of 100 atm (10 MPa), "
            "about 200 times more compressible than water (4.6e-5). The Flesh preset's own bulk stiffness is "
            "about 0.3 (volume penalty κ of Larionov et al., fully implicit frictional dynamics)"
        ),
        default=0.0,
        min=0.0,
        soft_max=10.0,
        precision=4,
    )
    volume_law: EnumProperty(
        name="Volume Law",
        description="How the pressure of the volume penalty grows as the volume changes",
        items=(
            (
                "QUADRATIC",
                "Quadratic",
                "Pressure in proportion to the volume change, alike for squeezing and stretching: "
                "W = V0 (V/V0 - 1)² / (2κ)",
            ),
            (
                "GAS",
                "Ideal Gas",
                "Like a trapped gas: stiffens without bound as the volume goes to zero (isothermal, pressure 1/κ)",
            ),
            ("LIQUID", "Liquid", "Like a liquid: softens when stretched, stiffens when squeezed (logarithmic law)"),
        ),
        default="QUADRATIC",
    )
    initial_velocity: FloatVectorProperty(
        name="Initial Velocity",
        description=(
            "Velocity of the whole object at the first frame, in the world (scene units per second): a thrown "
            "ball. Active rigid bodies and soft objects; pinned vertices still follow their pins"
        ),
        subtype="VELOCITY",
        size=3,
        default=(0.0, 0.0, 0.0),
    )
    lattice_resolution: IntProperty(
        name="Lattice Resolution",
        description=(
            "Lattice cells along the longest side of the mesh: the detail of the deformation against the bake's "
            "speed and memory (the tet count and the time per frame grow with its cube: the default cube is 3,072 "
            "tets at 8, 10,368 at 12, 24,576 at 16; Check Scene estimates it, and a bake above a million tets is "
            "refused)"
        ),
        # 8: the default cube (2 m, Flesh) bakes with the Soft engine at about 0.2 s per frame on 2 cores
        # (tests/benchmarks/bench_default_cube.py; 12 took 0.5-0.7 s)
        default=8,
        min=1,
        soft_max=32,  # a cube at 32 is 236k tets: ~1.3 GB and tens of seconds per frame
        max=256,  # high values are only sane for long thin meshes (a 1 m rope 1 cm thick: 256 × 3 × 3 cells)
    )
    lattice_fit: EnumProperty(
        name="Lattice Fit",
        description=(
            "How the lattice meets faces that lie on its cell planes, as a box's do. Fitted: it ends at them. "
            "Padded: one more layer of cells beyond them, which makes the body up to one cell stiffer than its "
            "mesh (files made before Fitted existed keep it). Open meshes, and IPC with the Mesh surface, always "
            "get the padded lattice"
        ),
        items=(
            ("FITTED", "Fitted", "The lattice ends at the faces that lie on its cell planes (closed meshes)"),
            ("PADDED", "Padded", "One more layer of cells beyond such faces: stiffer, as in older files"),
        ),
        default="FITTED",
    )
    ipc_surface: EnumProperty(
        name="IPC Surface",
        description=(
            "What of the mesh collides when the IPC engine bakes it. Split to Lattice: its faces split until no "
            "edge is longer than two lattice cells, so a coarse mesh (the default cube) rests on its faces. Mesh: its "
            "own vertices, edges and faces only, so a coarse mesh rests on its corners and sags between them "
            "(files made before Split to Lattice existed keep it)"
        ),
        items=(
            (
                "REFINED",
                "Split to Lattice",
                "The faces split to the lattice's cells collide (a coarse mesh rests on its faces)",
            ),
            ("MESH", "Mesh", "The mesh's own vertices, edges and faces collide, on the padded lattice (older files)"),
        ),
        default="REFINED",
    )
    # direction-dependent friction (course ch. 6; read by addon.friction.export) ---------------
    friction_model: EnumProperty(
        name="Friction Model",
        description="How the friction of this surface depends on the sliding direction",
        items=FRICTION_MODEL_ITEMS,
        default="COULOMB",
    )
    friction_t: FloatProperty(
        name="Friction Along",
        description=(
            "Friction when sliding along the structure direction (default 0.3; Anisotropic: "
            "the ellipse's axis along the structure; Matchstick: when both structures are parallel)"
        ),
        default=0.3,
        min=0.0,
        soft_max=2.0,
    )
    friction_b: FloatProperty(
        name="Friction Across",
        description=(
            "Friction when sliding across the structure direction (default 0.6; Anisotropic: "
            "the ellipse's axis across the structure; Matchstick: when both structures are parallel)"
        ),
        default=0.6,
        min=0.0,
        soft_max=2.0,
    )
    friction_kappa: FloatProperty(
        name="Tensor Scale",
        description=(
            "Overall strength of the tensor friction: with both tensors the identity the pair behaves like plain "
            "friction of twice this value (friction tensor scale κ, μ = 2κ)"
        ),
        default=0.25,
        min=0.0,
        soft_max=1.0,
    )
    friction_tensor: FloatVectorProperty(
        name="Tensor",
        description=(
            "How the friction depends on the direction, as a 2×2 matrix in the structure frame (t along the "
            "structure, b across): Q = [[Q_tt, Q_tb], [Q_tb, Q_bb]]; must be positive definite (Q_tt > 0, "
            "Q_tt·Q_bb > Q_tb²) so friction never adds energy"
        ),
        size=3,
        default=(1.0, 0.0, 1.0),
    )
    friction_spin: FloatProperty(
        name="Spin Friction",
        description=(
            "Resists spinning in place on a contact (a top, a coin): the largest twisting torque per newton of "
            "normal force, a length. 0 = off (torsional Coulomb–Contensou friction)"
        ),
        default=0.0,
        min=0.0,
        soft_max=0.1,
        subtype="DISTANCE",
        unit="LENGTH",
        precision=4,
    )
    structure_source: EnumProperty(
        name="Structure",
        description=(
            "Where the structure direction (fibre, grain, groove direction) of this surface comes from; "
            "used by the Anisotropic, Matchstick and Tensor models"
        ),
        items=STRUCTURE_SOURCE_ITEMS,
        default="NONE",
    )
    structure_attribute: StringProperty(
        name="Attribute",
        description=(
            "Name of the mesh attribute holding the structure direction in object space (FLOAT_VECTOR, on "
            "points, faces or face corners); modifiers and Geometry Nodes may create it. Length and normal component "
            "do not matter: it is projected onto the contact plane"
        ),
        default="",
    )
    structure_image: PointerProperty(
        name="Direction Image",
        description=(
            "Image in UV space whose RGB encodes the structure direction as 2·rgb − 1 along U (R) and V (G); "
            "must be Non-Color data"
        ),
        type=bpy.types.Image,
    )
    structure_axis: EnumProperty(
        name="Axis",
        description="Object axis used as the structure direction (it rotates with the object)",
        items=AXIS_ITEMS,
        default="X",
    )
    normal_map: PointerProperty(
        name="Normal Map",
        description=(
            "Tangent-space normal map whose facets plow into the other surface; empty = found automatically in "
            "the object's material (Image Texture ▸ Normal Map node ▸ shader Normal)"
        ),
        type=bpy.types.Image,
    )
    normal_map_directx: BoolProperty(
        name="DirectX Normal Map",
        description=(
            "The normal map's green channel points down (DirectX convention): flip it so facets tilt the right way"
        ),
        default=False,
    )
    normal_map_strength: FloatProperty(
        name="Strength",
        description=(
            "How strongly the normal map tilts the facets (0 = flat, no plowing friction; 1 = as painted); used "
            "with an explicitly picked normal map, an auto-detected one uses its Normal Map node's Strength"
        ),
        default=1.0,
        min=0.0,
        soft_max=2.0,
    )
    uv_map: StringProperty(
        name="UV Map",
        description=(
            "UV map for the normal map and direction image and for UV tangents; empty = the one the material's "
            "Normal Map node uses, else the active render UV map"
        ),
        default="",
    )
    texture_patch_size: FloatProperty(
        name="Patch Size",
        description=(
            "Side length of the square contact patch over which the normal map's facets are averaged into "
            "friction coefficients (default 0.05 m); larger = smoother friction, smaller = follows fine detail"
        ),
        default=0.05,
        min=1e-6,
        soft_min=0.001,
        soft_max=1.0,
        subtype="DISTANCE",
        unit="LENGTH",
        precision=4,
    )
    # bookkeeping of the last bake (not shown in the UI) --------------------------------------
    baked_action: PointerProperty(
        name="Baked Action",
        description="Action written by the last Contact Lab bake",
        type=bpy.types.Action,
    )
    has_previous: BoolProperty(
        name="Has Previous State",
        description="The fields below hold what the object had before its first bake",
        default=False,
    )
    previous_action: PointerProperty(
        name="Previous Action",
        description="Action the object had before it was baked; Clear Bake restores it",
        type=bpy.types.Action,
    )
    previous_slot: StringProperty(
        name="Previous Slot", description="Action slot the object used before it was baked; Clear Bake restores it"
    )
    previous_rotation_mode: StringProperty(
        name="Previous Rotation Mode",
        description=(
            "Rotation mode the object had before it was baked (a bake keys quaternions); Clear Bake restores it"
        ),
        default="XYZ",
    )
    previous_location: FloatVectorProperty(
        name="Previous Location",
        description="Location the object had before it was baked; Clear Bake restores it",
        size=3,
        subtype="TRANSLATION",
    )
    previous_rotation_quaternion: FloatVectorProperty(
        name="Previous Quaternion",
        description="Quaternion rotation the object had before it was baked; Clear Bake restores it",
        size=4,
        default=(1.0, 0.0, 0.0, 0.0),
        subtype="QUATERNION",
    )
    previous_rotation_euler: FloatVectorProperty(
        name="Previous Euler",
        description="Euler rotation the object had before it was baked; Clear Bake restores it",
        size=3,
        subtype="EULER",
    )


CLASSES = (CONTACT_LAB_SceneSettings, CONTACT_LAB_ObjectSettings)
