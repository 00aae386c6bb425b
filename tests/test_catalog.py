"""Every catalogue file loads; malformed spec files are rejected naming file, field and reason."""

import shutil
from pathlib import Path

import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.catalog.check import check_catalog
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.core.hardware import Scope

ROOT = Path(__file__).resolve().parent.parent
REQUIRED_SYSTEMS = ["trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "inf2.48xlarge", "trn2.48xlarge",
                    "trn2-ultraserver", "trn3-ultraserver-gen1", "trn3-ultraserver", "trn4-projected",
                    "p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p6-b200.48xlarge", "gb200-nvl72"]


def test_required_systems_present_and_load():
    assert set(REQUIRED_SYSTEMS) <= set(catalog.list_systems())
    for name in catalog.list_systems():
        s = catalog.load_system(name)
        assert s.name == name and s.chip.hbm_capacity_bytes > 0 and s.node.chips >= 1
        for path, v in s.provenance.items():
            assert v.source and v.status, path


def test_scaleup_sizes():
    assert catalog.load_system("trn2-ultraserver").scaleup_chips == 64
    assert catalog.load_system("trn3-ultraserver-gen1").scaleup_chips == 64
    assert catalog.load_system("trn3-ultraserver").scaleup_chips == 144
    assert catalog.load_system("gb200-nvl72").scaleup_chips == 72


def test_topologies_follow_the_spec_sheets():
    trn2 = catalog.load_system("trn2-ultraserver")
    assert trn2.tier(Scope.NODE).topology.value == "torus2d" and trn2.tier(Scope.NODE).dims == (4, 4)
    assert trn2.tier(Scope.SCALEUP).topology.value == "ring"  # the Z dimension of the 4x4x4 torus
    assert catalog.load_system("trn3-ultraserver").tier(Scope.SCALEUP).topology.value == "switch"


def test_projected_variants_bracket_the_nominal():
    lo, mid, hi = (catalog.load_system("trn4-projected", variant=v) for v in ("low", "nominal", "high"))
    assert lo.chip.hbm_bandwidth_bytes_per_s <= mid.chip.hbm_bandwidth_bytes_per_s <= hi.chip.hbm_bandwidth_bytes_per_s
    assert mid.projected and mid.uncertain_fields()


def test_check_passes_on_the_catalogue():
    assert [f for f in check_catalog() if f.level == "error"] == []


def test_all_workloads_load():
    assert len(workload_files.list_workloads()) >= 17


# ------------------------------------------------------------------ malformed spec files

GOOD_CHIP = (ROOT / "hardware_specs" / "chips" / "trainium2.toml").read_text()
GOOD_SYSTEM = (ROOT / "hardware_specs" / "trn2.48xlarge.toml").read_text()


def _broken_catalog(tmp_path: Path, chip_text: str = GOOD_CHIP, system_text: str = GOOD_SYSTEM) -> Path:
    root = tmp_path / "cat"
    (root / "hardware_specs" / "chips").mkdir(parents=True)
    shutil.copy(ROOT / "hardware_specs" / "sources.toml", root / "hardware_specs" / "sources.toml")
    shutil.copytree(ROOT / "hardware_specs" / "calibration", root / "hardware_specs" / "calibration")
    shutil.copytree(ROOT / "workloads", root / "workloads")
    (root / "hardware_specs" / "chips" / "trainium2.toml").write_text(chip_text)
    (root / "hardware_specs" / "trn2.48xlarge.toml").write_text(system_text)
    return root


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


DMA_TABLE = ('[memory.dma_bandwidth]\nvalue = "3.5 TB/s"\nsource = "S7"\nstatus = "published"\n'
             'note = "128 DMA engines (16 per core)"')

