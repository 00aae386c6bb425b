"""One power basis for every system (issue 18): the same sum of the same components for a GPU and a Trainium
system, each sourced or marked estimated; the modelled and the all-in (provisioned) basis; InferenceX's
published all-in kW per GPU against perfmodel's build-up."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog, cli
from perfmodel.catalog.calibration import calibration_for
from perfmodel.serving import power

STATUSES = {"published", "derived", "estimated", "projected", "assumed", "measured", "fitted"}


@pytest.mark.parametrize("gpu, trainium", [("p5.48xlarge", "trn2.48xlarge"), ("gb200-nvl72", "trn3-ultraserver")])
def test_the_power_sum_has_the_same_components_for_every_vendor(gpu, trainium):
    a = power.components(catalog.load_system(gpu))
    b = power.components(catalog.load_system(trainium))
    assert list(a.component) == list(b.component) == ["chip", "node share", "scale-up switch share", "facility (PUE)"]
    for frame in (a, b):
        assert set(frame.status) <= STATUSES and frame.source.str.strip().astype(bool).all()
        assert (frame.value >= 0).all()
    # Trainium's chip watts are not published: said so, not presented as published
    assert b.set_index("component").at["chip", "status"] in ("estimated", "derived", "projected")


def _all_in(system):
    return calibration_for(system).with_overrides({"power_basis_all_in": 1})


def test_the_all_in_basis_provisions_every_chip_at_its_tdp():
    s = catalog.load_system("p5.48xlarge")
    act = {e: np.array([0.0, 0.3, 1.0]) for e in ("tensor", "memory", "vector", "scalar", "gpsimd", "comm")}
    modelled, all_in = power.power_model(s), power.power_model(s, _all_in(s))
    assert modelled.basis == "modelled" and all_in.basis == "all-in"
    assert np.allclose(all_in.chip_w(act), s.chip.tdp_w)  # whatever the load
    assert np.all(modelled.chip_w(act) <= s.chip.tdp_w + 1e-9) and modelled.chip_w(act)[0] < s.chip.tdp_w
    # a deployment's spare chips are provisioned too: all-in IT power does not depend on how many are busy
    assert all_in.it_w(all_in.tdp_w, 2, 8, 1) == pytest.approx(all_in.it_w(all_in.tdp_w, 8, 8, 1))
    assert modelled.it_w(s.chip.tdp_w, 2, 8, 1) < modelled.it_w(s.chip.tdp_w, 8, 8, 1)


def test_inferencex_all_in_kw_per_gpu_is_reproduced_by_the_build_up():
    """Source: reference/inferencex_all_in_power.csv, SemiAnalysisAI/InferenceX-app's HW_REGISTRY (2026: "all-in kW
    per GPU, chip + per-GPU share of host/NICs", the constants behind its tokens per all-in MW today). perfmodel's
    provisioned build-up, PUE x (TDP + node share + switch share), must land within 25% of each. The superseded
    InferenceMAX v1 constants (GPU_SPECS, replaced by 'correct GPU power & spec data') sit 12-27% above the
    registry and are not the target; they are kept in the file for the record."""
    ref = pd.read_csv(catalog.catalog_root() / "reference" / "inferencex_all_in_power.csv")
    current = ref[ref.version == "registry 2026"]
    assert len(current) == 4
    for system_name, published in zip(current.system, current.all_in_kw_per_gpu):
        s = catalog.load_system(system_name)
        kw = power.all_in_w_per_chip(s, _all_in(s)) / 1e3
        assert abs(kw / published - 1) <= 0.25, (system_name, kw, published)
    # tokens per all-in MW = tokens/s per accelerator x 1000 / all-in kW per accelerator: the kW is the only
    # power term, so the per-MW figure follows the throughput within the same 25%


def test_the_build_up_stays_under_each_published_system_power():
    """A published (or estimated) maximum system power checks the node build-up: provisioned IT power at TDP is
    below the DGX / HGX maximum (which carries supply headroom) and near a rack estimate per tray."""
    for name in ("p4d.24xlarge", "p5.48xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge", "dgx-h100", "gb200-nvl72",
                 "gb300-nvl72"):
        c = power.components(catalog.load_system(name))
        built, published = c.node_it_at_tdp_w.iloc[0], c.published_node_power_w.iloc[0]
        assert 0.6 * published <= built <= 1.1 * published, (name, built, published)


def test_a_system_without_host_facts_is_one_clear_error():
    import dataclasses

    s = catalog.load_system("trn2.48xlarge")
    bare = dataclasses.replace(s, node=dataclasses.replace(s.node, vcpus=None))
    with pytest.raises(ValueError, match="node.vcpus not in its spec sheet; the power build-up needs"):
        power.power_model(bare)


def test_cli_power_basis_is_shown_with_every_power_figure(capsys):
    argv = ["serve", "--hardware", "trn2.48xlarge", "--workload", "llama-3-8b", "--input", "512", "--output", "256",
            "--tp", "2", "--concurrency", "32", "--format", "json"]
    docs = {}
    for basis in ("modelled", "all-in"):
        assert cli.main([*argv, "--power-basis", basis]) == 0
        docs[basis] = json.loads(capsys.readouterr().out)
    rows = {b: d["results"]["table"][0] for b, d in docs.items()}
    assert rows["modelled"]["power_basis"] == "modelled" and rows["all-in"]["power_basis"] == "all-in"
    assert rows["all-in"]["output_tokens_per_s_per_mw"] < rows["modelled"]["output_tokens_per_s_per_mw"]
    assert any("all-in basis" in c for c in docs["all-in"]["meta"]["caveats"])


def test_both_families_state_the_same_build_up_constants():
    """One basis: the node share's constants (and PUE, idle fraction) are the same for every vendor; what differs
    between systems is their own facts (vCPUs, host memory, network, chips, TDP)."""
    gpu = calibration_for(catalog.load_system("p5.48xlarge"))
    trn = calibration_for(catalog.load_system("trn3-ultraserver"))
    for name in power.BUILD_UP + ("pue", "power_idle_frac", "power_basis_all_in"):
        assert gpu[name] == pytest.approx(trn[name]), name
        assert gpu.params[name].source.strip() or gpu.params[name].reason.strip()
