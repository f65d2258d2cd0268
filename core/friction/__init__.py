"""Friction models beyond isotropic Coulomb: per-surface inputs and per-contact friction sets."""