CHIP_CASES = [
    ("unknown key", _replace(GOOD_CHIP, 'core_name = "NeuronCore-v3"', 'core_name = "NeuronCore-v3"\ncolour = "blue"'),
     "colour", "unknown key"),
    ("missing unit", _replace(GOOD_CHIP, 'value = "2.9 TB/s"', 'value = "2.9"'), "memory.hbm_bandwidth",
     "with its unit"),
    ("wrong dimension", _replace(GOOD_CHIP, 'value = "2.9 TB/s"', 'value = "2.9 TB"'), "memory.hbm_bandwidth",
     "dimension"),
    ("zero value", _replace(GOOD_CHIP, 'value = "96 GiB"', 'value = "0 GiB"'), "memory.hbm_capacity", "positive"),
    ("negative value", _replace(GOOD_CHIP, 'value = "667 TFLOPS"', 'value = "-667 TFLOPS"'), "peak.bf16", "positive"),
    ("missing source", _replace(GOOD_CHIP, 'value = "96 GiB"\nsource = "S7"\n', 'value = "96 GiB"\n'),
     "memory.hbm_capacity", "source"),
    ("unknown source key", _replace(GOOD_CHIP, 'value = "96 GiB"\nsource = "S7"', 'value = "96 GiB"\nsource = "S999"'),
     "memory.hbm_capacity", "S999"),
    ("bad status", _replace(GOOD_CHIP, 'value = "96 GiB"\nsource = "S7"\nstatus = "published"',
                            'value = "96 GiB"\nsource = "S7"\nstatus = "rumoured"'), "memory.hbm_capacity", "status"),
    ("derived without derivation", _replace(GOOD_CHIP, 'status = "derived"\nderivation = "8 processors x 512 bit / 32 bit (FP32 lanes) = 128 elements per cycle"',
                                            'status = "derived"'), "gpsimd_engine.elements_per_cycle", "derivation"),
    ("malformed TOML", GOOD_CHIP.replace('[cores]', '[cores'), "trainium2.toml", "malformed TOML"),
    ("name differs from file", _replace(GOOD_CHIP, 'name = "trainium2"', 'name = "trainium9"'), "name",
     "file name"),
    ("unit typo", _replace(GOOD_CHIP, 'value = "2.4 GHz"', 'value = "2.4 GHzz"'), "tensor_engine.clock",
     "cannot read"),
    ("string where a table is due",  # the spec value written inline in [memory], not as its own table
     _replace(_replace(GOOD_CHIP, DMA_TABLE, ''), '[memory]\n', '[memory]\ndma_bandwidth = "3.5 TB/s"\n'),
     "memory.dma_bandwidth", "expected a table"),
]


@pytest.mark.parametrize("label,text,field,reason", CHIP_CASES, ids=[c[0] for c in CHIP_CASES])
def test_malformed_chip_rejected(tmp_path, label, text, field, reason):
    root = _broken_catalog(tmp_path, chip_text=text)
    catalog.clear_caches()
    with pytest.raises(CatalogError) as err:
        catalog.load_system("trn2.48xlarge", root=root)
    msg = str(err.value)
    assert "trainium2.toml" in msg and field in msg and reason in msg, msg


SYSTEM_CASES = [
    ("price without date", _replace(GOOD_SYSTEM, 'as_of = "SkyPilot catalog v7 capture (date unknown), us-east-2"\n', ''),
     "node.price.as_of", "date"),
    ("torus does not span the node", _replace(GOOD_SYSTEM, "dims = [4, 4]", "dims = [4, 2]"), "tiers", "16"),
    ("unknown topology", _replace(GOOD_SYSTEM, 'topology = "torus2d"', 'topology = "hypercube"'), "tiers.0.topology",
     "torus2d"),  # the reason lists the topologies allowed
    ("unknown chip", _replace(GOOD_SYSTEM, 'chip = "trainium2"', 'chip = "trainium7"'), "trainium7", "no such chip"),
    ("in-switch reduction on a torus", _replace(GOOD_SYSTEM, 'topology = "torus2d"\n', 'topology = "torus2d"\n'
                                                 'in_switch_reduction = { value = "1", source = "S2", '
                                                 'status = "published" }\n'), "in_switch_reduction", "switch tier"),
    ("node bandwidth given as capacity", _replace(GOOD_SYSTEM, 'value = "1024 GB/s"', 'value = "1024 GB"'),
     "tiers", "dimension"),
]


@pytest.mark.parametrize("label,text,field,reason", SYSTEM_CASES, ids=[c[0] for c in SYSTEM_CASES])
def test_malformed_system_rejected(tmp_path, label, text, field, reason):
    root = _broken_catalog(tmp_path, system_text=text)
    catalog.clear_caches()
    with pytest.raises(CatalogError) as err:
        catalog.load_system("trn2.48xlarge", root=root)
    msg = str(err.value)
    assert field in msg and reason in msg, msg


def test_check_reports_a_broken_copy(tmp_path):
    root = _broken_catalog(tmp_path, chip_text=_replace(GOOD_CHIP, 'value = "2.9 TB/s"', 'value = "2.9 TB"'))
    findings = check_catalog(root)
    errors = [f for f in findings if f.level == "error"]
    assert errors and any("trainium2.toml" in f.message and "memory.hbm_bandwidth" in f.message for f in errors)
    catalog.clear_caches()


def test_check_reads_calibrated_sets_in_fitted(tmp_path):
    root = _broken_catalog(tmp_path)
    fitted = root / "hardware_specs" / "calibration" / "fitted"
    fitted.mkdir()
    (fitted / "neuron-bad.toml").write_text('schema_version = 1\nfamily = "neuron"\n')
    errors = [f for f in check_catalog(root) if f.level == "error"]
    assert any(f.file.endswith("neuron-bad.toml") for f in errors), errors
    catalog.clear_caches()
