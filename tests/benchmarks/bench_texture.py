"""Texture-friction benchmark: warm cost of ``texture_patch_coefficients`` per contact and of ``pack_surfaces``.

Run: ``python tests/benchmarks/bench_texture.py``. Both surfaces carry a 256 x 256 normal map on a bumpy
height-field mesh (about 1k and 10k triangles, so the grid lookup is exercised); each contact samples a
16 x 16 patch in the 4 BLCP directions. Contacts are spread over the mesh with random frames about the
mean normal. Prints a table (cold = first call incl. JIT compile or cache load). Not part of ``make test``.
"""

from __future__ import annotations

import time

import numpy as np
from contact_lab.core.friction.lookup import pack_surfaces
from contact_lab.core.friction.surface import SurfaceFriction, SurfaceFrictionModel, SurfaceMesh, TextureImage
from contact_lab.core.friction.texture import (
    DEPTH_WINDOW_MIN,
    PLOWING_THETA,
    STANDARD_DIRECTIONS,
    texture_patch_coefficients,
)

CONTACTS = 400
PATCH = 0.05
RESOLUTION = 16


def height_field(cells: int, up: bool, seed: int) -> SurfaceMesh:
    """1 m x 1 m height field with 2 cells^2 triangles, gentle bumps (1 mm), UV = xy."""
    rng = np.random.default_rng(seed)
    xs = np.linspace(0, 1, cells + 1)
    gx, gy = np.meshgrid(xs, xs, indexing="ij")
    gz = 0.001 * rng.uniform(-1, 1, gx.shape)
    verts = np.stack([gx, gy, gz], -1).reshape(-1, 3)
    idx = np.arange((cells + 1) ** 2).reshape(cells + 1, cells + 1)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    tris = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)]) if up else None
    if not up:
        tris = np.concatenate([np.stack([a, c, b], 1), np.stack([a, d, c], 1)])
    tris = tris.astype(np.int32)
    return SurfaceMesh(verts, tris, verts[tris][:, :, :2].copy())


def normal_map(seed: int, size: int = 256) -> TextureImage:
    rng = np.random.default_rng(seed)
    th = rng.uniform(0, 0.6, (size, size))
    be = rng.uniform(0, 2 * np.pi, (size, size))
    n = np.stack([np.sin(th) * np.cos(be), np.sin(th) * np.sin(be), np.cos(th)], -1)
    px = np.ones((size, size, 4), np.float32)
    px[..., :3] = (n + 1) / 2
    return TextureImage(px)


def bench(cells: int) -> dict:
    surfaces = [
        SurfaceFriction(
            model=SurfaceFrictionModel.TEXTURE, mesh=height_field(cells, True, 1), normal_map=normal_map(1)
        ),
        SurfaceFriction(
            model=SurfaceFrictionModel.TEXTURE, mesh=height_field(cells, False, 2), normal_map=normal_map(2)
        ),
    ]
    t0 = time.perf_counter()
    pool = pack_surfaces(surfaces)
    pack_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    pool = pack_surfaces(surfaces)
    pack_warm = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    points = np.column_stack([rng.uniform(0.1, 0.9, (CONTACTS, 2)), np.zeros(CONTACTS)])
    psi = rng.uniform(0, 2 * np.pi, CONTACTS)
    n = np.array([0.0, 0.0, 1.0])
    eye = np.eye(3)
    zero = np.zeros(3)
    out = np.zeros(4)
    scratch = np.zeros((2, RESOLUTION * RESOLUTION, 5))
    work = np.zeros((8, 3))
    window = max(PATCH, DEPTH_WINDOW_MIN)

    def run(i):
        t = np.array([np.cos(psi[i]), np.sin(psi[i]), 0.0])
        b = np.array([-np.sin(psi[i]), np.cos(psi[i]), 0.0])
        return texture_patch_coefficients(
            pool, 0, eye, zero, 1, eye, zero, points[i], n, t, b, STANDARD_DIRECTIONS,
            PATCH, RESOLUTION, PLOWING_THETA, window, out, scratch, work,
        )  # fmt: skip

    t0 = time.perf_counter()
    run(0)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    overlap = 0
    for i in range(CONTACTS):
        overlap += run(i)
    warm = (time.perf_counter() - t0) / CONTACTS
    return {
        "triangles": int(pool.shape_tri_start[1]),
        "cells": int(np.prod(pool.grid_dims[0])),
        "pack_first_ms": pack_first * 1e3,
        "pack_ms": pack_warm * 1e3,
        "cold_s": cold,
        "us_per_contact": warm * 1e6,
        "overlap": overlap / CONTACTS,
    }


def main() -> None:
    print(f"texture_patch_coefficients: {RESOLUTION}x{RESOLUTION} patch of {PATCH} m, 4 directions, both textured")
    print(f"{'triangles/mesh':>15} {'grid cells':>10} {'pack 1st [ms]':>14} {'pack [ms]':>10} "
          f"{'cold [s]':>9} {'warm [us/contact]':>18} {'overlap px':>10}")  # fmt: skip
    for cells in (22, 71):
        r = bench(cells)
        print(
            f"{r['triangles']:>15} {r['cells']:>10} {r['pack_first_ms']:>14.1f} {r['pack_ms']:>10.1f} "
            f"{r['cold_s']:>9.2f} {r['us_per_contact']:>18.1f} {r['overlap']:>10.1f}"
        )


if __name__ == "__main__":
    main()
