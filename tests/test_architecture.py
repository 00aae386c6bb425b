"""House rules the code must keep: layer packages imported one way, no import circle, modules a
reader can hold, one unit authority, a thin UI layer, documented modules."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "perfmodel"
# The layers, bottom first: a module imports only from its own package or one before it in this
# list (docs/ARCHITECTURE.md explains each; cli and the explorer, which app.py runs, sit on top).
LAYERS = ("core", "catalog", "comm", "model", "training", "serving", "simulation", "sweep", "claims", "validation",
          "report", "cli", "explorer")
MODULES = sorted(PKG.rglob("*.py"))
MAX_LINES = 400
MAX_TOP_LEVEL = 5  # modules beside the packages (__init__, __main__)
# prefix constants only units.py may write (decimal and binary prefixes, seconds per hour)
FORBIDDEN_NUMBERS = {1e9, 2.0 ** 30, 1e12, 2.0 ** 40, 1e15, 3600.0, 1024.0 ** 3}
UI_ONLY = {"streamlit": {"explorer/"}, "altair": {"report/charts.py"}}  # a path, or a package's folder


def _rel(path: Path) -> str:
    return path.relative_to(PKG).as_posix()


def _dotted(path: Path, root: Path = PKG) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _exists(dotted: str, root: Path = PKG) -> bool:
    p = root.parent.joinpath(*dotted.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def imports_of(path: Path, root: Path = PKG) -> set[str]:
    """perfmodel modules `path` imports, at import time or inside functions, as dotted names."""
    out = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "perfmodel":
            for a in node.names:  # `from perfmodel.report import export` imports a module
                sub = f"{node.module}.{a.name}"
                out.add(sub if _exists(sub, root) else node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "perfmodel"}
    return out


def _layer(dotted: str) -> int:
    if dotted == "perfmodel":  # the root: __version__ and the README's lazy names, importing nothing on import
        return -1
    parts = dotted.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS)


def _name(dotted: str) -> str:
    return LAYERS[_layer(dotted)] if 0 <= _layer(dotted) < len(LAYERS) else "top"


def back_imports(modules, root: Path = PKG) -> list[str]:
    """Imports that go up the layer order (or into perfmodel's top-level modules)."""
    bad = []
    for path in modules:
        me = _dotted(path, root)
        if me == "perfmodel":
            continue
        bad += [f"{me} ({_name(me)}) imports {dep} ({_name(dep)})"
                for dep in sorted(imports_of(path, root)) if _layer(dep) > _layer(me)]
    return bad


def import_circles(modules, root: Path = PKG) -> list[list[str]]:
    """Strongly connected groups of modules (Tarjan), each a circle of imports."""
    graph = {_dotted(p, root): {d for d in imports_of(p, root) if d != _dotted(p, root)} for p in modules}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_lives_in_a_layer_package():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, f"perfmodel/ holds {top}: put modules in a layer package"
    packages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert packages == set(LAYERS), f"packages {sorted(packages)} vs layers {LAYERS}"
    # a layer may group modules a prefix named in one sub-package (model/graph/), never deeper
    assert all(len(p.relative_to(PKG).parts) <= 3 for p in MODULES), "a layer's sub-packages hold modules only"
    for sub in (d for layer in LAYERS for d in (PKG / layer).iterdir() if d.is_dir() and d.name != "__pycache__"):
        doc = ast.get_docstring(_tree(sub / "__init__.py")) or ""
        assert doc.strip(), f"{sub.relative_to(PKG)}/__init__.py needs a docstring naming its modules"


@pytest.mark.parametrize("layer", LAYERS)
def test_each_package_says_what_it_is_and_what_it_must_not_import(layer):
    doc = ast.get_docstring(_tree(PKG / layer / "__init__.py")) or ""
    assert doc.strip(), f"perfmodel/{layer}/__init__.py needs a docstring"
    assert "Must not import" in doc and "Change here when" in doc, layer


def test_imports_run_down_the_layers():
    bad = back_imports(MODULES)
    assert not bad, "\n".join(bad)


def test_no_import_circle():
    circles = import_circles(MODULES)
    assert not circles, circles


def test_the_checks_catch_a_back_import_and_a_circle(tmp_path):
    """The two tests above fail on a deliberate back-import that closes a circle (on a copy of two modules)."""
    root = tmp_path / "perfmodel"
    for pkg in ("core", "report"):
        (root / pkg).mkdir(parents=True)
        (root / pkg / "__init__.py").write_text("")
    (root / "core" / "units.py").write_text('"""Low."""\nfrom perfmodel.report import export\n')
    (root / "report" / "export.py").write_text('"""High."""\nfrom perfmodel.core import units\n')
    mods = [root / "core" / "units.py", root / "report" / "export.py"]
    assert back_imports(mods, root) == ["perfmodel.core.units (core) imports perfmodel.report.export (report)"]
    assert import_circles(mods, root) == [["perfmodel.core.units", "perfmodel.report.export"]]


# Below the edge a computation takes its inputs as arguments: a System carries its chip's Calibration (resolved by
# catalog.load_system), a sweep's spec carries its resolved records (to Dask workers too), so no computing layer
# looks a calibration up or imports the catalogue.
COMPUTING = ("comm", "model", "training", "serving", "simulation", "sweep")


def look_ups_below_the_edge(modules, root: Path = PKG) -> list[str]:
    """Computing-layer modules that look up a calibration (calibration_for) or import the catalogue at all."""
    bad = []
    for path in modules:
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] not in COMPUTING:
            continue
        deps = imports_of(path, root)
        names = {n.id for n in ast.walk(_tree(path)) if isinstance(n, ast.Name)} | \
                {n.attr for n in ast.walk(_tree(path)) if isinstance(n, ast.Attribute)}
        if "calibration_for" in names:
            bad.append(f"{rel} looks up a calibration (take cal= or system.calibration)")
        if any(d.startswith("perfmodel.catalog") for d in deps):
            bad.append(f"{rel} imports the catalogue")
    return bad


