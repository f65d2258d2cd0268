"""The IPC engine's builder: :class:`IpcWorldBuilder` collects soft bodies, colliders and triangle-mesh colliders and
finalizes the immutable :class:`~.ipc_world.IpcWorld`, as ``SoftWorldBuilder`` finalizes a ``SoftWorld``.

Soft bodies and analytic colliders are added exactly as for the soft engine (the same methods, the same checks);
mesh colliders exist only under IPC. :meth:`IpcWorldBuilder.around` starts from a soft world that is already
finalized (the add-on builds it with the soft engine's bridge, which both engines share).
"""

from __future__ import annotations

import numpy as np

from ..errors import SoftWorldError
from ..fem.world import ColliderKind, SoftWorld, SoftWorldBuilder
from .ipc_world import IpcWorld, MeshCollider, _mesh_collider


class IpcWorldBuilder(SoftWorldBuilder):
    """Collects the soft engine's bodies and colliders plus mesh colliders; :meth:`finalize` returns the IPC world.

    Args:
        gravity: (3,) [m/s²].
        plane_half_size: inscribed radius [m] of the one triangle a PLANE collider becomes (default: ten times
            the soft bodies' extent and distance from the origin, plus 1 m).
    """

    def __init__(self, *, gravity=(0.0, 0.0, -9.81), plane_half_size: float | None = None):
        super().__init__(gravity=gravity)
        self.plane_half_size = plane_half_size
        self.mesh_colliders: list[MeshCollider] = []
        self._soft_world: SoftWorld | None = None

    @classmethod
    def around(cls, soft_world: SoftWorld, *, plane_half_size: float | None = None) -> IpcWorldBuilder:
        """A builder over a finalized soft world: only mesh colliders can still be added."""
        builder = cls(gravity=soft_world.gravity, plane_half_size=plane_half_size)
        builder._soft_world = soft_world
        return builder

    def add_mesh_collider(
        self,
        vertices,
        triangles,
        *,
        kind: ColliderKind = ColliderKind.STATIC,
        position=(0.0, 0.0, 0.0),
        orientation=(1.0, 0.0, 0.0, 0.0),
        friction: float = 0.5,
        anisotropic_friction=None,
        name: str = "",
    ) -> int:
        """Add a STATIC or KINEMATIC triangle-mesh collider; return its order among the mesh colliders.

        Args:
            vertices: (V, 3) in the collider frame [m]. triangles: (T, 3) indices, outward.
            kind: STATIC or KINEMATIC (a kinematic one follows its collider track).
            position: (3,) [m] and orientation: wxyz (4,) of the collider frame at frame 0.
            friction: mu. anisotropic_friction: optional (6,) as in ``add_collider`` (None: isotropic).
            name: label used in messages.

        In the finalized world the mesh colliders come after the soft world's static and kinematic colliders, in
        the order added (``IpcWorld.collider_soft_index`` is -1 for them).
        """
        label = name or f"mesh collider {len(self.mesh_colliders)}"
        aniso = np.zeros(6) if anisotropic_friction is None else np.asarray(anisotropic_friction, dtype=float)
        mesh = MeshCollider(
            np.asarray(vertices, dtype=float), np.asarray(triangles), kind, np.asarray(position, dtype=float),
            np.asarray(orientation, dtype=float), float(friction), aniso, label,
        )  # fmt: skip
        try:
            _mesh_collider(mesh)  # the world's own checks, now: the error points at this call
        except ValueError as exc:
            raise SoftWorldError(str(exc)) from exc
        self.mesh_colliders.append(mesh)
        return len(self.mesh_colliders) - 1

    def add_mesh_colliders(self, meshes) -> None:
        """Add ready :class:`MeshCollider` records (as the add-on's gather makes them), in order."""
        for m in meshes:
            self.mesh_colliders.append(m)

    def soft_world(self) -> SoftWorld:
        """The soft world under the IPC world: finalized from the bodies and colliders, or the one given."""
        if self._soft_world is None:
            return SoftWorldBuilder.finalize(self)
        if self.bodies or self.colliders:
            raise SoftWorldError("this IPC builder wraps a finalized soft world: add bodies to that world's builder")
        return self._soft_world

    def finalize(self) -> IpcWorld:  # type: ignore[override]  (the IPC world, not the soft one)
        """Flatten into an :class:`IpcWorld` (over the soft world of :meth:`soft_world`)."""
        return IpcWorld(self.soft_world(), self.mesh_colliders, plane_half_size=self.plane_half_size)
