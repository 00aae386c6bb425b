"""Neuron software-stack profiles and logical NeuronCores (issue 17): the stack a row names decides its rules,
never the chip family; TP counts logical cores (cores / LNC); a chip's ranks share its links."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel import validation as v
from perfmodel.catalog import neuron_stacks
from perfmodel.catalog.calibration import calibration_for
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.comm import collectives as co
from perfmodel.validation.sources import inference as inf

TRN2_ROWS = "reference/neuron_trn2_vllm.csv"


def test_every_stack_rule_carries_its_source_and_reason():
    stacks = neuron_stacks.stacks()
    assert {"transformers-neuronx-2.18", "nxd-inference", "torch-neuronx-2022", "nxd-training"} <= set(stacks)
    for st in stacks.values():
        assert set(st.params) == set(neuron_stacks.ROLES[st.role])
        for s in st.params.values():
            assert s.source.strip() and s.reason.strip() and s.status in ("assumed", "measured", "fitted")


def test_a_rows_text_names_its_stack():
    assert neuron_stacks.named_in("Transformers NeuronX, Neuron SDK 2.18.0") == "transformers-neuronx-2.18"
    assert neuron_stacks.named_in("vLLM Neuron plugin, Neuron SDK 2.31+") == "nxd-inference"
    assert neuron_stacks.named_in("NxDI + vLLM, seq-len 8192") == "nxd-inference"
    assert neuron_stacks.named_in("nccl-tests on p5") == ""
    # a training stack is named by training rows only; a serving row never takes one
    assert neuron_stacks.named_in("torch-neuronx 1.13, PyTorch/XLA", "training") == "torch-neuronx-2022"
    assert neuron_stacks.named_in("torch-neuronx 1.13, PyTorch/XLA") == ""


def test_the_stack_replaces_the_runtime_rules_with_its_own_provenance():
    cal = calibration_for(catalog.load_system("trn2.48xlarge"))
    old = neuron_stacks.stack("transformers-neuronx-2.18").calibration(cal)
    assert cal["intranode_direct_max_ranks"] == 0 and old["intranode_direct_max_ranks"] == 16
    assert old.params["intranode_multistep_algorithms"].origin == "stack transformers-neuronx-2.18"
    assert old["op_overhead"] == cal["op_overhead"]  # only the runtime's rules move


def test_a_stack_file_missing_a_rule_is_one_clear_error(tmp_path):
    text = (catalog.catalog_root() / "hardware_specs" / "stacks" / "neuron.toml").read_text()
    start = text.index('[stacks.nxd-inference.params.step_host_latency]')
    bad = tmp_path / "neuron.toml"
    bad.write_text(text[:start])
    with pytest.raises(CatalogError, match=r"stacks\.nxd-inference\.params: missing step_host_latency"):
        neuron_stacks.stacks(str(bad))


@pytest.mark.parametrize("system, parallelism, chips, ranks", [
    ("trn1.32xlarge", "TP32 (NeuronCores)", 16, 2),   # NeuronCore-v2: LNC 1, 2 cores per chip
    ("inf2.48xlarge", "TP24 (NeuronCores)", 12, 2),
    ("trn2.48xlarge", "TP16 (LNC=2)", 4, 4),          # 8 physical cores, LNC=2 by default: 4 logical
    ("trn2.48xlarge", "TP64 (LNC=2)", 16, 4),
    ("trn2.48xlarge", "TP8 (LNC=2 default)", 2, 4),
    ("trn2.48xlarge", "TP16 (LNC=1)", 2, 8),          # LNC=1 exposes all 8 cores
    ("p5.48xlarge", "TP8", 8, 1),                     # GPUs: TP counts chips
])
def test_tp_counts_logical_neuron_cores(system, parallelism, chips, ranks):
    s = catalog.load_system(system)
    assert inf.tp_chips(parallelism, s) == chips and inf.ranks_per_chip(parallelism, s) == ranks


def test_a_chips_ranks_never_make_a_collective_faster():
    # r ranks on a chip share its links (every algorithm but the flat ring): a TP group over the same chips
    # counted in more ranks moves the same bytes over the same links, plus the on-chip step
    trn2 = catalog.load_system("trn2.48xlarge")
    cal = calibration_for(trn2)
    sizes = np.array([1024.0, 65536.0, 4 * 2.0 ** 20, 2.0 ** 30])
    for g in (2, 4, 16):
        one = co.collective_time(trn2, cal, "all-reduce", sizes, g)
        four = co.collective_time(trn2, cal, "all-reduce", sizes, g, ranks_per_chip=4)
        assert np.all(four >= one - 1e-12)


@pytest.fixture(scope="module")
def trn2_rows() -> pd.DataFrame:
    return v.run_cases(catalog.catalog_root() / TRN2_ROWS).set_index("case_id")


def test_the_nine_trainium2_rows_are_read_as_they_are(trn2_rows):
    assert len(trn2_rows) == 9
    predicted = trn2_rows[trn2_rows["predicted"].notna()]
    assert set(predicted.index) == {f"VNRN-TRN2-0{i}" for i in (1, 2, 3, 4, 5, 6, 7, 8)}
    # EAGLE3 rows: TPOT from the row's own draft length and acceptance, faster than the plain decode row
    assert "k=1, E=1.68" in trn2_rows.at["VNRN-TRN2-04", "note"]
    assert "k=3, E=3.22" in trn2_rows.at["VNRN-TRN2-08", "note"]  # 1 + 0.865 + 0.725 + 0.635
    for spec, plain in (("VNRN-TRN2-04", "VNRN-TRN2-01"), ("VNRN-TRN2-08", "VNRN-TRN2-05")):
        assert trn2_rows.at[spec, "predicted"] < trn2_rows.at[plain, "predicted"]
        assert trn2_rows.at[spec, "measured"] < trn2_rows.at[plain, "measured"]
    assert "input_len" in trn2_rows.at["VNRN-TRN2-09", "reason"]  # 'HumanEval prompts (short; not stated)'
    note = trn2_rows.at["VNRN-TRN2-01", "note"]
    assert "nxd-inference" in note and "16 logical NeuronCores on 4 chips" in note and "compiled length 768" in note


def test_the_graph_cost_fit_recovers_a_known_value_and_holds_what_the_rows_do_not_identify():
    from perfmodel.validation import neuron_fit as nf
    # rows whose device step is b and that run n operator instances: measured = b + n v_true
    n = np.array([400.0, 500.0, 450.0, 380.0])
    base = np.array([3e-3, 4e-3, 2e-3, 5e-3])
    t = pd.DataFrame({"stack": "s", "model": ["a", "b", "c", "d"], "base": base, "ops": n,
                      "measured": base + n * 8e-6})
    assert nf.fit(t)["s"] == pytest.approx(8e-6, abs=0.02e-6)
    assert nf.errors(t, {"s": 8e-6}).abs().max() < 1e-3
    # no row needs a graph cost: the smallest value is kept
    flat = t.assign(measured=base)
    assert nf.fit(flat)["s"] == 0.0
    # held out by model: each model predicted by the others' value (exact data: exact everywhere)
    assert nf.cross_validate(t).abs().max() < 1e-3


def test_the_trainium2_decode_rows_carry_the_stacks_graph_cost(trn2_rows):
    st = neuron_stacks.stack("nxd-inference")
    assert st.params["op_overhead"].status == "fitted" and "neuron_fit" in st.params["op_overhead"].fit
    bare = v.run_cases(catalog.catalog_root() / TRN2_ROWS, replaced=catalog.Replacements(
        stacks={"nxd-inference": st.with_overrides({"op_overhead": "0 us"})})).set_index("case_id")
    for cid in ("VNRN-TRN2-01", "VNRN-TRN2-05"):
        assert trn2_rows.at[cid, "predicted"] > bare.at[cid, "predicted"]


def test_the_readme_evidence_table_states_the_files_values():
    """README's Neuron evidence table: each row's value and status are the family file's (or the named stack's)."""
    from perfmodel.catalog.calibration import parameter_value
    from perfmodel.core import units

    readme = (catalog.catalog_root() / "README.md").read_text()
    block = readme.split("<!-- neuron-evidence:begin -->")[1].split("<!-- neuron-evidence:end -->")[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in block.strip().splitlines()[2:]]
    cal = calibration_for(catalog.load_system("trn2.48xlarge"))  # no Trainium2 override of these parameters
    assert len(rows) >= 12
    for name, scope, value, status, evidence, span in rows:
        if scope.startswith("stack "):
            p = neuron_stacks.stack(scope.removeprefix("stack ")).params[name]
        else:
            p = cal.params[name]
        assert parameter_value(value, p.kind, name) == pytest.approx(p.value), name
        assert status == p.status and evidence, name
        lo, hi = (parameter_value(x if p.kind != "time" else f"{x} us", p.kind, name)
                  for x in span.removesuffix(" us").split("-"))
        assert lo <= p.value <= hi, f"{name}: {value} outside its stated range {span}"
        if not scope.startswith("stack "):  # the family file states the same range (report and provenance show it)
            assert (p.low, p.high) == (pytest.approx(lo), pytest.approx(hi)), name
        assert units.parse(value, p.kind) >= 0


def test_a_range_that_does_not_hold_its_value_is_one_clear_error(tmp_path):
    from perfmodel.catalog.calibration import load_calibration_file

    text = (catalog.catalog_root() / "hardware_specs" / "calibration" / "neuron.toml").read_text()
    bad = tmp_path / "neuron.toml"
    bad.write_text(text.replace("range = [0.6, 0.95]", "range = [0.95, 0.99]", 1))
    with pytest.raises(CatalogError, match=r"params\.tensor_efficiency\.range: .* does not hold its value 0\.9"):
        load_calibration_file(bad)


def test_a_scenario_names_its_neuron_stack_as_its_engine():
    from perfmodel.catalog import workload_files
    from perfmodel.serving.steady_state import Grid, Mix, ServingOptions, serve

    trn2 = catalog.load_system("trn2.48xlarge")
    arch = workload_files.load_workload("llama-3.1-8b")
    grid, mix = Grid.of(tp=[2], concurrency=[8]), Mix(1024, 512)
    bare = serve(trn2, arch, grid, mix).iloc[0]
    nxd = serve(trn2, arch, grid, mix, ServingOptions(software=neuron_stacks.software("nxd-inference", trn2))).iloc[0]
    st = neuron_stacks.stack("nxd-inference")
    # its graphs' fixed cost per operator (7.62 vs the family's 2 us) and its decode over the whole length
    assert nxd["decode_step_s"] > bare["decode_step_s"]
    same_stack = catalog.Replacements(stacks={"nxd-inference": st.with_overrides(
        {"op_overhead": "2 us", "decode_spans_compiled_length": 0})})
    same = serve(trn2, arch, grid, mix,
                 ServingOptions(software=neuron_stacks.software("nxd-inference", trn2, same_stack))).iloc[0]
    assert same["decode_step_s"] == pytest.approx(bare["decode_step_s"])  # nothing else differs
    old = serve(trn2, arch, grid, mix,
                ServingOptions(software=neuron_stacks.software("transformers-neuronx-2.18", trn2))).iloc[0]
    assert old["prefill_step_s"] > bare["prefill_step_s"]  # no flash attention: scores through HBM
    with pytest.raises(ValueError, match="is a Neuron software stack; p5.48xlarge is not a Neuron system"):
        neuron_stacks.software("nxd-inference", catalog.load_system("p5.48xlarge"))  # resolved at the edge
    with pytest.raises(ValueError, match="unknown serving engine 'nxdi'.*Neuron software stacks: .*nxd-inference"):
        neuron_stacks.software("nxdi", trn2)
    with pytest.raises(ValueError, match="'nxd-inference': not resolved"):  # a name alone never reaches a step
        serve(trn2, arch, grid, mix, ServingOptions(engine="nxd-inference"))


def test_a_training_scenario_names_its_neuron_stack():
    from perfmodel import training
    from perfmodel.catalog import whatif, workload_files
    from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Scenario

    trn1 = catalog.load_system("trn1.32xlarge")
    bert = workload_files.load_workload("bert-large")
    sc = Scenario(phase=Phase.TRAIN, batch=4, seq_len=512, parallel=Parallelism(dp=16, microbatches=8),
                  optimizer=Optimizer.ADAM_BF16_SR)
    def stack(name, system=trn1):
        return neuron_stacks.for_system(name, "training", system)  # resolved at the edge, as the CLI does

    old = training.train(trn1, bert, sc, 1, stack=stack("torch-neuronx-2022"))
    new = training.train(trn1, bert, sc, 1, stack=stack("nxd-training"))
    # 2022's PyTorch/XLA attention stores the scores: slower and more memory than NxD Training's flash kernels
    assert not old["flash_attention"] and new["flash_attention"] and old["stack"] == "torch-neuronx-2022"
    assert old["step_time_s"] > new["step_time_s"]
    assert old.check.footprint.total_bytes > new.check.footprint.total_bytes
    # the stack's graph cost replaces the file's, a user's --set wins over the stack
    cal = calibration_for(trn1)
    user = whatif.apply_calibration(cal, [whatif.split_assignment("op_overhead=20 us")])
    _, under = training.with_stack(trn1, sc, user, stack("torch-neuronx-2022"))
    assert under["op_overhead"] == pytest.approx(20e-6)
    assert training.with_stack(trn1, sc, cal, stack("nxd-training"))[1].params["op_overhead"].origin == \
        "stack nxd-training"
    # one line each: a serving stack, a GPU system, and a training stack as a serving engine
    with pytest.raises(ValueError, match="'nxd-inference' is a Neuron serving stack, not a training one"):
        stack("nxd-inference")
    with pytest.raises(ValueError, match="p4d.24xlarge is not a Neuron system"):
        stack("nxd-training", catalog.load_system("p4d.24xlarge"))
    with pytest.raises(ValueError, match="'nxd-training' is a Neuron training stack"):
        neuron_stacks.software("nxd-training", trn1)
