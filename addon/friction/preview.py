"""Preview Friction, the bridge side: the friction a surface gives in one sliding direction, as vertex colours.

:func:`preview_friction` evaluates an object's friction inputs (exactly what a bake exports,
:mod:`.friction_export`) with the core's map (``core.friction.texture.surface_friction_map``) at every
vertex of the object's base mesh and writes the coefficients as a colour ramp into a POINT / FLOAT_COLOR
attribute (default ``contact_lab_friction``), made the active colour attribute. Blue = the lowest
coefficient on the mesh, red = the highest. ``direction`` is the direction in which the *other* surface
slides over this one, in the object's local axes; at every point the core projects it onto the surface's
tangent plane. The operator ``contact_lab.preview_friction`` only calls :func:`preview_friction`.
"""

import numpy as np

ATTRIBUTE_NAME = "contact_lab_friction"
"""Default name of the colour attribute written by the preview."""

RAMP = np.array(
    [
        (0.0, 0.0, 1.0),  # low: blue
        (0.0, 1.0, 1.0),
        (0.0, 1.0, 0.0),
        (1.0, 1.0, 0.0),
        (1.0, 0.0, 0.0),  # high: red
    ]
)
"""Colour stops (linear RGB) from the lowest to the highest coefficient."""


def friction_colors(values: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Map coefficients (N,) to RGBA (N, 4) on the blue → red ramp; returns ``(rgba, min, max)``.

    A constant map (max = min) is drawn in the middle of the ramp (green).
    """
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 0.0
    t = np.full(values.shape, 0.5) if hi <= lo else (values - lo) / (hi - lo)
    t = np.clip(np.nan_to_num(t, nan=0.0), 0.0, 1.0)
    stops = np.linspace(0.0, 1.0, len(RAMP))
    rgba = np.ones((values.shape[0], 4))
    for c in range(3):
        rgba[:, c] = np.interp(t, stops, RAMP[:, c])
    return rgba, lo, hi


def write_color_attribute(mesh, name: str, rgba: np.ndarray):
    """Write RGBA (V, 4) into a POINT / FLOAT_COLOR attribute ``name`` (replacing another of that name) and
    make it the active colour attribute. Returns the attribute."""
    attr = mesh.attributes.get(name)
    if attr is not None and (attr.data_type != "FLOAT_COLOR" or attr.domain != "POINT"):
        mesh.attributes.remove(attr)
        attr = None
    if attr is None:
        attr = mesh.color_attributes.new(name, "FLOAT_COLOR", "POINT")
    attr.data.foreach_set("color", np.ascontiguousarray(rgba, dtype=np.float32).ravel())
    mesh.color_attributes.active_color = attr
    mesh.update()
    return attr


def preview_values(obj, direction, depsgraph, length_scale: float) -> np.ndarray:
    """Friction coefficient (V,) at every vertex of ``obj``'s base mesh for sliding along ``direction``.

    Args:
        direction: sliding direction of the other surface, object axes (3,).
        depsgraph: evaluated depsgraph (the surface is read from the evaluated mesh, as in a bake).
        length_scale: metres per Blender unit.

    Raises:
        ValueError: fatal friction-input problems (message lists them). ImportError: the core lookup is missing.
    """
    from ...core.friction import lookup, texture
    from . import export as friction_export

    fatal = [i.message for i in friction_export.friction_issues(obj, depsgraph) if i.fatal]
    if fatal:
        raise ValueError("; ".join(fatal))
    centre, scale = friction_export.shape_frame(obj)
    surface = friction_export.surface_friction(
        obj, depsgraph=depsgraph, centre_local=centre, scale=scale, length_scale=length_scale
    )
    pool = lookup.pack_surfaces([surface])
    mesh = obj.data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    points = scale * (co.reshape(-1, 3).astype(np.float64) - centre) * length_scale
    d = scale * np.asarray(direction, dtype=np.float64)
    norm = np.linalg.norm(d)
    if not norm > 0.0:
        raise ValueError("the direction must not be zero")
    return np.asarray(texture.surface_friction_map(pool, 0, points, d / norm), dtype=np.float64)


def preview_friction(obj, direction, depsgraph, length_scale: float, attribute_name: str = ATTRIBUTE_NAME):
    """Colour ``obj``'s mesh by its friction for sliding along ``direction``; returns ``(lowest, highest)`` μ.

    Args:
        obj: a mesh object with Contact Lab friction settings.
        direction: sliding direction of the other surface, object axes (3,).
        depsgraph: evaluated depsgraph. length_scale: metres per Blender unit.
        attribute_name: the POINT / FLOAT_COLOR attribute that receives the colours.

    Raises:
        ValueError: fatal friction-input problems or a zero direction. ImportError: the core lookup is missing.
    """
    values = preview_values(obj, direction, depsgraph, length_scale)
    rgba, lo, hi = friction_colors(values)
    write_color_attribute(obj.data, attribute_name, rgba)
    return lo, hi
