"""PC2 ("POINTCACHE2") point-cache files: per-frame vertex positions for Blender's Mesh Cache modifier.

Layout (little-endian), as read by Blender's ``MOD_meshcache_pc2``:

- a 32-byte header ``struct.pack("<12siiffi", b"POINTCACHE2\\0", 1, n_verts, start, rate, n_frames)``;
- then ``n_frames`` samples of ``n_verts`` float32 ``(x, y, z)`` triples.

Pure numpy (no bpy): the whole payload is one contiguous float32 buffer, no per-vertex Python loop.
Writes are atomic: a temporary file in the target directory is filled, flushed, fsynced and then
``os.replace``-d over the target, so readers never see a partial cache and an error leaves any
previous file untouched.
"""

from __future__ import annotations

import os
import struct
import tempfile

import numpy as np

__all__ = ["HEADER", "HEADER_SIZE", "SIGNATURE", "read_pc2", "read_pc2_header", "write_pc2"]

SIGNATURE = b"POINTCACHE2\0"
HEADER = struct.Struct("<12siiffi")
HEADER_SIZE = HEADER.size  # 32 bytes
VERSION = 1
_DTYPE = np.dtype("<f4")


def _as_positions(frames_positions) -> np.ndarray:
    positions = np.asarray(frames_positions)
    if positions.ndim != 3 or positions.shape[2] != 3:
        raise ValueError(f"expected positions of shape (F, V, 3), got {positions.shape}")
    if positions.shape[0] < 1 or positions.shape[1] < 1:
        raise ValueError(f"need at least one frame and one vertex, got {positions.shape}")
    if not np.issubdtype(positions.dtype, np.number):
        raise TypeError(f"positions must be numeric, got {positions.dtype}")
    positions = np.ascontiguousarray(positions, dtype=_DTYPE)
    if not np.all(np.isfinite(positions)):
        raise ValueError("positions must be finite in float32")
    return positions


def _file_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        return 0o644


def write_pc2(path, frames_positions, *, start_frame, sample_rate: float = 1.0) -> None:
    """Write ``frames_positions`` (F, V, 3) to the PC2 file ``path`` atomically.

    Args:
        path: target file (str or path-like); its directory must exist.
        frames_positions: vertex positions per frame, shape (F, V, 3), any float dtype (stored as float32).
        start_frame: frame of sample 0, stored in the header (Blender's Mesh Cache in its default
            'FRAME' time mode ignores it and uses the modifier's ``frame_start`` instead).
        sample_rate: frames between samples (1.0 = one sample per frame).

    Raises:
        ValueError/TypeError: bad shape, empty, non-finite or non-numeric input; nothing is written.
        OSError: the write failed; any previous file at ``path`` is left as it was.
    """
    positions = _as_positions(frames_positions)
    sample_rate = float(sample_rate)
    start_frame = float(start_frame)
    if not (np.isfinite(sample_rate) and sample_rate > 0.0):
        raise ValueError(f"sample_rate must be finite and > 0, got {sample_rate}")
    if not np.isfinite(start_frame):
        raise ValueError(f"start_frame must be finite, got {start_frame}")
    n_frames, n_verts, _ = positions.shape
    header = HEADER.pack(SIGNATURE, VERSION, n_verts, start_frame, sample_rate, n_frames)

    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            f.write(memoryview(positions).cast("B"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _file_mode(path))  # mkstemp makes 0600 files: keep the cache readable (farms)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def read_pc2_header(path) -> tuple[int, int, float, float]:
    """``(n_frames, n_verts, start, rate)`` from the header of the PC2 file ``path`` (validated)."""
    with open(path, "rb") as f:
        raw = f.read(HEADER_SIZE)
        size = os.fstat(f.fileno()).st_size
    if len(raw) != HEADER_SIZE:
        raise ValueError(f"{path}: too short for a PC2 header ({len(raw)} bytes)")
    signature, version, n_verts, start, rate, n_frames = HEADER.unpack(raw)
    if signature != SIGNATURE:
        raise ValueError(f"{path}: not a PC2 file (signature {signature!r})")
    if version != VERSION:
        raise ValueError(f"{path}: unsupported PC2 version {version}")
    if n_verts < 0 or n_frames < 0:
        raise ValueError(f"{path}: corrupt PC2 header ({n_verts} vertices, {n_frames} frames)")
    expected = HEADER_SIZE + n_frames * n_verts * 3 * _DTYPE.itemsize
    if size != expected:
        raise ValueError(f"{path}: {size} bytes, header announces {expected}")
    return n_frames, n_verts, float(start), float(rate)


def read_pc2(path) -> tuple[np.ndarray, float, float]:
    """Read the PC2 file ``path``.

    Returns:
        ``(positions, start, rate)``: positions float32 of shape (F, V, 3), the header's start frame
        and sample rate.
    """
    n_frames, n_verts, start, rate = read_pc2_header(path)
    count = n_frames * n_verts * 3
    data = np.fromfile(path, dtype=_DTYPE, count=count, offset=HEADER_SIZE)
    if data.size != count:
        raise ValueError(f"{path}: truncated PC2 payload")
    return data.astype(np.float32, copy=False).reshape(n_frames, n_verts, 3), start, rate
