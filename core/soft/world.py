"""The soft engine's builder and model, :class:`SoftWorldBuilder` and :class:`SoftWorld`: the world of FEM
bodies and colliders is shared with the IPC engine and lives in :mod:`contact_lab.core.fem.world`.

The Blender bridge imports these names from here.
"""

from ..fem.world import ColliderKind, SoftWorld, SoftWorldBuilder, SoftWorldState

__all__ = ["ColliderKind", "SoftWorld", "SoftWorldBuilder", "SoftWorldState"]
