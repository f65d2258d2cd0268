"""Stand-ins for Blender objects shared by the mocked-bpy tests (plain namespaces with the attributes read)."""

import types


def rigid_object(name, role, shape, mass=1.0, size=1.0, **extra):
    """A rigid Contact Lab object with no parent, constraints or delta transform; its bounding box a cube of edge
    ``size`` [m] about the origin. ``extra`` adds attributes (type, own transform)."""
    h = size / 2
    return types.SimpleNamespace(
        name=name,
        **extra,
        contact_lab=types.SimpleNamespace(role=role, shape=shape, mass=mass, friction=0.5, restitution=0.0),
        parent=None,
        constraints=(),
        delta_location=(0.0, 0.0, 0.0),
        delta_rotation_euler=(0.0, 0.0, 0.0),
        delta_rotation_quaternion=(1.0, 0.0, 0.0, 0.0),
        delta_scale=(1.0, 1.0, 1.0),
        bound_box=[(x, y, z) for x in (-h, h) for y in (-h, h) for z in (-h, h)],
    )
