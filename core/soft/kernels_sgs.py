"""The soft world's linear solve: CG preconditioned by block symmetric Gauss–Seidel, in Eisenstat's form.

``A = D + L + U + E``: ``D`` each group's diagonal block (:mod:`.kernels_operator`: the CSR part and the matrix-free
terms whose nodes share the group), ``L``, ``U`` the CSR's blocks coupling a group to lower and higher groups
(:func:`coupling_pattern`, values by :func:`gather_coupling`), ``E`` the rest (the contact, friction and volume
terms that couple groups). The preconditioner ``P = (D + L) D^-1 (D + U) = C C^T``, ``C = (D + L) R^-T`` with
``D = R R^T`` blockwise, sees how neighbouring nodes hold each other, which block Jacobi (``D`` alone) does not:
on the default cube resting on its face PCG takes 6.4 iterations per Newton iteration where block Jacobi took 10.3
(``tests/benchmarks/bench_default_cube.py``), on a lattice of springs half as many.

Applied as ``P^-1 r`` it would cost two triangular sweeps per iteration on top of the product with ``A``. CG runs
instead on ``A^ = C^-1 A C^-T`` (Eisenstat 1981), whose product needs one sweep each way and no product with
``A``: with ``A = (D + L) + (D + U) - D + E``,

    A^ v = R^T (w + (D + L)^-1 (u + (E - D) w)),   u = R v,   w = (D + U)^-1 u,

so an iteration costs about what a block-Jacobi one does. The solve maps ``b^ = C^-1 b``, ``x^0 = C^T x0`` and back
``x = C^-T x^``. CG's residual is then ``C^-1 (b - A x)``; the tolerance is checked on the true one
(:func:`world_pcg`), so a Newton step is as exact as its forcing term asks.
"""

import math

import numpy as np

from ..jit import njit_kernel
from ..linalg.pcg import NEGATIVE_CURVATURE, SOLVED, preconditioned_cg, serial_dot
from .kernels_operator import add_matrix_free