def test_no_look_ups_below_the_edge():
    bad = look_ups_below_the_edge(MODULES)
    assert not bad, "\n".join(bad)


def test_the_look_up_check_catches_a_calibration_for_and_a_catalogue_import(tmp_path):
    """The check fails on a deliberate calibration_for in the serving layer and a catalogue import in model."""
    root = tmp_path / "perfmodel"
    for pkg in ("catalog", "serving", "model"):
        (root / pkg).mkdir(parents=True)
        (root / pkg / "__init__.py").write_text("")
    (root / "catalog" / "calibration.py").write_text('"""Files."""\ndef calibration_for(s):\n    return s\n')
    (root / "serving" / "steps.py").write_text('"""Steps."""\nfrom perfmodel.catalog.calibration import '
                                               'calibration_for\n\ndef t(system):\n    return calibration_for(system)\n')
    (root / "model" / "plan.py").write_text('"""Plan."""\nfrom perfmodel import catalog\n')
    mods = [root / "catalog" / "calibration.py", root / "serving" / "steps.py", root / "model" / "plan.py"]
    assert look_ups_below_the_edge(mods, root) == [
        "serving/steps.py looks up a calibration (take cal= or system.calibration)",
        "serving/steps.py imports the catalogue", "model/plan.py imports the catalogue"]


MUTATORS = {"update", "clear", "pop", "popitem", "setdefault", "append", "extend"}


def switched_state(modules, root: Path = PKG) -> list[str]:
    """Catalogue modules whose functions rebind (`global x`) or mutate (x.update(...), x[k] = v) a module-level
    name: state "in force" that a call switches (a calibrated set, an engine or a stack replaced) instead of an
    argument (catalog/replacements.py)."""
    bad = []
    for path in modules:
        rel = path.relative_to(root).as_posix()
        if not rel.startswith("catalog/"):
            continue
        tree = _tree(path)
        top = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for n in ast.walk(fn):
                if isinstance(n, ast.Global):
                    bad += [f"{rel} switches global {g}" for g in n.names]
                elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in MUTATORS
                      and isinstance(n.func.value, ast.Name) and n.func.value.id in top):
                    bad.append(f"{rel} mutates module-level {n.func.value.id}")
                elif isinstance(n, (ast.Assign, ast.AugAssign)):
                    for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in top:
                            bad.append(f"{rel} mutates module-level {t.value.id}")
    return bad


