"""The volume penalty's model and units, shared with the IPC engine's worlds: they live in
:mod:`contact_lab.core.fem.volume`.

The Blender bridge imports these names from here.
"""

from ..fem.volume import VolumeModel, kappa_per_pa

__all__ = ["VolumeModel", "kappa_per_pa"]
