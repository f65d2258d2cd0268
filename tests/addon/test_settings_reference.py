"""docs/settings.md is what docs/settings_reference.py writes from the code, and it lists every registered setting.

The generator reads ``addon/properties.py`` with ``ast`` (no Blender); the reference for "every setting, with the
right label, tooltip and default" is the property groups as registration.py registers them with the mocked bpy,
whose ``XxxProperty(...)`` calls record their keywords.
"""

import functools
import importlib.util
import sys
from pathlib import Path

import pytest
from contact_lab import registration

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "settings_reference.py"
STALE = "docs/settings.md is stale: run python docs/settings_reference.py"


@functools.cache
def reference():
    """docs/settings_reference.py imported as a module from its path."""
    spec = importlib.util.spec_from_file_location("contact_lab_docs_settings_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def _rows():
    return [setting for section in reference().collect(ROOT) for setting in section.settings]


def _registered_groups(mock_bpy) -> dict:
    return {cls.__name__: cls for cls in registration.classes() if issubclass(cls, mock_bpy.types.PropertyGroup)}


def test_the_committed_page_is_what_the_code_gives():
    committed = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert committed == reference().render(reference().collect(ROOT)), STALE


def test_check_exits_1_when_stale_and_0_when_current(tmp_path, monkeypatch, capsys):
    module = reference()
    page = tmp_path / "settings.md"
    monkeypatch.setattr(module, "PAGE", page)
    assert module.main(["--check"]) == 1  # no page at all
    page.write_text("# old\n", encoding="utf-8")
    assert module.main(["--check"]) == 1
    assert "run python docs/settings_reference.py" in capsys.readouterr().err
    assert module.main([]) == 0 and module.main(["--check"]) == 0


def test_every_registered_setting_is_in_the_reference(mock_bpy):
    """Both ways: each row names a property of a registered group, and each property of a registered group has a
    row (an annotation the ast reading skipped would fail here)."""
    groups = _registered_groups(mock_bpy)
    rows = {(s.group, s.ident) for s in _rows()}
    registered = {(name, ident) for name, cls in groups.items() for ident in cls.__annotations__}
    assert set(groups) == set(reference().OWNERS)
    assert rows == registered, (sorted(rows - registered), sorted(registered - rows))


def test_each_row_carries_the_registered_label_tooltip_default_and_range(mock_bpy):
    """The reference's values are the ones Blender registers (the mock's recorded keywords), literal for literal;
    a keyword that is code (a getter, an options function) is shown as what it means instead."""
    groups = _registered_groups(mock_bpy)
    unevaluated = reference().Unevaluated
    compared = 0
    for row in _rows():
        marker = groups[row.group].__annotations__[row.ident]
        assert row.kind == marker.kind, row.path
        for key in ("name", "description", "default", "min", "max", "soft_min", "soft_max", "unit", "subtype"):
            if key in marker.keywords or key in row.keywords:
                value = row.keywords.get(key)
                if not isinstance(value, unevaluated):
                    assert value == marker.keywords.get(key), (row.path, key)
                    compared += 1
        if marker.kind == "EnumProperty":
            assert tuple(row.items) == tuple(marker.keywords["items"]), row.path
    assert compared >= 290  # 300 keywords when written: none is skipped wholesale


@pytest.mark.parametrize(
    ("ident", "words"),
    [
        ("scene.contact_lab.tolerance", ["| Tolerance | 1e-06 |"]),
        ("obj.contact_lab.youngs_modulus", ["drawn as “Young's Modulus (Pa)”", "| Pa |"]),
        ("obj.contact_lab.friction_spin", ["| scene length |"]),
        ("scene.contact_lab.engine", ["| Rigid |"]),
    ],
)
def test_rows_read_as_the_panel_shows_them(ident, words):
    """Spot checks against the property definitions read by eye: label, default, unit, the label a panel draws."""
    page = reference().render(reference().collect(ROOT))
    row = next(line for line in page.splitlines() if line.startswith(f"| `{ident}` |"))
    for word in words:
        assert word in row, row


def test_every_enum_lists_its_choices():
    page = reference().render(reference().collect(ROOT))
    for row in _rows():
        if row.kind == "EnumProperty":
            assert f"Choices of **{row.label}** (`{row.path}`):" in page
            for ident, label, description in row.items:
                assert f"- **{label}** (`{ident}`): {description}" in page
