"""A machine described in the explorer's custom-hardware form, written as the catalogue's own files: a chip file
derived from a catalogue chip (`base`: every field not entered is the base chip's) and a system file copied from
a catalogue system with that chip, its price and its scale-up links; read back by catalog.load_system, so the
form's numbers pass the same checks as a spec file and the files work with `--hardware FILE` too.

    Form.of(system)        the form's fields, filled from a catalogue system (what the form starts from)
    write(form, folder)    the two files under folder/<hash>/; returns the system file's path (a --hardware ref)

Entered values carry status 'estimated' (a spec file's word for a number no datasheet gave) and the source
'entered in the perfmodel explorer's custom-hardware form'; the fields not entered are the base chip's, which the
loader marks projected (assumed equal), so every figure priced on the machine carries a marker (* or †).
Compute rates are entered for BF16 and FP8; the base chip's other types (its own file's and those it inherits)
scale with the one of their width (16/32-bit with BF16, 8-bit and narrower with FP8). Link bandwidth is a factor on every scale-up tier of the
base system (topologies differ: one number cannot say which tier).

Does not: import Streamlit, or price anything.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import tomllib
from pathlib import Path

import tomli_w

from perfmodel import catalog
from perfmodel.catalog.files import catalog_root
from perfmodel.core import safe_write, units
from perfmodel.core.dtypes import DType, payload_bits

SOURCE = "entered in the perfmodel explorer's custom-hardware form"


@dataclasses.dataclass(frozen=True)
class Form:
    """The form's fields (people's units), and the catalogue system they start from."""

    base: str
    name: str
    bf16_tflops: float
    fp8_tflops: float  # 0: the chip has no FP8 rate
    hbm_gib: float
    hbm_tb_per_s: float
    tdp_w: float
    price_usd_per_node_hour: float  # 0: no price
    link_factor: float = 1.0

    @classmethod
    def of(cls, system: str) -> "Form":
        s = catalog.load_system(system)
        rate = s.chip.tensor.flop_per_s
        price = s.node.price_usd_per_hour or 0.0
        return cls(base=system, name=f"my-{system}", bf16_tflops=rate.get(DType.BF16, 0.0) / units.TERA,
                   fp8_tflops=rate.get(DType.FP8, 0.0) / units.TERA, hbm_gib=s.chip.hbm_capacity_bytes / units.GiB,
                   hbm_tb_per_s=s.chip.hbm_bandwidth_bytes_per_s / units.TB, tdp_w=s.chip.tdp_w or 0.0,
                   price_usd_per_node_hour=price)


def _assumed(**fields) -> dict:
    return {**fields, "source": SOURCE, "status": "estimated"}  # a spec file's word for a number no datasheet gave


def _chip_doc(form: Form, base_chip: str, base: dict, system) -> dict:
    rate = system.chip.tensor.flop_per_s
    ratio = {}  # data type -> the entered rate over the base chip's rate of its width
    for d in rate:
        entered, ref = (form.fp8_tflops, DType.FP8) if payload_bits(d) <= 8 else (form.bf16_tflops, DType.BF16)
        if ref in rate and rate[ref] > 0 and entered > 0:
            ratio[d.value] = entered * units.TERA / rate[ref]
    doc = {"schema_version": 1, "kind": "chip", "name": f"{form.name}-chip", "display_name": f"{form.name} (custom)",
           "vendor": base["vendor"], "family": base["family"], "generation": "custom",
           "description": f"{SOURCE}, from {base_chip}", "base": base_chip,
           "memory": {"hbm_capacity": _assumed(value=f"{form.hbm_gib:g} GiB"),
                      "hbm_bandwidth": _assumed(value=f"{form.hbm_tb_per_s:g} TB/s")}}
    if form.tdp_w > 0:
        doc["power"] = {"tdp": _assumed(value=f"{form.tdp_w:g} W")}
    # absolute values for every type the loaded chip has (its own file's and those it inherits from its base), the
    # entered width's scaled, per chip (the loaded rates are the chip's): a ratio in a spec file is a projection's word
    peaks = {d.value: _assumed(value=f"{v * ratio.get(d.value, 1.0) / units.TERA:.6g} TFLOPS")
             for d, v in system.chip.peak_flop_per_s.items()}
    if peaks:
        doc["peak"] = peaks
    rates = {d.value: _assumed(value=f"{v * ratio.get(d.value, 1.0) / units.TERA:.6g} TFLOPS") for d, v in rate.items()}
    if rates:
        doc["tensor_engine"] = {"per": "chip", "rate": rates}
    return doc


def _system_doc(form: Form, base: dict) -> dict:
    doc = dict(base, name=form.name, display_name=f"{form.name} (custom, from {form.base})",
               chip=f"{form.name}-chip.toml", description=f"{SOURCE}, from {form.base}")
    node = dict(doc["node"])
    if form.price_usd_per_node_hour > 0:
        node["price"] = _assumed(value=f"{form.price_usd_per_node_hour:g} USD/h",
                                 as_of=f"entered {datetime.date.today().isoformat()}")
    else:
        node.pop("price", None)
    doc["node"] = node
    tiers = []
    for tier in doc.get("tiers", []):
        if tier.get("scope") != "scaleout" and form.link_factor != 1.0:
            bw = units.parse(tier["bandwidth"]["value"], "bandwidth") * form.link_factor
            tier = dict(tier, bandwidth=_assumed(value=f"{bw / units.GB:g} GB/s"))
        tiers.append(tier)
    doc["tiers"] = tiers
    return doc


def write(form: Form, folder: Path) -> str:
    """The form's chip and system files (module doc) under folder/<hash of the form>/; the system file's path."""
    if not form.name.strip() or "/" in form.name or form.name.startswith("."):
        raise ValueError(f"custom hardware name {form.name!r}: give a plain name such as 'my-box'")
    specs = catalog_root() / "hardware_specs"
    base_sys = tomllib.loads((specs / f"{form.base}.toml").read_text())
    base_chip = base_sys["chip"]
    chip_doc = _chip_doc(form, base_chip, tomllib.loads((specs / "chips" / f"{base_chip}.toml").read_text()),
                         catalog.load_system(form.base))
    where = folder / hashlib.sha256(repr(form).encode()).hexdigest()[:16]
    where.mkdir(parents=True, exist_ok=True)
    chip, path = where / f"{form.name}-chip.toml", where / f"{form.name}.toml"
    # whole or not at all (another session may read the same folder); a machine the catalogue refuses is not kept
    safe_write.write_text(chip, tomli_w.dumps(chip_doc))
    safe_write.write_text(path, tomli_w.dumps(_system_doc(form, base_sys)))
    try:
        catalog.load_system(str(path))  # the catalogue's checks: a value out of its range is one CatalogError line
    except ValueError:
        chip.unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        raise
    return str(path)
