"""The IPC engine: Incremental Potential Contact (course ch. 5, Li et al. 2020), intersection-free by construction.

The same shape as its siblings :mod:`..rigid` and :mod:`..soft`:

- ``builder``: :class:`IpcWorldBuilder` (the soft engine's builder plus mesh colliders) finalizes the immutable
  :class:`IpcWorld`, a world of FEM bodies with the collision surface IPC works on; the FEM layer
  :mod:`..fem` (meshes, materials, the world, the frame loop's set-up) is shared with the soft engine;
- ``frame_loop``: the generator :func:`iter_simulate` yields after every frame; :func:`simulate` runs it out;
- ``trajectory``: the result, :class:`IpcTrajectory` (positions and per-frame statistics).

Inside: ``distance`` (point–triangle, edge–edge distances and derivatives), ``barrier`` (log barrier and
adaptive stiffness), ``friction`` (lagged mollified friction), ``broad_phase`` and ``ccd`` (swept boxes,
conservative time of impact), ``kernels`` (assembly), ``ipc_solver`` (projected Newton with CCD-filtered
line search) and ``intersection`` (the independent exact checker).
"""

from .builder import IpcWorldBuilder
from .frame_loop import check_state, iter_simulate, iter_simulate_ipc, simulate
from .ipc_solver import IpcSettings, IpcStats
from .ipc_world import IpcWorld, MeshCollider
from .trajectory import IpcTrajectory

__all__ = [
    "check_state",
    "IpcSettings",
    "IpcStats",
    "IpcTrajectory",
    "IpcWorld",
    "IpcWorldBuilder",
    "iter_simulate",
    "iter_simulate_ipc",
    "MeshCollider",
    "simulate",
]
