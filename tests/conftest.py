"""Fixtures shared by every tier (no bpy, no add-on import here)."""

import pytest


@pytest.fixture
def write_tree(tmp_path):
    """Write a small source tree below ``tmp_path``: call it with {relative path: text}; it returns the root."""

    def write(files: dict[str, str]):
        for name, text in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        return tmp_path

    return write
