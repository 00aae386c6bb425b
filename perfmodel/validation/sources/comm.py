"""Validation families for collectives: nccom-test (Neuron) and nccl-tests (NVIDIA) measurements.

Families (cases with phase 'collective'; the model column names the collective and size):
    neuron-collectives  Trainium / Inferentia hardware: nccom-test bus bandwidth and latency
    nccl                any other hardware: nccl-tests / torch all-reduce bus bandwidth and latency

Mapping of rows to the model (stated once per family, never per row, nothing fitted):
    - nccom-test ranks are NeuronCores of a trn1.32xlarge (the examples do not state the instance):
      r > 2 ranks = r / 2 Trainium1 chips running 2 ranks each (collectives.collective_cost
      ranks_per_chip = 2: a flat ring over r ranks has r - 1 steps). 2 ranks are modelled on two
      neighbouring chips, 1 rank each: nccom-test numbers ranks by NeuronCore, so the pair may be
      the two cores of one chip, but the 52.8 GB/s bus bandwidth of its 1 GiB all-reduce
      (NRN-CC-001) matches one NeuronLink per direction, not the chip's HBM; 'collective permute'
      = send/recv between pairs.
    - The examples come from the Trn1 documentation of the SDK 2.18 era: their runtime's collective
      rules are the 'transformers-neuronx-2.18' stack's (hardware_specs/stacks/neuron.toml: the ring
      inside an instance for groups above 16 ranks), so the 32-rank
      all-gather (NRN-CC-004) is a 31-step ring. Known gap: it measures 151 us = host launch
      (55 us, NRN-CC-002) + 31 x 3.1 us, about twice the documented 1-2 us per ring hop
      (link_latency_node 1.5 us), which the in-graph collectives of the SDK 2.18 decode cases
      confirm; the example's runtime version is not stated (the page warns its examples may be
      out of date). Evidence that would close it: the same nccom-test run on the SDK 2.18 runtime.
    - nccl-tests and nccom-test call the C API: launch 'host' (collective_host_launch_latency per
      call). Rows timed through torch.distributed (all_reduce_bench.py, NCCL-010/011) use launch
      'eager', which adds PyTorch's per-call host overhead (framework_call_overhead, 20 us). The
      script's timing mode is read from its numbers, as its results page does not name it: the
      small-payload times (40 us at 32 KiB, 46 us at 1 MiB) match the same author's later
      '--with-host-overhead' medians on an 8x H200 node (41.7 us, 50.9 us), not his host-hidden
      ones (20.9 us, 27.7 us) or nccl-tests' (20.4 us, 27.8 us); large payloads do not notice it.
    - p4de.24xlarge rows use p4d.24xlarge: the same NVSwitch and 4 x 100 Gbps EFA (only HBM differs).
    - 8x H200 rows use p5e.48xlarge. GCP a3-mega (TCPXO) is not in the catalogue: not predicted.
    - The fastest algorithm is taken ('auto'), NCCL's NVLS (in-switch reduction on NVSwitch gen 3 and
      later, collectives 'nvls' and NVLS-tree as a level of 'hierarchical') included, with NCCL's own
      tuning constants (0.85 / 0.74 efficiency, 25 us latency); a row whose run disabled NVLS
      ('NVLS disabled') is predicted with in_switch_reduction_efficiency = 0. Known gap: NCCL's NVLS
      reaches that rate only from ~256 MiB on one 8x H200 node and ~8 GiB on 2 x p5 (NVLS-tree), a
      ramp the alpha-beta cost lacks (+14% at 64 MiB on one node, +51% at 128 MiB on 2 nodes); the
      2-node 1 MiB all-reduce (123 us) costs 54 us more than the 8 B one, the model ~9 us (+58%).

Does not: tune anything to these rows; every miss is reported with its error.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import neuron_stacks, system_names
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.core.calibration import of as calibration_of
from perfmodel.comm import collectives as co
from perfmodel.comm.algorithms import Collective
from perfmodel.core import units
from perfmodel.validation.harness import frame, parse_points, parse_size, register_validation, row, unexpressed

_OPS = {"all-reduce": Collective.ALL_REDUCE, "all_reduce": Collective.ALL_REDUCE, "all-gather": Collective.ALL_GATHER,
        "collective permute": Collective.SEND_RECV}


def _collective(text: str) -> Collective:
    for key, c in _OPS.items():
        if key in text:
            return c
    raise ValueError(f"no collective named in {text!r}")


def _predict(system_name: str, coll: Collective, size: float, chips: int, metric: str,
             ranks_per_chip: int = 1, nvls: bool = True, launch: str = "host", stack: str = "",
             replaced: Replacements = NONE) -> tuple[float, str]:
    """(predicted value in the row's unit, algorithm) for one point: busbw GB/s or latency us.
    nvls=False: the run disabled in-switch reduction (NCCL_NVLS_ENABLE=0); launch 'host' for the
    C-API microbenchmarks, 'eager' for torch.distributed scripts timing one call at a time."""
    s = catalog.load_system(system_name, replaced=replaced)
    group, rpc = (2, 1) if coll == Collective.SEND_RECV else (chips, ranks_per_chip)
    cal = calibration_of(s) if nvls else calibration_of(s).with_overrides({"in_switch_reduction_efficiency": 0.0})
    cal = neuron_stacks.stack(stack, replaced).calibration(cal) if stack else cal  # the runtime's collective algorithms
    # microbenchmarks (nccom-test, nccl-tests) launch every call from the host
    df = co.sweep(s, cal, coll, [size], [group], launch=launch, ranks_per_chip=rpc)
    r = df.iloc[0]
    if "latency" in metric:
        return float(r["time_s"] / units.US), r["algorithm"]
    return float(r["busbw_bytes_per_s"] / units.GB), r["algorithm"]


def _points(rows: pd.DataFrame, system_of, chips_of, note_of, ranks_per_chip_of=lambda m: 1,
            stack: str = "", replaced: Replacements = NONE) -> pd.DataFrame:
    out = []
    for _, m in rows.iterrows():
        system = system_of(m)
        try:
            coll = _collective(m["model"])
            chips = chips_of(m)
            pts = [(parse_size(m["model"]), float(m["value_num"]), m["metric"], m["case_id"])]
        except ValueError as exc:
            out.append(unexpressed(m, f"collective, size or ranks not readable: {exc}"))
            continue
        for size, val, unit in parse_points(m["notes"]):
            metric = "latency" if unit == "us" else "bus bandwidth"
            pts.append((size, val, metric, f"{m['case_id']}@{_fmt_size(size)}"))
        for size, val, metric, cid in pts:
            unit = "us" if "latency" in metric else "GB/s"
            if system is None:
                out.append(row(cid, m["hardware"], metric, val, np.nan, unit,
                               reason=f"hardware {m['hardware']!r} is not in the catalogue"))
                continue
            rpc = 1 if coll == Collective.SEND_RECV else ranks_per_chip_of(m)
            pred, alg = _predict(system, coll, size, chips, metric, rpc, nvls=not _nvls_disabled(m),
                                 launch=_launch(m), stack=stack, replaced=replaced)
            where = ("pairs of chips" if coll == Collective.SEND_RECV
                     else f"{chips} chips" + (f" x {rpc} ranks" if rpc > 1 else ""))
            out.append(row(cid, m["hardware"], metric, val, pred, unit,
                           f"{_fmt_size(size)} {coll.value} on {system}, {where}, chosen {alg}. "
                           f"{note_of(m)}".strip(), system=system))
    return frame(out)


def _nvls_disabled(m) -> bool:
    """The run itself turned NCCL's NVLS off ('NVLS disabled', NCCL_NVLS_ENABLE=0 in its model or
    parallelism text; notes may mention other runs)."""
    text = " ".join(str(m.get(k, "")) for k in ("model", "parallelism"))
    return bool(re.search(r"NVLS disabled|NVLS_ENABLE=0|SHARP disabled", text))


def _launch(m) -> str:
    """'eager' for rows timed through torch.distributed (all_reduce_bench.py): one call per trial,
    PyTorch's per-call host overhead included; 'host' for the C-API tools (nccl-tests, nccom-test)."""
    text = " ".join(str(m.get(k, "")) for k in ("model", "source"))
    return "eager" if re.search(r"torch\.distributed|all_reduce_bench", text) else "host"


