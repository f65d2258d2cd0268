"""Gathered IPC-engine scene → IPC world, on any thread: the soft world (:mod:`..soft.build`) plus the triangle-mesh
colliders, their collider tracks by IPC collider index and the solver settings.

No bpy here (the bake's worker thread runs it): :mod:`.gather` reads the scene on Blender's main thread into an
:class:`IpcSceneInput`, and :func:`build_ipc_scene` turns it into an :class:`IpcSceneExport`. Lengths in metres.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

from ...core.ipc.builder import IpcWorldBuilder
from ...core.ipc.ipc_solver import IpcSettings, resolved_dhat
from ...core.ipc.ipc_world import IpcWorld, MeshCollider
from ..errors import BakeError
from ..soft.build import SoftColliderExport, SoftSceneExport, SoftSceneInput, build_soft_scene


@dataclass(kw_only=True)
class IpcBakeSettings:
    """The IPC engine's settings as the scene sets them (SI units): read by :func:`gather_ipc_scene`, handed
    unchanged from the gathered scene to its export."""

    dhat: float = 0.0
    """Barrier distance [m]; 0 = automatic."""
    kappa: float = 0.0
    """Barrier stiffness [Pa/m]; 0 = automatic."""
    eps_v: float = 1.0e-3
    """Static friction speed [m/s]."""
    tolerance: float = 1.0e-3
    max_iterations: int = 100
    check_intersections: bool = False

    def ipc_bake_settings(self) -> dict:
        """These settings by name."""
        return {f.name: getattr(self, f.name) for f in fields(IpcBakeSettings)}


@dataclass
class IpcSceneExport(SoftSceneExport, IpcBakeSettings):
    """A soft export plus the IPC view of its world: everything :class:`~.bake.IpcBakeJob` needs.

    ``world`` stays the :class:`SoftWorld` (the bake reads soft bodies and dynamic boxes from the IPC states
    through it); ``collider_tracks`` stay keyed by soft-world collider index, ``ipc_collider_tracks`` are the
    ones the IPC engine takes.
    """

    ipc_world: IpcWorld | None = None
    mesh_colliders: list[SoftColliderExport] = field(default_factory=list)
    """Passive Mesh-shaped objects; their ``collider_index`` is the IPC world's (they are not in ``world``)."""
    ipc_collider_tracks: dict = field(default_factory=dict)
    """``{IPC collider index: (positions (F, 3) [m], quaternions (F, 4) wxyz)}`` of kinematic colliders."""

    @property
    def passive_colliders(self) -> list[SoftColliderExport]:
        return super().passive_colliders + self.mesh_colliders

    def ipc_settings(self) -> IpcSettings:
        """The core's :class:`~contact_lab.core.ipc.ipc_solver.IpcSettings` for this bake (the soft engine's
        :meth:`solver_settings` stay those of the soft world it is built on)."""
        return IpcSettings(
            dhat=self.dhat,
            kappa=self.kappa,
            eps_v=self.eps_v,
            tolerance=self.tolerance,
            max_iterations=self.max_iterations,
            substeps=self.substeps,
            check_intersections=self.check_intersections,
        )

    def resolved_dhat(self) -> float:
        """The barrier distance the solver uses [m]: the setting, or the automatic one."""
        assert self.ipc_world is not None  # build_ipc_scene always sets it
        return resolved_dhat(self.ipc_world, self.ipc_settings())


@dataclass
class MeshColliderInput:
    """A passive Mesh-shaped object as read from Blender: the core's :class:`MeshCollider` and its record."""

    collider: MeshCollider
    record: SoftColliderExport
    """Its ``collider_index`` is set by :func:`build_ipc_scene` (the IPC world numbers the colliders)."""
    track: tuple | None = None
    """Kinematic: ``(positions (F, 3) [m], quaternions (F, 4) wxyz)``."""


@dataclass
class IpcSceneInput(SoftSceneInput, IpcBakeSettings):
    """An IPC-engine scene as read from Blender (:func:`gather_ipc_scene`): the soft input plus the mesh colliders
    and the IPC settings; plain data, built into an :class:`IpcSceneExport` on any thread."""

    meshes: list[MeshColliderInput] = field(default_factory=list)


def build_ipc_scene(inp: IpcSceneInput) -> IpcSceneExport:
    """The IPC world of a gathered scene (no bpy: any thread; the bake's worker thread builds it).

    Raises:
        BakeError: the soft world or the IPC world cannot be built.
    """
    base = build_soft_scene(inp)  # each body's surface as the gather set it (IPC's REFINED or MESH)
    try:
        builder = IpcWorldBuilder.around(base.world)
        builder.add_mesh_colliders(m.collider for m in inp.meshes)
        world = builder.finalize()
    except ValueError as exc:
        raise BakeError(f"the IPC world cannot be built: {exc}") from exc
    tracks = {}
    for k, soft_index in enumerate(world.collider_soft_index):
        if soft_index >= 0 and int(soft_index) in base.collider_tracks:
            tracks[k] = base.collider_tracks[int(soft_index)]
    mesh_index = np.flatnonzero(world.collider_soft_index < 0)  # the mesh colliders, in the order given
    records = []
    for j, mesh in enumerate(inp.meshes):
        record = replace(mesh.record, collider_index=int(mesh_index[j]))
        records.append(record)
        if mesh.track is not None:
            tracks[record.collider_index] = mesh.track
    values = {f.name: getattr(base, f.name) for f in fields(SoftSceneExport)}
    values.update(contact="IPC", integrator="BE", contact_thickness=0.0)  # IPC steps with backward Euler
    return IpcSceneExport(
        **values,
        ipc_world=world,
        mesh_colliders=records,
        ipc_collider_tracks=tracks,
        **inp.ipc_bake_settings(),
    )