def test_the_catalogue_holds_no_state_a_call_switches(tmp_path):
    assert not switched_state(MODULES), "\n".join(switched_state(MODULES))
    root = tmp_path / "perfmodel"
    (root / "catalog").mkdir(parents=True)
    (root / "catalog" / "calibration.py").write_text('"""Sets."""\n_ACTIVE = {}\n\ndef applied(s):\n'
                                                     '    global _ACTIVE\n    _ACTIVE = s\n')
    (root / "catalog" / "engines.py").write_text('"""Profiles."""\n_ACTIVE = {}\n\ndef using(p):\n'
                                                 '    _ACTIVE.update(p)\n')
    assert switched_state([root / "catalog" / "calibration.py", root / "catalog" / "engines.py"], root) == [
        "catalog/calibration.py switches global _ACTIVE", "catalog/engines.py mutates module-level _ACTIVE"]


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_modules_a_reader_can_hold(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{_rel(path)} has {n} lines (at most {MAX_LINES}): split it by meaning"


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_module_has_a_purpose_line(path):
    doc = ast.get_docstring(_tree(path))
    assert doc and doc.strip().splitlines()[0], f"{_rel(path)} needs a one-line purpose docstring"


@pytest.mark.parametrize("path", [p for p in MODULES if _rel(p) != "core/units.py"], ids=_rel)
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
    assert not bad, f"{_rel(path)}: use the named constants in perfmodel.core.units instead of {bad}"


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_ui_libraries_stay_in_the_ui_layer(path):
    imported = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    for lib, allowed in UI_ONLY.items():
        if lib in imported:
            ok = any(_rel(path) == a or (a.endswith("/") and _rel(path).startswith(a)) for a in allowed)
            assert ok, f"{_rel(path)} imports {lib}; only {sorted(allowed)} (and app.py) may"


def test_hardware_fields_carry_si_unit_suffixes():
    import dataclasses

    from perfmodel.core import hardware
    suffixes = ("_s", "_bytes", "_bytes_per_s", "_flop_per_s", "_hz", "_w", "_usd_per_hour", "_per_s")
    for cls in (hardware.Chip, hardware.Node, hardware.LinkTier, hardware.ElementEngine):
        for f in dataclasses.fields(cls):
            if f.type in ("float", "float | None") and f.name not in ("value",):
                assert f.name.endswith(suffixes), f"{cls.__name__}.{f.name} has no SI unit suffix"


def test_architecture_doc_names_every_package():
    doc = (PKG.parent / "docs" / "ARCHITECTURE.md").read_text()
    missing = [layer for layer in LAYERS if f"`perfmodel/{layer}/`" not in doc]
    assert not missing, f"docs/ARCHITECTURE.md does not describe {missing}"


@pytest.mark.parametrize("layer", LAYERS)
def test_front_door_names_are_not_module_names(layer):
    """`report.comparison()` must stay the function: a submodule of the same name would replace it
    on the package as soon as it is imported."""
    import importlib

    pkg = importlib.import_module(f"perfmodel.{layer}")
    front = set(getattr(pkg, "__all__", ()))
    for mod in getattr(pkg, "_FRONT", ()):
        front |= {n for n in dir(importlib.import_module(mod)) if not n.startswith("_")}
    modules = {p.stem for p in (PKG / layer).glob("*.py")}
    # provenance_frame is both the module and its main function, and the module is what report exposes
    clash = sorted((front & modules) - {"provenance_frame"})
    assert not clash, f"perfmodel.{layer}: {clash} name both a front-door object and a module"


def test_every_module_is_named_in_its_packages_section_of_the_architecture_doc():
    """docs/ARCHITECTURE.md's 'Modules, by package' lists every module under its package's heading (the top-level
    __main__.py with cli), so the map a newcomer reads is the code that exists."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "ARCHITECTURE.md").read_text()
    sections = {}  # a layer's section by its name; a sub-package's by the folder its heading names (`model/graph/`)
    for head, sub, body in re.findall(r"^### (\w+)( \(`\w+/\w+/`)?[^\n]*\n(.*?)(?=^### |^## |\Z)", doc,
                                      flags=re.M | re.S):
        sections[sub.strip(" (`") or head] = body
    missing = []
    for path in sorted((root / "perfmodel").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        rel = path.parent.relative_to(root / "perfmodel").as_posix()
        pkg = "cli" if rel == "." else rel if "/" not in rel else rel + "/"
        if f"| `{path.name}` |" not in sections.get(pkg, ""):
            missing.append(f"{pkg.rstrip('/')}/{path.name}")
    assert not missing, f"modules not named in docs/ARCHITECTURE.md: {missing}"


def test_the_notation_block_is_the_codes_own_letter_tables():
    """docs/ARCHITECTURE.md's notation block is report.documents.notation_markdown() (core/symbols.py and
    serving/closed_loop.py's tables): a letter added or renamed in the code must move the doc with it."""
    from pathlib import Path

    from perfmodel.report.documents import notation_markdown

    doc = (Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md").read_text()
    block = doc.split("<!-- notation:begin -->")[1].split("<!-- notation:end -->")[0].strip()
    assert block == notation_markdown()