@njit_kernel
def _count_couplings(indptr, indices, node_group, group_nodes, group_size, below, out_ptr):
    """``out_ptr`` (G + 1,): the running count of each group's CSR blocks in lower (``below``) or higher groups."""
    out_ptr[0] = 0
    for grp in range(group_nodes.shape[0]):
        count = 0
        for k in range(group_size[grp]):
            r = 3 * group_nodes[grp, k]
            for q in range(indptr[r], indptr[r + 1], 3):
                other = node_group[indices[q] // 3]
                if (other < grp) if below else (other > grp):
                    count += 1
        out_ptr[grp + 1] = out_ptr[grp] + count


@njit_kernel
def _fill_couplings(indptr, indices, node_group, group_nodes, group_size, below, ptr, row, col, src):
    """Each coupling block of :func:`_count_couplings`: its row offset inside the group (``row``, 3 x the node's
    place), its column's first dof (``col``) and the data index of its first entry in each of the node's three
    rows (``src`` (nb, 3))."""
    for grp in range(group_nodes.shape[0]):
        b = ptr[grp]
        for k in range(group_size[grp]):
            r = 3 * group_nodes[grp, k]
            for q in range(indptr[r], indptr[r + 1], 3):
                other = node_group[indices[q] // 3]
                if (other < grp) if below else (other > grp):
                    offset = q - indptr[r]
                    row[b] = 3 * k
                    col[b] = indices[q]
                    src[b, 0] = q
                    src[b, 1] = indptr[r + 1] + offset
                    src[b, 2] = indptr[r + 2] + offset
                    b += 1


def coupling_pattern(indptr, indices, node_group, group_nodes, group_size) -> tuple:
    """The CSR's blocks that couple a group to another, as ``(low, up)``: each ``(ptr (G + 1,), row (nb,), col
    (nb,), src (nb, 3), blocks (nb, 9))``, the blocks' values zero until :func:`gather_coupling` reads them from
    the matrix. A CSR node row holds its 3x3 blocks as three entries in each of its three rows, at equal offsets."""
    out = []
    for below in (True, False):
        ptr = np.zeros(group_nodes.shape[0] + 1, dtype=np.int64)
        _count_couplings(indptr, indices, node_group, group_nodes, group_size, below, ptr)
        nb = int(ptr[-1])
        row, col, src = np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros((nb, 3), np.int64)
        _fill_couplings(indptr, indices, node_group, group_nodes, group_size, below, ptr, row, col, src)
        out.append((ptr, row, col, src, np.zeros((nb, 9))))
    return tuple(out)


@njit_kernel
def gather_coupling(data, src, out_blocks):
    """The coupling blocks' values from the CSR ``data`` (row-major 3x3 into ``out_blocks`` (nb, 9)); run whenever
    the matrix changes."""
    for b in range(src.shape[0]):
        for i in range(3):
            q = src[b, i]
            out_blocks[b, 3 * i] = data[q]
            out_blocks[b, 3 * i + 1] = data[q + 1]
            out_blocks[b, 3 * i + 2] = data[q + 2]


def group_layout(group_nodes, group_size) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dofs (G, 12), width (G,), offset (G + 1,))``: each group's dofs in its block's order, how many (3 or 12),
    and where its ``width^2`` block entries start in the packed factors
    (:func:`.kernels_operator.build_group_preconditioner`: a soft node's four 3x3 blocks in 36 consecutive
    numbers per row of four, not scattered in 12x12 slabs)."""
    dofs = np.zeros((group_nodes.shape[0], 12), np.int64)
    for k in range(4):
        for i in range(3):
            dofs[:, 3 * k + i] = 3 * np.maximum(group_nodes[:, k], 0) + i
    width = 3 * np.asarray(group_size, np.int64)
    offset = np.concatenate(([0], np.cumsum(width * width))).astype(np.int64)
    return dofs, width, offset


@njit_kernel
def _backward_pass(packed, up, dofs, width, offset, v, w, s, with_s):
    """Groups in reverse order: ``w_g = D_g^-1 (R_g v_g - sum_{h>g} A_gh w_h)``, i.e. ``w = (D + U)^-1 R v``; with
    ``with_s`` also ``s_g = R_g v_g + (D_csr - 2 D)_g w_g`` (the packed blocks' fourth row). A soft node's group
    (3x3, nearly every group) is written out in scalars; a box's 12x12 takes the loops. The coupling arrays come
    out of their tuple once: a helper taking them per group would count their references each call."""
    ptr, row, col, blocks = up[0], up[1], up[2], up[4]
    u = np.zeros(12)
    t = np.zeros(12)
    groups = dofs.shape[0]
    for step in range(groups):
        grp = groups - 1 - step
        size, o = width[grp], offset[grp]
        if size == 3:
            d = dofs[grp, 0]
            v0, v1, v2 = v[d], v[d + 1], v[d + 2]
            u0 = packed[0, o] * v0
            u1 = packed[0, o + 3] * v0 + packed[0, o + 4] * v1
            u2 = packed[0, o + 6] * v0 + packed[0, o + 7] * v1 + packed[0, o + 8] * v2
            t0, t1, t2 = u0, u1, u2
            for b in range(ptr[grp], ptr[grp + 1]):
                c = col[b]
                x0, x1, x2 = w[c], w[c + 1], w[c + 2]
                t0 -= blocks[b, 0] * x0 + blocks[b, 1] * x1 + blocks[b, 2] * x2
                t1 -= blocks[b, 3] * x0 + blocks[b, 4] * x1 + blocks[b, 5] * x2
                t2 -= blocks[b, 6] * x0 + blocks[b, 7] * x1 + blocks[b, 8] * x2
            w0 = packed[2, o] * t0 + packed[2, o + 1] * t1 + packed[2, o + 2] * t2
            w1 = packed[2, o + 3] * t0 + packed[2, o + 4] * t1 + packed[2, o + 5] * t2
            w2 = packed[2, o + 6] * t0 + packed[2, o + 7] * t1 + packed[2, o + 8] * t2
            w[d], w[d + 1], w[d + 2] = w0, w1, w2
            if with_s:
                s[d] = u0 + packed[3, o] * w0 + packed[3, o + 1] * w1 + packed[3, o + 2] * w2
                s[d + 1] = u1 + packed[3, o + 3] * w0 + packed[3, o + 4] * w1 + packed[3, o + 5] * w2
                s[d + 2] = u2 + packed[3, o + 6] * w0 + packed[3, o + 7] * w1 + packed[3, o + 8] * w2
            continue
        for a in range(size):
            acc = 0.0
            for c in range(a + 1):
                acc += packed[0, o + a * size + c] * v[dofs[grp, c]]
            u[a] = acc
            t[a] = acc
        for b in range(ptr[grp], ptr[grp + 1]):
            a, c = row[b], col[b]
            x0, x1, x2 = w[c], w[c + 1], w[c + 2]
            t[a] -= blocks[b, 0] * x0 + blocks[b, 1] * x1 + blocks[b, 2] * x2
            t[a + 1] -= blocks[b, 3] * x0 + blocks[b, 4] * x1 + blocks[b, 5] * x2
            t[a + 2] -= blocks[b, 6] * x0 + blocks[b, 7] * x1 + blocks[b, 8] * x2
        for a in range(size):
            acc = 0.0
            for c in range(size):
                acc += packed[2, o + a * size + c] * t[c]
            w[dofs[grp, a]] = acc
        if with_s:
            for a in range(size):
                acc = u[a]
                for c in range(size):
                    acc += packed[3, o + a * size + c] * w[dofs[grp, c]]
                s[dofs[grp, a]] = acc


@njit_kernel
def _forward_pass(packed, low, dofs, width, offset, s, w, with_w, y, out):
    """Groups in order: ``y_g = D_g^-1 (s_g - sum_{h<g} A_gh y_h)``, i.e. ``y = (D + L)^-1 s``, and ``out_g =
    R_g^T (w_g + y_g)`` (``w`` only ``with_w``). A soft node's group in scalars, as in :func:`_backward_pass`."""
    ptr, row, col, blocks = low[0], low[1], low[2], low[4]
    t = np.zeros(12)
    z = np.zeros(12)
    for grp in range(dofs.shape[0]):
        size, o = width[grp], offset[grp]
        if size == 3:
            d = dofs[grp, 0]
            t0, t1, t2 = s[d], s[d + 1], s[d + 2]
            for b in range(ptr[grp], ptr[grp + 1]):
                c = col[b]
                x0, x1, x2 = y[c], y[c + 1], y[c + 2]
                t0 -= blocks[b, 0] * x0 + blocks[b, 1] * x1 + blocks[b, 2] * x2
                t1 -= blocks[b, 3] * x0 + blocks[b, 4] * x1 + blocks[b, 5] * x2
                t2 -= blocks[b, 6] * x0 + blocks[b, 7] * x1 + blocks[b, 8] * x2
            y0 = packed[2, o] * t0 + packed[2, o + 1] * t1 + packed[2, o + 2] * t2
            y1 = packed[2, o + 3] * t0 + packed[2, o + 4] * t1 + packed[2, o + 5] * t2
            y2 = packed[2, o + 6] * t0 + packed[2, o + 7] * t1 + packed[2, o + 8] * t2
            y[d], y[d + 1], y[d + 2] = y0, y1, y2
            if with_w:
                y0, y1, y2 = y0 + w[d], y1 + w[d + 1], y2 + w[d + 2]
            out[d] = packed[0, o] * y0 + packed[0, o + 3] * y1 + packed[0, o + 6] * y2
            out[d + 1] = packed[0, o + 4] * y1 + packed[0, o + 7] * y2
            out[d + 2] = packed[0, o + 8] * y2
            continue
        for a in range(size):
            t[a] = s[dofs[grp, a]]
        for b in range(ptr[grp], ptr[grp + 1]):
            a, c = row[b], col[b]
            x0, x1, x2 = y[c], y[c + 1], y[c + 2]
            t[a] -= blocks[b, 0] * x0 + blocks[b, 1] * x1 + blocks[b, 2] * x2
            t[a + 1] -= blocks[b, 3] * x0 + blocks[b, 4] * x1 + blocks[b, 5] * x2
            t[a + 2] -= blocks[b, 6] * x0 + blocks[b, 7] * x1 + blocks[b, 8] * x2
        for a in range(size):
            acc = 0.0
            for c in range(size):
                acc += packed[2, o + a * size + c] * t[c]
            y[dofs[grp, a]] = acc
            z[a] = acc + w[dofs[grp, a]] if with_w else acc
        for a in range(size):
            acc = 0.0
            for c in range(a, size):
                acc += packed[0, o + c * size + a] * z[c]
            out[dofs[grp, a]] = acc


@njit_kernel
def _apply_transformed(data, v, out):
    """``out = A^ v`` (module docstring); ``data = (terms, h2, precond)``."""
    terms, h2, precond = data
    dofs, width, offset, packed, low, up, work = precond
    w, s, y = work[0], work[1], work[2]
    _backward_pass(packed, up, dofs, width, offset, v, w, s, True)
    add_matrix_free(terms, h2, w, s)
    _forward_pass(packed, low, dofs, width, offset, s, w, True, y, out)


@njit_kernel
def _identity(data, r, out):
    for i in range(r.shape[0]):
        out[i] = r[i]


@njit_kernel
def _start(packed, up, dofs, width, offset, x, out):
    """``out = C^T x = R^-1 (D + U) x = R^T x + R^-1 U x``, group by group."""
    ptr, row, col, blocks = up[0], up[1], up[2], up[4]
    t = np.zeros(12)
    for grp in range(dofs.shape[0]):
        size, o = width[grp], offset[grp]
        for a in range(size):
            t[a] = 0.0
        for b in range(ptr[grp], ptr[grp + 1]):
            a, c = row[b], col[b]
            x0, x1, x2 = x[c], x[c + 1], x[c + 2]
            t[a] += blocks[b, 0] * x0 + blocks[b, 1] * x1 + blocks[b, 2] * x2
            t[a + 1] += blocks[b, 3] * x0 + blocks[b, 4] * x1 + blocks[b, 5] * x2
            t[a + 2] += blocks[b, 6] * x0 + blocks[b, 7] * x1 + blocks[b, 8] * x2
        for a in range(size):
            acc = 0.0
            for c in range(a, size):
                acc += packed[0, o + c * size + a] * x[dofs[grp, c]]
            for c in range(a + 1):
                acc += packed[1, o + a * size + c] * t[c]
            out[dofs[grp, a]] = acc


@njit_kernel
def _true_residual_norm(packed, low, dofs, width, offset, r_hat, z):
    """``||C r^||`` with ``C = (D + L) R^-T``: the norm of ``b - A x`` for the iterate whose transformed residual is
    ``r^`` (a product by ``C`` is one forward pass, cheaper than one by ``A``); ``z`` (n,) is scratch. Since
    ``D R^-T = R``, ``(C r^)_g = R_g r^_g + sum_{h<g} A_gh (R^-T r^)_h``."""
    ptr, row, col, blocks = low[0], low[1], low[2], low[4]
    for grp in range(dofs.shape[0]):
        size, o = width[grp], offset[grp]
        for a in range(size):
            acc = 0.0
            for c in range(a, size):
                acc += packed[1, o + c * size + a] * r_hat[dofs[grp, c]]
            z[dofs[grp, a]] = acc
    t = np.zeros(12)
    total = 0.0
    for grp in range(dofs.shape[0]):
        size, o = width[grp], offset[grp]
        for a in range(size):
            acc = 0.0
            for c in range(a + 1):
                acc += packed[0, o + a * size + c] * r_hat[dofs[grp, c]]
            t[a] = acc
        for b in range(ptr[grp], ptr[grp + 1]):
            a, c = row[b], col[b]
            x0, x1, x2 = z[c], z[c + 1], z[c + 2]
            t[a] += blocks[b, 0] * x0 + blocks[b, 1] * x1 + blocks[b, 2] * x2
            t[a + 1] += blocks[b, 3] * x0 + blocks[b, 4] * x1 + blocks[b, 5] * x2
            t[a + 2] += blocks[b, 6] * x0 + blocks[b, 7] * x1 + blocks[b, 8] * x2
        for a in range(size):
            total += t[a] * t[a]
    return math.sqrt(total)


RESIDUAL_CHECKS = 4
"""Most CG runs of one solve: a run that meets the tolerance in the transformed residual ends the solve only if
the true residual meets it too, else CG goes on from there to a tolerance scaled by how far the two differ."""


@njit_kernel
def world_pcg(terms, h2, precond, rhs, x, tolerance, max_iterations, work):
    """``A x = rhs`` by CG on the transformed system ``A^ x^ = b^`` (module docstring; the shared
    :func:`~..linalg.pcg.preconditioned_cg` with no preconditioner of its own), to ``||rhs - A x|| <= tolerance
    ||rhs||`` in CG's residual taken back to the original system (``C r^``, :func:`_true_residual_norm`): CG stops
    on the transformed one, so a run that meets the tolerance there is checked, and when the residual is still
    above it, CG goes on to a tighter target (at most ``RESIDUAL_CHECKS`` runs). ``x`` holds the start and
    receives the result; ``work`` (4, n) is CG's scratch.

    ``precond = (dofs (G, 12), width (G,), offset (G + 1,), packed (4, offset[-1]), low, up, scratch (5, n))``:
    the groups' layout (:func:`group_layout`), their packed factored blocks
    (:func:`.kernels_operator.build_group_preconditioner`), the couplings
    (:func:`coupling_pattern`) and vectors. Returns ``(iterations, relative residual, indefinite)``; a direction
    with ``p^T A p <= 0`` stops the solve (``indefinite``; ``x`` then holds the last iterate, a descent direction
    while ``A`` is SPD on the explored subspace).
    """
    dofs, width, offset, packed, low, up, scratch = precond
    b_hat, x_hat, q = scratch[3], scratch[4], scratch[0]
    b_norm = math.sqrt(serial_dot(rhs, rhs))
    _forward_pass(packed, low, dofs, width, offset, rhs, rhs, False, scratch[1], b_hat)  # b^ = R^T (D + L)^-1 b
    _start(packed, up, dofs, width, offset, x, x_hat)
    target = tolerance
    iterations, residual, outcome = 0, 0.0, SOLVED
    for _ in range(RESIDUAL_CHECKS):
        it, res, outcome = preconditioned_cg(_apply_transformed, (terms, h2, precond), _identity, 0, b_hat, x_hat,
                                             False, target, max_iterations - iterations, work)  # fmt: skip
        iterations += it
        if b_norm == 0.0:
            break
        residual = _true_residual_norm(packed, low, dofs, width, offset, work[0], q) / b_norm
        if outcome != SOLVED or residual <= tolerance or iterations >= max_iterations:
            break
        target = 0.5 * min(target, res) * tolerance / residual
    _backward_pass(packed, up, dofs, width, offset, x_hat, x, x, False)  # x = (D + U)^-1 R x^
    return iterations, residual, outcome == NEGATIVE_CURVATURE