def _fmt_size(n: float) -> str:
    for name, div in (("GiB", units.GiB), ("MiB", units.MiB), ("KiB", units.KiB)):
        if n >= div:
            return f"{n / div:g} {name}"
    return f"{n:g} B"


def _ranks(text: str) -> int:
    m = re.match(r"\d+", text.strip())
    if not m:
        raise ValueError(f"num_chips {text!r} is not a count")
    return int(m.group(0))


NEURON_HW = r"(?i)trn\d|inf\d|trainium|inferentia"


NCCOM_STACK = "transformers-neuronx-2.18"  # the Trn1 docs' nccom-test examples: that era's runtime rules


def neuron_hardware(rows: pd.DataFrame) -> pd.Series:
    """Rows measured on Trainium / Inferentia hardware (by the hardware text)."""
    return rows["hardware"].str.contains(NEURON_HW, regex=True)


def _neuron_ranks(m) -> int:
    return _ranks(m["num_chips"])


@register_validation("neuron-collectives", selects=lambda r: r["phase"].eq("collective") & neuron_hardware(r),
                     gaps={"collective": "the 32-rank nccom all-gather implies ~3.1 us per host-launched ring step, "
                                         "twice the documented 1-2 us hop latency; its runtime version is not stated"})
def neuron_collectives(rows: pd.DataFrame, replaced: Replacements) -> pd.DataFrame:
    """NRN-CC rows: nccom-test examples on trn1.32xlarge, ranks = NeuronCores (2 per chip above 2 ranks)."""
    def note(m):
        r = _neuron_ranks(m)
        if "permute" in m["model"]:
            return f"{r} nccom ranks exchanging with one partner each: send/recv over one NeuronLink hop."
        if r <= 2:
            return "2 nccom ranks modelled on two neighbouring chips (one NeuronLink hop)."
        return (f"{r} nccom ranks = NeuronCores, 2 per chip; above 16 ranks the Trn1 runtime runs the ring "
                f"({r - 1} steps)." + (" Gap: measured ~3.1 us per host-launched ring step vs the documented "
                                       "1-2 us per hop (link_latency_node 1.5 us); runtime version of the "
                                       "example not stated." if r > 16 else ""))
    return _points(rows, lambda m: "trn1.32xlarge", lambda m: max(1, _neuron_ranks(m) // 2) if _neuron_ranks(m) > 2
                   else 2, note, lambda m: 2 if _neuron_ranks(m) > 2 else 1, stack=NCCOM_STACK, replaced=replaced)


# a system the catalogue lacks, modelled as one it holds for collectives (said in each row's note)
STAND_INS = {"p4de.24xlarge": ("p4d.24xlarge", "p4de modelled as p4d (same NVSwitch and EFA)")}


def _nccl_system(hardware: str) -> tuple[str | None, str]:
    """(catalogue system, note) of a row's hardware text ('2x p5.48xlarge (16x H100; ...)', '8x H200 SXM
    (single node)'): the name before the parenthesis, less its count, resolved through the catalogue's
    aliases (catalog/system_names.py); a stand-in where one is stated; (None, '') where neither."""
    name = re.sub(r"^\s*\d+\s*x\s+", "", str(hardware).split("(")[0]).strip()
    found = system_names.lookup(name)
    if found:
        return found, ""
    return STAND_INS.get(name, (None, ""))


@register_validation("nccl", selects=lambda r: r["phase"].eq("collective") & ~neuron_hardware(r),
                     gaps={"collective": "NCCL's NVLS-tree on 2 x p5 reaches its modelled rate only from ~8 GiB, "
                                         "a ramp the alpha-beta cost lacks (+17% at 1 GiB, +51% at 128 MiB), and "
                                         "the 2-node 1 MiB all-reduce takes 54 us more than the 8 B one where the "
                                         "model adds ~9 us (+58%)"})
def nccl(rows: pd.DataFrame, replaced: Replacements) -> pd.DataFrame:
    """NCCL rows: all-reduce bus bandwidth curves and small-message latency."""
    def system_of(m):
        return _nccl_system(m["hardware"])[0]

    def note(m):
        extra = [stand_in] if (stand_in := _nccl_system(m["hardware"])[1]) else []
        if _nvls_disabled(m):
            extra.append("the run disabled NVLS: predicted without in-switch reduction")
        if _launch(m) == "eager":
            extra.append("timed one torch.distributed call at a time: + PyTorch's per-call host overhead")
        return "; ".join(extra)
    return _points(rows, system_of, lambda m: _ranks(m["num_chips"]), note, replaced=replaced)
