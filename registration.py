"""The entry point's registration: every class of the add-on, and the ``Scene``/``Object`` settings pointers.

The one module that knows all three layers: the bridge's settings (``addon.properties``), the operators and
the panels. The bridge itself knows no UI.

Idempotent and loud: a second :func:`register` is a no-op, errors propagate (nothing is swallowed),
:func:`unregister` undoes everything in reverse order.
"""

import bpy

from .addon import properties, versioning
from .addon.warmup import jitcache, warmup
from .operators import bake as operators_bake
from .operators import preview as operators_preview
from .operators import rigid_body_import as operators_rigid_body_import
from .operators import validate as operators_validate
from .operators import warmup as operators_warmup
from .panels import physics as panels_physics

MODULES = (
    properties,
    operators_bake,
    operators_preview,
    operators_rigid_body_import,
    operators_validate,
    operators_warmup,
    panels_physics,
)
"""Modules whose ``CLASSES`` are registered, in this order."""

_registered: list = []


def classes() -> tuple:
    """Every class to register, in registration order."""
    return tuple(cls for module in MODULES for cls in module.CLASSES)


def is_registered() -> bool:
    return bool(_registered)


def register() -> None:
    """Register all classes and attach ``Scene.contact_lab`` / ``Object.contact_lab``."""
    if _registered:
        return
    jitcache.configure()
    try:
        for cls in classes():
            bpy.utils.register_class(cls)
            _registered.append(cls)
        # adding these pointers is what registering does: the stubs (Blender's own types) cannot know them
        bpy.types.Scene.contact_lab = bpy.props.PointerProperty(  # pyright: ignore[reportAttributeAccessIssue]
            type=properties.CONTACT_LAB_SceneSettings
        )
        bpy.types.Object.contact_lab = bpy.props.PointerProperty(  # pyright: ignore[reportAttributeAccessIssue]
            type=properties.CONTACT_LAB_ObjectSettings
        )
    except BaseException:
        _unregister_classes()  # leave no half-registered state behind, then re-raise
        raise
    versioning.register()  # files of older versions keep the defaults they were made with
    if warmup.schedule():  # compile the solvers in the background, once per version (installed extension, UI)
        operators_warmup.follow_warmup()


def _unregister_classes() -> None:
    while _registered:
        bpy.utils.unregister_class(_registered.pop())


def unregister() -> None:
    """Undo :func:`register` in reverse order; a no-op when not registered."""
    if not _registered:
        return
    warmup.stop()
    versioning.unregister()
    for owner in (bpy.types.Object, bpy.types.Scene):
        if hasattr(owner, "contact_lab"):
            delattr(owner, "contact_lab")
    _unregister_classes()
