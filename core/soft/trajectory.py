"""The soft engine's result, :class:`SoftTrajectory` (the IPC engine's result extends it): it lives in
:mod:`contact_lab.core.fem.trajectory`.

The Blender bridge imports these names from here.
"""

from ..fem.trajectory import SoftTrajectory

__all__ = ["SoftTrajectory"]
