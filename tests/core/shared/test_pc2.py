"""PC2 writer/reader: round trip, exact header bytes, atomic writes."""

import os
import struct

import numpy as np
import pytest
from contact_lab.core.formats import pc2


def _positions(n_frames=5, n_verts=7, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_frames, n_verts, 3))


def test_round_trip(tmp_path):
    positions = _positions()
    path = tmp_path / "cache.pc2"
    pc2.write_pc2(path, positions, start_frame=3, sample_rate=0.5)
    back, start, rate = pc2.read_pc2(path)
    assert back.dtype == np.float32 and back.shape == positions.shape
    np.testing.assert_array_equal(back, positions.astype(np.float32))
    assert (start, rate) == (3.0, 0.5)
    assert pc2.read_pc2_header(str(path)) == (5, 7, 3.0, 0.5)


def test_header_and_payload_bytes_exactly_as_the_format(tmp_path):
    positions = np.arange(2 * 3 * 3, dtype=np.float64).reshape(2, 3, 3) * 0.25
    path = tmp_path / "cache.pc2"
    pc2.write_pc2(str(path), positions, start_frame=10)
    raw = path.read_bytes()
    header = struct.pack("<12siiffi", b"POINTCACHE2\0", 1, 3, 10.0, 1.0, 2)
    assert len(header) == 32
    assert raw[:32] == header
    assert raw[:12] == b"POINTCACHE2\x00"
    # float32 little-endian x, y, z per vertex, frame after frame
    assert raw[32:] == struct.pack("<18f", *positions.ravel())
    assert len(raw) == 32 + 2 * 3 * 3 * 4


def test_atomic_write_keeps_old_file_and_leaves_no_temp_on_error(tmp_path, monkeypatch):
    path = tmp_path / "cache.pc2"
    pc2.write_pc2(path, _positions(seed=1), start_frame=1)
    before = path.read_bytes()

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(pc2.os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        pc2.write_pc2(path, _positions(n_frames=9, seed=2), start_frame=1)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["cache.pc2"]


def test_failed_first_write_creates_no_file(tmp_path, monkeypatch):
    path = tmp_path / "new.pc2"
    monkeypatch.setattr(pc2.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("nope")))
    with pytest.raises(OSError):
        pc2.write_pc2(path, _positions(), start_frame=1)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "bad",
    [np.zeros((2, 3)), np.zeros((2, 3, 2)), np.zeros((0, 3, 3)), np.zeros((1, 0, 3)), np.full((1, 1, 3), np.nan)],
)
def test_invalid_input_writes_nothing(tmp_path, bad):
    with pytest.raises(ValueError):
        pc2.write_pc2(tmp_path / "x.pc2", bad, start_frame=1)
    assert os.listdir(tmp_path) == []


def test_bad_sample_rate(tmp_path):
    with pytest.raises(ValueError):
        pc2.write_pc2(tmp_path / "x.pc2", _positions(), start_frame=1, sample_rate=0.0)


def test_reader_rejects_wrong_signature_and_truncation(tmp_path):
    path = tmp_path / "cache.pc2"
    pc2.write_pc2(path, _positions(), start_frame=1)
    raw = path.read_bytes()
    (tmp_path / "trunc.pc2").write_bytes(raw[:-4])
    with pytest.raises(ValueError, match="header announces"):
        pc2.read_pc2(tmp_path / "trunc.pc2")
    (tmp_path / "sig.pc2").write_bytes(b"POINTCACHE3\0" + raw[12:])
    with pytest.raises(ValueError, match="not a PC2"):
        pc2.read_pc2(tmp_path / "sig.pc2")
