"""House rules the code must keep: one unit authority, a thin UI layer, documented modules."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "perfmodel"
MODULES = sorted(p for p in PKG.glob("*.py"))
# prefix constants only units.py may write (decimal and binary prefixes, seconds per hour)
FORBIDDEN_NUMBERS = {1e9, 2.0 ** 30, 1e12, 2.0 ** 40, 1e15, 3600.0, 1024.0 ** 3}
UI_ONLY = {"streamlit": set(), "altair": {"charts.py"}}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_has_a_purpose_line(path):
    doc = ast.get_docstring(_tree(path))
    assert doc and doc.strip().splitlines()[0], f"{path.name} needs a one-line purpose docstring"


@pytest.mark.parametrize("path", [p for p in MODULES if p.name != "units.py"], ids=lambda p: p.name)
def test_no_unit_prefix_constants_outside_units(path):
    bad = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            if float(node.value) in FORBIDDEN_NUMBERS:
                bad.append(f"line {node.lineno}: {node.value!r}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            if isinstance(node.left, ast.Constant) and node.left.value in (2, 10) and \
                    isinstance(node.right, ast.Constant) and node.right.value in (9, 12, 15, 30, 40):
                bad.append(f"line {node.lineno}: {node.left.value}**{node.right.value}")
    assert not bad, f"{path.name}: use the named constants in perfmodel.units instead of {bad}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_ui_libraries_stay_in_the_ui_layer(path):
    imported = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    for lib, allowed in UI_ONLY.items():
        if lib in imported:
            assert path.name in allowed, f"{path.name} imports {lib}; only {sorted(allowed) or 'app.py'} may"


def test_hardware_fields_carry_si_unit_suffixes():
    import dataclasses
    from perfmodel import hardware
    suffixes = ("_s", "_bytes", "_bytes_per_s", "_flop_per_s", "_hz", "_w", "_usd_per_hour", "_per_s")
    for cls in (hardware.Chip, hardware.Node, hardware.LinkTier, hardware.ElementEngine):
        for f in dataclasses.fields(cls):
            if f.type in ("float", "float | None") and f.name not in ("value",):
                assert f.name.endswith(suffixes), f"{cls.__name__}.{f.name} has no SI unit suffix"


def test_imports_follow_the_layers_of_the_architecture_doc():
    """docs/ARCHITECTURE.md lists the modules by layer; a module imports only from its own layer or above."""
    import re
    doc = (PKG.parent / "docs" / "ARCHITECTURE.md").read_text()
    layers = [re.findall(r"\| `(\w+)\.py` \|", block) for block in doc.split("\n### ")[1:]]
    rank = {m: i for i, mods in enumerate(layers) for m in mods}
    listed = {p.stem for p in MODULES} - {"__init__", "__main__"}
    assert listed == set(rank), f"modules missing from the doc: {sorted(listed - set(rank))}; " \
                                f"stale in the doc: {sorted(set(rank) - listed)}"
    bad = []
    for mod, i in rank.items():
        for node in ast.walk(_tree(PKG / f"{mod}.py")):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perfmodel"):
                names = [a.name for a in node.names] if node.module == "perfmodel" else [node.module.split(".")[1]]
            elif isinstance(node, ast.Import):
                names = [a.name.split(".")[1] for a in node.names if a.name.startswith("perfmodel.")]
            bad += [f"{mod} (layer {i}) imports {n} (layer {rank[n]})" for n in names if n in rank and rank[n] > i]
    assert not bad, bad
