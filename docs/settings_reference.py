"""Write docs/settings.md, the reference of every Contact Lab setting, from the property definitions.

The settings are read without Blender: ``addon/properties.py`` is parsed with ``ast``, and every
``name: XxxProperty(...)`` annotation of each PropertyGroup gives one row (Python path, label, default, range,
unit, tooltip); an enum's items (inline, or a tuple of ``addon/property_items.py``) are listed with their labels
and tooltips. ``panels/physics.py`` is parsed too, for the label a panel draws in place of the setting's own (a
``text=`` override, such as a unit after the name). ``tests/addon/test_settings_reference.py`` compares the
committed page with what this script writes and every row with the registered classes.

Usage: .venv/bin/python docs/settings_reference.py [--check]
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "settings.md"

OWNERS = {"CONTACT_LAB_SceneSettings": "scene.contact_lab", "CONTACT_LAB_ObjectSettings": "obj.contact_lab"}
"""PropertyGroup class → the Python path of its settings (registration.py attaches them to Scene and Object)."""

BAKE_PANEL = "Properties ▸ Scene ▸ Contact Lab Bake"
BODY_PANEL = "Properties ▸ Physics ▸ Contact Lab Body"

SECTIONS = (
    ("CONTACT_LAB_SceneSettings", "settings_version", "Bake: frame range and engine", BAKE_PANEL),
    ("CONTACT_LAB_SceneSettings", "substeps", "Rigid engine", f"{BAKE_PANEL} (Engine: Rigid)"),
    ("CONTACT_LAB_SceneSettings", "soft_output", "Soft engine", f"{BAKE_PANEL} (Engine: Soft; IPC uses some)"),
    ("CONTACT_LAB_SceneSettings", "ipc_dhat", "IPC engine", f"{BAKE_PANEL} ▸ IPC (Engine: IPC)"),
    ("CONTACT_LAB_SceneSettings", "last_report", "Kept by the add-on (read-only)", "not drawn as settings"),
    ("CONTACT_LAB_ObjectSettings", "role", "Body", BODY_PANEL),
    ("CONTACT_LAB_ObjectSettings", "soft_preset", "Soft body", f"{BODY_PANEL} (Role: Soft)"),
    ("CONTACT_LAB_ObjectSettings", "friction_model", "Friction by direction and texture", f"{BODY_PANEL} ▸ Friction"),
    ("CONTACT_LAB_ObjectSettings", "baked_action", "What a bake replaced (kept for Clear Bake)", "not drawn"),
)
"""(group, first setting, title, where it is drawn): a section runs from its first setting to the next section's,
in the order the settings are declared."""

UNITS = {"LENGTH": "scene length", "TIME_ABSOLUTE": "s", "VELOCITY": "scene length/s", "MASS": "kg"}
"""Blender's ``unit=`` of a property, in words."""

SUBTYPE_UNITS = {"VELOCITY": "scene length/s", "FACTOR": "fraction", "DIR_PATH": "folder"}


SOURCES = [
    "## Where the tooltips' figures come from",
    "",
    "- Tets per Lattice Resolution of the default cube (3,072 at 8, 10,368 at 12, 24,576 at 16): the `tets` column",
    "  of `tests/benchmarks/bench_default_cube.py --resolution N`.",
    "- The material presets' values: the sources listed with `SOFT_PRESETS` in `addon/property_items.py`.",
    "- Volume Compressibility's comparisons: air at sea level is 1/atm (an ideal gas at constant temperature);",
    "  water's bulk modulus is about 2.2 GPa, 21,700 atm, a compressibility of 4.6e-5/atm; the Flesh preset's",
    "  bulk modulus E / (3 (1 − 2ν)) is 333 kPa, 3.3 atm, about 0.3/atm.",
    "- Static Friction Speed's 0.2 mm: 0.01 m/s for one step of 1/48 s (24 fps, 2 substeps).",
    "",
]
"""The closing section of the page: where the numbers in the tooltips come from."""


