"""Unit conversion and transform math between Blender and the core (numpy only, batched).

Blender lengths are Blender units (BU); ``BU × scene.unit_settings.scale_length`` = metres, the
core's unit. Gravity (``scene.gravity``) is already in m/s². This module is the one place that
knows both conventions; it never touches bpy data beyond reading scalar scene settings.
"""

import numpy as np


def length_scale(scene) -> float:
    """Metres per Blender unit [m/BU]."""
    return float(scene.unit_settings.scale_length)


def scene_fps(scene) -> float:
    """Frame rate [1/s] = ``render.fps / render.fps_base``."""
    return float(scene.render.fps) / float(scene.render.fps_base)


def scene_gravity(scene) -> np.ndarray:
    """Gravitational acceleration [m/s²], shape (3,); zero when the scene's gravity is off."""
    if not scene.use_gravity:
        return np.zeros(3)
    return np.asarray(scene.gravity, dtype=np.float64).reshape(3)


def decompose_matrices(matrices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split affine matrices into translation, rotation, scale and a shear measure.

    Args:
        matrices: row-major 4×4 object matrices, shape (..., 4, 4).

    Returns:
        ``(translation (..., 3), rotation (..., 3, 3), scale (..., 3), shear (...))``. ``scale`` holds the
        column norms, negated on the first axis when the determinant is negative (a mirror); ``shear`` is
        ``max |RᵀR − I|`` (0 for a pure rotation-scale matrix).
    """
    m = np.asarray(matrices, dtype=np.float64)
    linear = m[..., :3, :3]
    translation = m[..., :3, 3].copy()
    scale = np.linalg.norm(linear, axis=-2)
    det = np.linalg.det(linear)
    sign = np.where(det < 0.0, -1.0, 1.0)
    scale = scale.copy()
    scale[..., 0] *= sign
    safe = np.where(np.abs(scale) > 0.0, scale, 1.0)
    rotation = linear / safe[..., None, :]
    gram = np.swapaxes(rotation, -1, -2) @ rotation
    shear = np.abs(gram - np.eye(3)).max(axis=(-2, -1))
    return translation, rotation, scale, shear


def matrix_to_quat(rotation: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) to unit quaternions (..., 4) wxyz with w >= 0 (Shepperd's method)."""
    r = np.asarray(rotation, dtype=np.float64)
    shape = r.shape[:-2]
    r = r.reshape(-1, 3, 3)
    q = np.empty((r.shape[0], 4))
    trace = r[:, 0, 0] + r[:, 1, 1] + r[:, 2, 2]
    diag = np.stack([trace, r[:, 0, 0], r[:, 1, 1], r[:, 2, 2]], axis=1)
    pick = diag.argmax(axis=1)
    for k in range(4):  # four branches, each vectorised over its rows
        rows = pick == k
        if not rows.any():
            continue
        m = r[rows]
        if k == 0:
            s = 2.0 * np.sqrt(1.0 + trace[rows])
            q[rows] = np.stack(
                [0.25 * s, (m[:, 2, 1] - m[:, 1, 2]) / s, (m[:, 0, 2] - m[:, 2, 0]) / s, (m[:, 1, 0] - m[:, 0, 1]) / s],
                axis=1,
            )
        elif k == 1:
            s = 2.0 * np.sqrt(np.maximum(1.0 + m[:, 0, 0] - m[:, 1, 1] - m[:, 2, 2], 1e-300))
            q[rows] = np.stack(
                [(m[:, 2, 1] - m[:, 1, 2]) / s, 0.25 * s, (m[:, 0, 1] + m[:, 1, 0]) / s, (m[:, 0, 2] + m[:, 2, 0]) / s],
                axis=1,
            )
        elif k == 2:
            s = 2.0 * np.sqrt(np.maximum(1.0 + m[:, 1, 1] - m[:, 0, 0] - m[:, 2, 2], 1e-300))
            q[rows] = np.stack(
                [(m[:, 0, 2] - m[:, 2, 0]) / s, (m[:, 0, 1] + m[:, 1, 0]) / s, 0.25 * s, (m[:, 1, 2] + m[:, 2, 1]) / s],
                axis=1,
            )
        else:
            s = 2.0 * np.sqrt(np.maximum(1.0 + m[:, 2, 2] - m[:, 0, 0] - m[:, 1, 1], 1e-300))
            q[rows] = np.stack(
                [(m[:, 1, 0] - m[:, 0, 1]) / s, (m[:, 0, 2] + m[:, 2, 0]) / s, (m[:, 1, 2] + m[:, 2, 1]) / s, 0.25 * s],
                axis=1,
            )
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 0] < 0.0] *= -1.0
    return q.reshape(*shape, 4)


def quat_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4) wxyz to rotation matrices (..., 3, 3)."""
    q = np.asarray(quat, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    r = np.empty(q.shape[:-1] + (3, 3))
    r[..., 0, 0] = 1 - 2 * (y * y + z * z)
    r[..., 0, 1] = 2 * (x * y - w * z)
    r[..., 0, 2] = 2 * (x * z + w * y)
    r[..., 1, 0] = 2 * (x * y + w * z)
    r[..., 1, 1] = 1 - 2 * (x * x + z * z)
    r[..., 1, 2] = 2 * (y * z - w * x)
    r[..., 2, 0] = 2 * (x * z - w * y)
    r[..., 2, 1] = 2 * (y * z + w * x)
    r[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return r


def make_quat_continuous(quat: np.ndarray) -> np.ndarray:
    """Flip signs along axis 0 (time) so consecutive quaternions lie in the same hemisphere; shape (F, ..., 4)."""
    q = np.array(quat, dtype=np.float64, copy=True)
    if q.shape[0] < 2:
        return q
    # c_f = c_{f-1} · sign(q_f · q_{f-1}) keeps every consecutive pair of the output in one hemisphere
    dots = np.einsum("f...i,f...i->f...", q[1:], q[:-1])
    signs = np.cumprod(np.where(dots < 0.0, -1.0, 1.0), axis=0)
    q[1:] *= signs[..., None]
    return q


def body_to_object_location(
    com: np.ndarray, quat: np.ndarray, centre_local: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """Object origin from the body's centre of mass: ``location = com − R·(scale ∘ centre_local)``.

    Args:
        com: centre of mass [BU], shape (F, 3). quat: body orientation wxyz, shape (F, 4).
        centre_local: bounding-box centre in object space [BU], shape (3,). scale: object scale, shape (3,).

    Returns:
        Object locations [BU], shape (F, 3).
    """
    offset = np.asarray(scale, dtype=np.float64) * np.asarray(centre_local, dtype=np.float64)
    return np.asarray(com, dtype=np.float64) - np.einsum("fij,j->fi", quat_to_matrix(quat), offset)
