"""Incremental Potential Contact (IPC, Li et al. 2020): barrier contact for soft bodies."""
