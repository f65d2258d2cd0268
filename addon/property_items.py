"""The choices of Contact Lab's settings (enum items: identifier, label, tooltip) and the material presets' values.

Plain data without Blender, read by :mod:`.properties` (which declares the settings) and by
``docs/settings_reference.py`` (which lists them in docs/settings.md). Blender stores an enum by its position:
every item table is append-only (never reorder or remove an item).
"""

ROLE_ITEMS = (
    ("NONE", "None", "Not part of the simulation"),
    ("ACTIVE", "Active", "Simulated rigid body: moved by gravity and contacts, baked to keyframes"),
    ("PASSIVE", "Passive", "Collider: static, or follows its own animation (kinematic); never baked"),
    (
        "SOFT",
        "Soft",
        "Deformable body (finite elements on a lattice filling the mesh), baked to shape keys or a PC2 cache; "
        "needs the scene's engine set to Soft or IPC",
    ),
)

ENGINE_ITEMS = (
    (
        "RIGID",
        "Rigid",
        "Solid objects that fall, bounce, slide and stack, baked to keyframes; exact Coulomb friction, solved by "
        "the scene's Solver (PROX, PGS or Newton)",
    ),
    (
        "SOFT",
        "Soft",
        "Squishy objects (implicit finite elements) landing on colliders and active boxes; the soft bodies are "
        "baked to shape keys or a PC2 cache, the boxes to keyframes",
    ),
    (
        "IPC",
        "IPC",
        "Squishy objects that never pass through anything or turn inside out; slower than Soft (Incremental "
        "Potential Contact)",
    ),
)
"""``Scene.contact_lab.engine``."""

SOFT_OUTPUT_ITEMS = (
    (
        "SHAPE_KEYS",
        "Shape Keys",
        "One shape key per frame with keyed values: self-contained .blend, fine for short clips",
    ),
    (
        "PC2",
        "PC2 Cache",
        "A PC2 point cache file per object in the Cache Folder, played by a Mesh Cache modifier: small .blend, "
        "the file must travel with it",
    ),
)
"""``Scene.contact_lab.soft_output``."""

SOFT_CONTACT_ITEMS = (
    (
        "IMPLICIT",
        "Implicit",
        "Robust contact for most scenes: contact springs and smoothed friction solved together with the material "
        "in every implicit step (the fully implicit frictional dynamics of Larionov et al.)",
    ),
    (
        "DUAL",
        "Dual",
        "Exact sticking for scenes with few contacts: contact impulses solved by the scene's Solver (PGS, "
        "otherwise PROX) on the Delassus operator J A⁻¹ Jᵀ",
    ),
)
"""``Scene.contact_lab.soft_contact``."""

SOFT_PRESET_ITEMS = (
    (
        "RUBBER",
        "Rubber",
        "Soft natural rubber: bouncy and grippy (Young's modulus E 2 MPa, Poisson ratio ν 0.47, 1100 kg/m³, "
        "friction μ 0.8)",
    ),
    (
        "GEL",
        "Gel",
        "Gelatin or ballistic gel: wobbly and slippery (Young's modulus E 10 kPa, Poisson ratio ν 0.45, 1000 kg/m³, "
        "friction μ 0.3)",
    ),
    (
        "FLESH",
        "Flesh",
        "Soft tissue (muscle, fat): well damped (Young's modulus E 100 kPa, Poisson ratio ν 0.45, 1050 kg/m³, "
        "friction μ 0.5)",
    ),
    (
        "FOAM",
        "Foam",
        "Flexible polyurethane foam: light, squashes and recovers slowly (Young's modulus E 100 kPa, Poisson ratio "
        "ν 0.2, 75 kg/m³, friction μ 0.6)",
    ),
    ("CUSTOM", "Custom", "Your own values (chosen automatically when a material value is edited)"),
)
"""``Object.contact_lab.soft_preset``."""

