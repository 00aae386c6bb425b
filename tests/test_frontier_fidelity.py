"""Frontier fidelity (validate --show frontier), the measured envelope and the engine a search assumes."""

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel.catalog import serving_engines
from perfmodel.serving import envelope, search
from perfmodel.validation import frontier
from perfmodel.validation.sources import inferencex_engine

DEV = "reference/inferencex_serving_dev.csv"


@pytest.fixture(scope="module")
def rows():
    return frontier.rows_of(DEV)


def test_a_measured_point_is_a_closed_loop_of_c_clients_per_gpu(rows):
    """y = C O / (TTFT + (O - 1) TPOT) / GPUs, x = 1 / TPOT, with O the protocol's mean output length."""
    r = rows[(rows["mode"].eq("agg")) & (rows["backend"].eq("vllm"))].iloc[[0]]
    pts = frontier.measured_points(r)
    c = float(r["silicon_data_source"].str.extract(r"silicon_concurrency=(\d+)")[0].iloc[0])
    gpus = float(r["tp_size"].iloc[0]) * max(float(r["attention_dp_size"].iloc[0] or 1), 1) \
        * max(float(r["pp_size"].iloc[0] or 1), 1)
    o = inferencex_engine.mean_mix(int(r["isl"].iloc[0]), int(r["osl"].iloc[0])).output_tokens
    ttft, tpot = float(r["silicon_ttft_ms"].iloc[0]) / 1e3, float(r["silicon_tpot_ms"].iloc[0]) / 1e3
    assert pts["measured_tokens_per_s_per_gpu"].iloc[0] == pytest.approx(c * o / (ttft + (o - 1) * tpot) / gpus,
                                                                         rel=1e-12)
    assert pts["tokens_per_s_per_user"].iloc[0] == pytest.approx(1 / tpot, rel=1e-12)


def test_the_measured_frontier_is_the_undominated_points_of_each_group(rows):
    pts = frontier.measured_points(rows)
    for _, g in pts[pts["on_frontier"]].groupby(frontier.KEYS):
        x, y = g["tokens_per_s_per_user"].to_numpy(), g["measured_tokens_per_s_per_gpu"].to_numpy()
        assert not any(((x >= xi) & (y >= yi) & ((x > xi) | (y > yi))).any() for xi, yi in zip(x, y))
    assert pts["on_frontier"].sum() < len(pts)


def test_disaggregated_rows_without_worker_counts_join_no_frontier(rows):
    pts = frontier.measured_points(rows)
    sized = pts["mode"].eq("disagg") & pts["gpus"].isna()
    assert sized.any() and not pts.loc[sized, "on_frontier"].any()


def test_the_shipped_envelopes_are_the_coverage_of_the_measured_rows(rows):
    cov = frontier.coverage(rows)
    for engine in ("vllm", "trtllm", "sglang"):
        env = serving_engines.envelope(engine)
        assert env["max_running"] == cov.loc[engine, "max_running"]
        assert env["max_attention_dp"] == cov.loc[engine, "max_attention_dp"]
        assert env.params["max_running"].status == "measured"
    per_chip = frontier.coverage(rows, by_chip=True)
    for (engine, chip), c in per_chip.iterrows():
        env = serving_engines.envelope(engine, chip)
        assert (env["max_running"], env["max_attention_dp"]) == (c["max_running"], c["max_attention_dp"])
        assert f"({c['rows']} rows" in env.params["max_running"].source


def test_envelope_labels_points_outside_as_extrapolated():
    env = serving_engines.envelope("vllm")
    df = pd.DataFrame({"concurrency": [1, 512, 513, 64], "da": [1, 1, 1, 2]})
    assert envelope.label(df, env)["envelope"].tolist() == ["measured", "measured", "extrapolated", "extrapolated"]
    assert (envelope.label(df, None)["envelope"] == "extrapolated").all()  # no engine: the roofline


def test_each_family_gets_its_engine_and_none_is_the_roofline():
    gpu, trn = catalog.load_system("p5.48xlarge"), catalog.load_system("trn2.48xlarge")
    assert serving_engines.resolve(None, gpu)[0] == "vllm"
    assert serving_engines.resolve(None, trn)[0] == "nxd-inference"
    assert serving_engines.resolve("none", gpu) == ("", None)
    assert serving_engines.resolve("trtllm", gpu)[1]["max_attention_dp"] == 1  # on H100 it ran tensor-parallel
    assert serving_engines.resolve("trtllm", catalog.load_system("p6-b200.48xlarge"))[1]["max_attention_dp"] == 64
    assert "vLLM" in serving_engines.default_reason()


def test_native_types_follow_what_the_tensor_engine_runs():
    names = {s: search.native_dtype(catalog.load_system(s)).value
             for s in ("trn3-ultraserver", "trn2.48xlarge", "p5.48xlarge", "p6-b200.48xlarge", "p4d.24xlarge")}
    assert names == {"trn3-ultraserver": "mxfp8", "trn2.48xlarge": "fp8", "p5.48xlarge": "fp8",
                     "p6-b200.48xlarge": "mxfp8", "p4d.24xlarge": "bf16"}


def test_the_roofline_frontier_bounds_the_engine_frontier_at_every_measured_point(rows):
    """The engine adds host time and allots less memory, and the envelope removes plans: its frontier can never
    beat the accelerator alone over every plan."""
    one = rows[rows["system"].eq("h100_sxm") & rows["model_path"].str.contains("Llama-3.1-70B")
               & rows["isl"].eq("1024") & rows["osl"].eq("1024")]
    front = frontier.points(one)
    assert len(front) >= 3 and front["engine"].eq("vllm").all()
    ok = front[["engine_tokens_per_s_per_gpu", "roofline_tokens_per_s_per_gpu"]].notna().all(axis=1)
    assert ok.any()
    assert (front.loc[ok, "engine_tokens_per_s_per_gpu"] <= front.loc[ok, "roofline_tokens_per_s_per_gpu"]).all()
    s = frontier.summary(frontier.groups(front))
    assert set(s["frontier"]) == {"engine", "roofline", "configs"} and np.isfinite(s["gmean_ratio"]).all()
    # the configurations measured are plans the search also tries: the searched frontier is at least as high
    both = front[["engine_tokens_per_s_per_gpu", "configs_tokens_per_s_per_gpu"]].notna().all(axis=1)
    assert both.any() and (front.loc[both, "engine_tokens_per_s_per_gpu"]
                           >= 0.99 * front.loc[both, "configs_tokens_per_s_per_gpu"]).all()


def test_the_readme_frontier_table_is_what_the_model_gives_today(rows):
    """README's frontier block is `perfmodel validate --cases reference/inferencex_serving_dev.csv --show frontier
    --format md` (summary and groups), re-run: a change that moves a figure must move the README with it."""
    from pathlib import Path

    from perfmodel.cli.validate import TITLES
    from perfmodel.report import export

    sheets = frontier.sheets(rows)
    text = "\n\n".join(export.emit(sheets[k], "md", TITLES[k]) for k in ("frontier_summary", "frontier_groups"))
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split("<!-- frontier:begin -->")[1].split("<!-- frontier:end -->")[0].strip()
    assert block == text.strip()
    s = sheets["frontier_summary"].set_index("frontier")
    # the engine frontier (engine profile, measured envelope) is nearer the measured one than the roofline
    assert s.loc["engine", "median_abs_ratio_minus_1"] < s.loc["roofline", "median_abs_ratio_minus_1"]
    assert s.loc["engine", "gmean_ratio"] < s.loc["roofline", "gmean_ratio"]