@dataclass
class Setting:
    """One ``name: XxxProperty(...)`` annotation, with its keywords evaluated where they are literals."""

    group: str
    ident: str
    kind: str
    keywords: dict
    drawn_as: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"{OWNERS[self.group]}.{self.ident}"

    @property
    def label(self) -> str:
        return str(self.keywords.get("name", self.ident))

    @property
    def description(self) -> str:
        return str(self.keywords.get("description", ""))

    @property
    def items(self) -> tuple:
        return tuple(self.keywords.get("items") or ())


@dataclass
class Section:
    title: str
    where: str
    settings: list[Setting] = field(default_factory=list)


# ---- reading the code ------------------------------------------------------------------------------------------


def _module_constants(tree: ast.Module) -> dict:
    """Module-level ``NAME = <literal>`` assignments (the enum item tables)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def _keyword_value(node: ast.expr, constants: dict):
    """A keyword's value: a literal, a module constant, or the source text of anything else (a function, a call)."""
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    try:
        return ast.literal_eval(node)
    except ValueError:
        return Unevaluated(ast.unparse(node))


@dataclass(frozen=True)
class Unevaluated:
    """A keyword that is no literal (``get=_get_frame_start``, ``type=bpy.types.Image``)."""

    source: str


def _property_call(node: ast.stmt) -> tuple[str, str, ast.Call] | None:
    if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
        return None
    call = node.annotation  # Blender's idiom: the annotation is the property call, there is no value
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    kind = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return (node.target.id, kind, call) if kind.endswith("Property") else None


def read_settings(source: str, items_source: str = "") -> list[Setting]:
    """Every property annotation of every PropertyGroup class in ``source``, in declaration order; enum item tables
    are looked up in ``source`` and ``items_source`` (the module the tables live in)."""
    tree = ast.parse(source)
    constants = {**_module_constants(ast.parse(items_source)), **_module_constants(tree)}
    out = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef) or not any(ast.unparse(b).endswith("PropertyGroup") for b in cls.bases):
            continue
        for node in cls.body:
            found = _property_call(node)
            if found is None:
                continue
            ident, kind, call = found
            keywords = {k.arg: _keyword_value(k.value, constants) for k in call.keywords if k.arg}
            out.append(Setting(cls.name, ident, kind, keywords))
    return out


def read_drawn_labels(source: str) -> dict[str, list[str]]:
    """Property identifier → the ``text=`` labels the panels draw it with (in place of its own name)."""
    out: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("prop", "prop_search") or len(node.args) < 2:
            continue
        ident = node.args[1]
        text = next((k.value for k in node.keywords if k.arg == "text"), None)
        if isinstance(ident, ast.Constant) and isinstance(text, ast.Constant) and text.value:
            labels = out.setdefault(str(ident.value), [])
            if text.value not in labels:
                labels.append(str(text.value))
    return out


def collect(root: Path = ROOT) -> list[Section]:
    """The sections of the page: every setting of ``addon/properties.py`` in one of :data:`SECTIONS`."""
    addon = root / "addon"
    settings = read_settings(
        (addon / "properties.py").read_text(encoding="utf-8"), (addon / "property_items.py").read_text(encoding="utf-8")
    )
    drawn = read_drawn_labels((root / "panels" / "physics.py").read_text(encoding="utf-8"))
    starts = {(group, first): Section(title, where) for group, first, title, where in SECTIONS}
    known = {(s.group, s.ident) for s in settings}
    missing = [key for key in starts if key not in known]
    if missing:
        raise ValueError(f"docs/settings_reference.py: SECTIONS names settings that do not exist: {missing}")
    sections, current = [], None
    for setting in settings:
        if setting.group not in OWNERS:
            raise ValueError(f"docs/settings_reference.py: no Python path for the property group {setting.group}")
        setting.drawn_as = [text for text in drawn.get(setting.ident, []) if text != setting.label]
        start = starts.get((setting.group, setting.ident))
        if start is not None:
            current = start
            sections.append(current)
        if current is None or not sections or current.settings and current.settings[0].group != setting.group:
            raise ValueError(f"docs/settings_reference.py: {setting.path} is in no section")
        current.settings.append(setting)
    return sections


# ---- writing the page ------------------------------------------------------------------------------------------