SOFT_PRESETS = {
    "RUBBER": {"youngs_modulus": 2.0e6, "poisson_ratio": 0.47, "density": 1100.0, "damping": 0.002, "friction": 0.8},
    "GEL": {"youngs_modulus": 1.0e4, "poisson_ratio": 0.45, "density": 1000.0, "damping": 0.01, "friction": 0.3},
    "FLESH": {"youngs_modulus": 1.0e5, "poisson_ratio": 0.45, "density": 1050.0, "damping": 0.02, "friction": 0.5},
    "FOAM": {"youngs_modulus": 1.0e5, "poisson_ratio": 0.2, "density": 75.0, "damping": 0.05, "friction": 0.6},
}
"""Values each material preset sets (SI units). Sources and rationale:

- Young's modulus E [Pa] at small strain: soft natural rubber 1–5 MPa (engineering tables; 2 MPa is a typical
  shore-A 40–50 rubber), gelatin / ballistic gel 10–20 kPa, soft tissue 10–100 kPa (muscle and fat, elastography
  literature), flexible polyurethane foam about 0.1 MPa (Gibson & Ashby, *Cellular Solids*).
- Poisson ratio ν: rubber, gels and tissue are nearly incompressible (ν 0.49+ measured) but linear tets lock near
  0.5, so 0.47 / 0.45 keep them soft; the Volume Compressibility setting (the volume penalty of Larionov et al.,
  fully implicit frictional dynamics) restores the lost incompressibility. Open-cell
  foams are compressible, ν 0.0–0.3 (Gibson & Ashby): 0.2.
- Density ρ [kg/m³]: filled natural rubber 1100, gel ≈ water 1000, soft tissue 1050, flexible foam 30–100 (75).
- Damping β [s], Rayleigh stiffness-proportional: damping ratio ζ = β ω / 2 at angular frequency ω. For a 1 m
  object the first mode is about ω ≈ (π / L) √(E/ρ): rubber 134 rad/s → ζ ≈ 0.13 (bouncy), gel 10 rad/s → ζ ≈ 0.05
  (jiggles for a while), flesh 31 rad/s → ζ ≈ 0.3, foam 115 rad/s → ζ ≈ 3 (overdamped, slow recovery). Smaller
  objects ring at higher ω and are damped more.
- Friction μ on dry hard surfaces: rubber 0.6–1.0 (0.8), gel 0.2–0.4 (0.3), skin 0.3–0.7 (0.5), foam 0.5–0.7 (0.6).
"""

SOFT_MATERIAL_FIELDS = ("youngs_modulus", "poisson_ratio", "density", "damping", "friction")
"""The object settings a preset sets."""

SHAPE_ITEMS = (
    ("BOX", "Box", "Box fitted to the object's bounding box (non-uniform scale allowed)"),
    ("SPHERE", "Sphere", "Ball as wide as the object's largest dimension, centred on the bounding box"),
    (
        "CAPSULE",
        "Capsule",
        "Pill along local Z as tall as the object: radius half the larger of its X and Y dimensions",
    ),
    ("PLANE", "Plane", "Infinite ground: the object's local XY plane through its origin, solid below local -Z"),
    (
        "MESH",
        "Mesh",
        "The evaluated mesh's triangles, for concave objects like bowls and blades: any collider; an active body "
        "needs a closed mesh (Rigid engine). The Soft engine cannot use it",
    ),
    (
        "CYLINDER",
        "Cylinder",
        "Cylinder along local Z fitted to the bounding box: radius half the larger of the X and Y dimensions",
    ),
    (
        "CONE",
        "Cone",
        "Cone along local Z fitted to the bounding box: base at the bottom (-Z), tip at the top; radius half the "
        "larger of the X and Y dimensions",
    ),
    (
        "CONVEX_HULL",
        "Convex Hull",
        "The tightest convex shape around the evaluated mesh's vertices, as if shrink-wrapped (fewer vertices "
        "collide faster)",
    ),
    (
        "COMPOUND",
        "Compound Parent",
        "One rigid body made of this object's direct children that have a Role of their own: each collides with its "
        "own Shape; this object's settings apply to the whole",
    ),
)
"""``Object.contact_lab.shape``. Blender stores an enum by its position: items are append-only (never reorder)."""

