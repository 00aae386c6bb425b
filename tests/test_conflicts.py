"""The 22 conflicts of hardware_facts.md section 9, each recorded where it applies.

A numeric conflict is an `alternatives` entry of the field (kind "alt"); a non-numeric one is
text in the field's or section's `note` (kind "note"). Either way the note names it as
"hardware_facts conflict N". Conflicts 14, 17, 18 and 19 live in the GPU spec files (written
by the GPU engineer); those cases fail if the files are missing.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from perfmodel import catalog

SPECS = catalog.catalog_root() / "hardware_specs"

# conflict number -> [(file under hardware_specs/, path to the field or section, kind)]
# A path element "tiers[NAME]" selects the [[tiers]] entry with that name.
CONFLICTS: dict[int, list[tuple[str, tuple[str, ...], str]]] = {
    1: [("chips/trainium2.toml", ("memory", "hbm_bandwidth"), "alt")],
    2: [("chips/trainium3.toml", ("memory", "hbm_bandwidth"), "alt")],
    3: [("chips/trainium3.toml", ("interconnect", "bandwidth"), "alt"),
        ("trn3-ultraserver.toml", ("tiers[neuronswitch-v1 L1 (in-server, 4 chips)]", "bandwidth"), "alt"),
        ("trn3-ultraserver.toml", ("scaleup", "totals", "link_bandwidth_per_chip"), "alt")],
    4: [("chips/trainium2.toml", ("interconnect", "collective_engines"), "alt"),
        ("chips/trainium3.toml", ("interconnect", "collective_engines"), "alt")],
    5: [("chips/trainium1.toml", ("peak", "bf16"), "alt"),
        ("chips/trainium1.toml", ("peak", "fp32"), "alt"),
        ("chips/trainium1.toml", ("peak", "int8"), "alt"),
        ("trn1.32xlarge.toml", ("node", "totals", "bf16"), "alt")],
    6: [("trn1.32xlarge.toml", ("tiers[neuronlink-v2 (4x4 torus)]",), "note")],
    7: [("trn1.32xlarge.toml", ("tiers[neuronlink-v2 (4x4 torus)]", "bandwidth"), "alt"),
        ("trn1n.32xlarge.toml", ("tiers[neuronlink-v2 (4x4 torus)]", "bandwidth"), "alt")],
    8: [("chips/trainium2.toml", ("memory", "hbm_capacity"), "alt")],
    9: [("trn2-ultraserver.toml", ("scaleup", "totals", "efa_bandwidth"), "alt")],
    10: [("chips/trainium2.toml", ("interconnect", "ports"), "note")],
    11: [("trn2.48xlarge.toml", ("node", "totals", "fp8"), "alt"),
         ("trn2.48xlarge.toml", ("node", "totals", "bf16"), "alt"),
         ("trn2.48xlarge.toml", ("node", "totals", "sparse_fp8"), "alt")],
    12: [("chips/trainium2.toml", ("memory", "hbm_stacks"), "note")],
    13: [("trn2.48xlarge.toml", ("node", "price"), "note")],
    14: [("p5.48xlarge.toml", ("node", "price"), "alt"),
         ("p4d.24xlarge.toml", ("node", "price"), "alt")],
    15: [("trn3-ultraserver.toml", ("scaleup", "totals", "hbm_bandwidth"), "note"),
         ("trn3-ultraserver.toml", ("scaleup", "totals", "hbm_capacity"), "note")],
    16: [("chips/trainium4.toml", ("memory", "hbm_capacity"), "note")],
    17: [("gb200-nvl72.toml", ("scaleup", "totals", "efa_bandwidth"), "alt")],
    18: [("gb200-nvl72.toml", ("scaleup", "totals", "fp4"), "alt")],
    19: [("chips/b200.toml", ("memory", "hbm_capacity"), "alt")],
    20: [("chips/trainium3.toml", ("power", "tdp"), "alt")],
    21: [("chips/trainium1.toml", ("power",), "note"),
         ("chips/inferentia2.toml", ("power",), "note")],
    22: [("trn3-ultraserver.toml", ("scaleup",), "note")],
}
GPU_CONFLICTS = {14, 17, 18, 19}

# a system that loads each chip, to check alternatives survive the loader
CHIP_SYSTEM = {"trainium1": "trn1.32xlarge", "trainium2": "trn2.48xlarge", "trainium3": "trn3-ultraserver",
               "trainium4": "trn4-projected", "inferentia2": "inf2.48xlarge", "b200": "p6-b200.48xlarge"}


def _tag(n: int) -> re.Pattern:
    return re.compile(rf"hardware_facts conflict {n}(?!\d)")


def _resolve(data: dict, path: tuple[str, ...]) -> dict:
    node = data
    for part in path:
        m = re.fullmatch(r"(\w+)\[(.+)\]", part)
        if m:
            matches = [t for t in node.get(m.group(1), []) if t.get("name") == m.group(2)]
            assert matches, f"no {m.group(1)} entry named {m.group(2)!r}"
            node = matches[0]
        else:
            assert part in node, f"missing {part!r} (have {sorted(node)})"
            node = node[part]
    assert isinstance(node, dict)
    return node


def _provenance_key(path: tuple[str, ...]) -> str:
    return ".".join(re.sub(r"^\w+\[(.+)\]$", lambda m: f"tiers.{m.group(1)}", p) for p in path)


def test_all_22_conflicts_are_mapped():
    assert sorted(CONFLICTS) == list(range(1, 23))


@pytest.mark.parametrize("number,file,path,kind",
                         [(n, f, p, k) for n, locs in CONFLICTS.items() for f, p, k in locs],
                         ids=lambda v: str(v) if isinstance(v, int) else None)
def test_conflict_is_recorded(number, file, path, kind):
    fpath = SPECS / file
    if not fpath.exists():
        owner = "the GPU spec files" if number in GPU_CONFLICTS else "the Trainium spec files"
        pytest.fail(f"conflict {number}: {file} does not exist yet ({owner})")
    with open(fpath, "rb") as f:
        entry = _resolve(tomllib.load(f), path)
    tag = _tag(number)
    note = entry.get("note", "")
    if kind == "note":
        assert tag.search(note), f"{file} {'.'.join(path)}: note does not name conflict {number}: {note!r}"
        return
    alts = entry.get("alternatives", [])
    assert alts, f"{file} {'.'.join(path)}: numeric conflict {number} needs an alternatives entry"
    assert tag.search(note) or any(tag.search(a.get("note", "")) for a in alts), (
        f"{file} {'.'.join(path)}: neither the note nor an alternative names conflict {number}")
    # the alternative survives the loader
    if file.startswith("chips/"):
        system, key = CHIP_SYSTEM[Path(file).stem], "chip." + _provenance_key(path)
    else:
        system, key = Path(file).name.removesuffix(".toml"), _provenance_key(path)
    value = catalog.load_system(system).provenance[key]
    assert value.alternatives and all(a.si > 0 and a.source for a in value.alternatives)


def test_non_numeric_trainium_facts():
    """Spot checks of the chosen values beside the recorded conflicts."""
    t1 = catalog.load_system("trn1.32xlarge")
    assert t1.tier("node").topology.value == "torus2d" and t1.tier("node").dims == (4, 4)  # conflict 6
    t3 = catalog.load_system("trn3-ultraserver")
    assert t3.chip.hbm_bandwidth_bytes_per_s == pytest.approx(4.9e12)  # conflict 2: 4.9 chosen over 4.7
    assert t3.chip.link_bandwidth_bytes_per_s == pytest.approx(2.56e12)  # conflict 3: chip headline figure
    assert t3.tier("node").bandwidth_bytes_per_s == pytest.approx(256e9)  # conflict 3: tier = PCIe link list
    assert t3.tier("scaleup").bandwidth_bytes_per_s == pytest.approx(320e9)
    assert t3.chip.tdp_w == pytest.approx(690.0)  # conflict 20: derived from AWS's 40% efficiency, 1 kW the upper end
    assert t3.provenance["chip.power.tdp"].status.value == "estimated"