def _number(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _default(s: Setting) -> str:
    kw = s.keywords
    if "get" in kw:
        return "the scene's"
    if s.kind == "EnumProperty":
        key = kw.get("default", s.items[0][0] if s.items else "")
        return next((label for ident, label, _ in s.items if ident == key), str(key))
    if s.kind == "PointerProperty":
        return "none"
    if s.kind == "StringProperty":
        value = kw.get("default", "")
        return f"`{value}`" if value else "empty"
    if "default" not in kw:
        return {"BoolProperty": "off", "IntProperty": "0", "FloatProperty": "0"}.get(s.kind, "(0, 0, 0)")
    value = kw["default"]
    if isinstance(value, tuple):
        return "(" + ", ".join(_number(v) for v in value) + ")"
    return _number(value)


def _range(s: Setting) -> str:
    kw = s.keywords
    if s.kind not in ("IntProperty", "FloatProperty", "FloatVectorProperty"):
        return ""
    low, high = kw.get("min"), kw.get("max")
    hard = f"{_number(low) if low is not None else '−∞'} to {_number(high) if high is not None else '∞'}"
    hard = "" if low is None and high is None else hard
    soft_low, soft_high = kw.get("soft_min", low), kw.get("soft_max", high)
    soft = ""
    if (soft_low, soft_high) != (low, high) and (soft_low is not None or soft_high is not None):
        soft = f"slider {_number(soft_low) if soft_low is not None else '…'} to "
        soft += _number(soft_high) if soft_high is not None else "…"
    return "; ".join(part for part in (hard, soft) if part)


def _unit(s: Setting) -> str:
    kw = s.keywords
    if kw.get("unit") in UNITS:
        return UNITS[kw["unit"]]
    if kw.get("subtype") in SUBTYPE_UNITS:
        return SUBTYPE_UNITS[kw["subtype"]]
    text = s.description
    start = text.find("[")
    end = text.find("]", start)
    if start >= 0 and end > start and end - start < 12:
        return text[start + 1 : end]
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _label(s: Setting) -> str:
    options = s.keywords.get("options")
    notes = ["hidden"] if isinstance(options, (set, frozenset)) and "HIDDEN" in options else []
    if s.drawn_as:
        notes.append("drawn as " + ", ".join(f"“{text}”" for text in s.drawn_as))
    return f"{s.label} ({'; '.join(notes)})" if notes else s.label


def render(sections: list[Section]) -> str:
    """The Markdown page: a table per section, then each enum's choices."""
    lines = [
        "# Settings reference",
        "",
        "Every setting of Contact Lab: where the panel draws it, its Python path for scripts, the label, default,",
        "range, unit and the tooltip as Blender shows it. A range gives the hard limits a value can be typed within",
        "and, where it differs, the slider's. Lengths marked *scene length* are in the scene's units (converted by",
        "the scene's Unit Scale at bake time); the other units are SI. Written by `python docs/settings_reference.py`",
        "from `addon/properties.py`: do not edit by hand.",
        "",
    ]
    for section in sections:
        lines += [f"## {section.title}", "", f"Where: {section.where}.", ""]
        lines += ["| Python path | Label | Default | Range | Unit | Tooltip |", "| --- | --- | --- | --- | --- | --- |"]
        for s in section.settings:
            cells = (f"`{s.path}`", _label(s), _default(s), _range(s), _unit(s), s.description)
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
        for s in section.settings:
            if s.kind != "EnumProperty":
                continue
            lines += [f"Choices of **{s.label}** (`{s.path}`):", ""]
            lines += [f"- **{label}** (`{ident}`): {description}" for ident, label, description in s.items]
            lines.append("")
    lines += SOURCES
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    """Write docs/settings.md; with --check, exit 1 if the committed page differs from what the code gives."""
    page = render(collect(ROOT))
    if "--check" not in argv:
        PAGE.write_text(page, encoding="utf-8", newline="\n")
        return 0
    stale = not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != page
    if stale:
        print("docs/settings.md is stale: run python docs/settings_reference.py", file=sys.stderr)
    return int(stale)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