RIGID_ONLY_SHAPES = frozenset({"CYLINDER", "CONE", "CONVEX_HULL", "COMPOUND"})
"""Shapes only the Rigid engine simulates."""

SOLVER_ITEMS = (
    (
        "PROX",
        "PROX",
        "Accurate friction, the default: the exact Coulomb friction cone, solved with proximal maps (the PROX "
        "method of Erleben)",
    ),
    (
        "PGS",
        "PGS",
        "Fastest, with less accurate friction: friction limited by a box instead of a cone, so sliding may favour "
        "the box's axes (projected Gauss-Seidel)",
    ),
    (
        "NEWTON",
        "Newton",
        "Slowest, each contact solved exactly: Newton's method on the Fischer-Burmeister function per contact, "
        "inside Gauss-Seidel sweeps",
    ),
)

COMBINE_ITEMS = (
    ("GEOMETRIC", "Geometric Mean", "Between the two, nearer the smaller; equal values give that value: √(a·b)"),
    ("AVERAGE", "Average", "Halfway between the two: (a + b) / 2"),
    ("MINIMUM", "Minimum", "The more slippery or less bouncy surface wins: min(a, b)"),
    ("MAXIMUM", "Maximum", "The grippier or bouncier surface wins: max(a, b)"),
    ("PRODUCT", "Product", "The two multiplied, lower than either below 1: a·b (Bullet's friction rule)"),
)

FRICTION_MODEL_ITEMS = (
    ("COULOMB", "Coulomb", "The same friction in every sliding direction (isotropic Coulomb friction, μ)"),
    (
        "ANISOTROPIC",
        "Anisotropic",
        "Friction that differs along and across a direction (wood grain, brushed metal, grooves): Friction Along "
        "when sliding along the structure direction, Friction Across when sliding across it (elliptic Coulomb "
        "friction)",
    ),
    (
        "MATCHSTICK",
        "Matchstick",
        "Two structured surfaces whose grip depends on how their directions meet: the plain Friction when they "
        "cross at a right angle, Friction Along / Friction Across when they are parallel, blended by the angle "
        "between them (matchstick model)",
    ),
    (
        "TENSOR",
        "Tensor",
        "Full control of direction-dependent friction by a 2×2 matrix per surface (friction tensor): force = "
        "−κ·(Q_A + R Q_B Rᵀ)·(sliding direction)·(normal force), Q in the structure frame",
    ),
    (
        "TEXTURE",
        "Texture",
        "Plowing friction computed from the material's normal map: facets tilted against the motion resist "
        "(sawtooth ridges slide one way, stick the other)",
    ),
)
"""``Object.contact_lab.friction_model``; names match :class:`core.friction.surface.SurfaceFrictionModel`."""

STRUCTURE_SOURCE_ITEMS = (
    ("NONE", "None", "No structure direction: the surface has the same friction in every direction"),
    (
        "ATTRIBUTE",
        "Attribute",
        "A mesh attribute holding a direction per point, face or face corner, in object space (FLOAT_VECTOR)",
    ),
    (
        "IMAGE",
        "Image",
        "A direction image in UV space, read like a tangent-space normal map's XY: RGB = (2·rgb − 1) along U and V",
    ),
    ("UV_TANGENT", "UV Tangent", "The direction in which the UV map's U coordinate increases"),
    ("AXIS", "Axis", "A fixed axis of the object (rotates with it)"),
)
"""``Object.contact_lab.structure_source``; names match :class:`core.friction.surface.StructureSource`."""

AXIS_ITEMS = (
    ("X", "X", "The object's local X axis"),
    ("Y", "Y", "The object's local Y axis"),
    ("Z", "Z", "The object's local Z axis"),
)

COMBINE_PHRASES = {
    "GEOMETRIC": "geometric mean",
    "AVERAGE": "average",
    "MINIMUM": "minimum",
    "MAXIMUM": "maximum",
    "PRODUCT": "product",
}
"""Short phrase per combine rule, for panels and reports."""
