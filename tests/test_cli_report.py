"""CLI front doors: report, claims, roofline, memory, knobs: output columns, errors, --help."""

import argparse
import io
import json

import pandas as pd
import pytest

from perfmodel import claims, cli
from perfmodel.claims import specs

SPEC_CLAIMS = [specs.d1_trn1, specs.d2_trn1_vs_p4d, specs.d3_inf2,
               specs.d4_trn3_vs_trn2_ultraserver, specs.d5_trn3_vs_trn2_chip,
               specs.d6_trn2_ultraserver, specs.d7_trn4_vs_trn3]
COMMANDS = ("report", "claims", "roofline", "memory", "knobs")
SMALL_REPORT = ["report", "--cases", "llama-3-70b-decode", "--systems", "trn2-ultraserver", "trn3-ultraserver",
                "--no-claims", "--no-progress"]


@pytest.fixture
def spec_claims_only(monkeypatch):
    """The spec-sheet claims only (the serving claims sweep every plan: slow for CLI tests)."""
    monkeypatch.setattr(claims, "all_claims",
                        lambda prefix="": [r for fn in SPEC_CLAIMS for r in fn() if r.id.startswith(prefix)])


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_claims_json_is_computed_not_transcribed(capsys, spec_claims_only):
    rc, out, _ = run(capsys, "claims", "--format", "json")
    assert rc == 0
    data = json.loads(out)
    rows = data["results"]["table"]
    expected = [r.as_dict() for fn in SPEC_CLAIMS for r in fn()]
    assert [r["id"] for r in rows] == [e["id"] for e in expected]
    for r, e in zip(rows, expected):
        assert set(r) >= {"id", "claim", "quoted", "modelled", "unit", "error_frac", "tolerance_frac", "within", "note"}
        assert r["modelled"] == pytest.approx(e["modelled"]) and r["within"] == e["within"]
    assert data["meta"]["within"] == sum(e["within"] for e in expected)
    misses = [r for r in rows if not r["within"]]
    assert misses and all(r["note"] for r in misses)  # every miss carries its reason


def test_claims_table_filters(capsys, spec_claims_only):
    rc, out, _ = run(capsys, "claims", "--id", "D4")
    assert rc == 0 and "D4.compute" in out and "D1.chips" not in out
    for col in ("quoted", "modelled", "within", "note (reason for a miss)"):
        assert col in out
    rc, out, _ = run(capsys, "claims", "--misses", "--format", "csv")
    df = pd.read_csv(io.StringIO(out))
    assert len(df) and not df["within"].any()
    rc, _, err = run(capsys, "claims", "--id", "Z9")
    assert rc == 1 and err.strip().startswith("perfmodel: error: no claims match")


def test_roofline_table_and_csv(capsys):
    base = ["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-70b", "--phase", "decode",
            "--batch", "16", "--tp", "4"]
    rc, out, _ = run(capsys, *base)
    assert rc == 0 and "attn.qkv" in out and "Time by bounding engine" in out
    rc, out, _ = run(capsys, *base, "--format", "md")
    for text in ("per operator", "## Summary", "Time by bounding engine", "attn.qkv", "mlp.down", "TPOT (ms)",
                 "Sustained / peak (%)", "Bound by", "| memory |"):
        assert text in out
    rc, out, _ = run(capsys, *base, "--format", "csv")
    df = pd.read_csv(io.StringIO(out))
    inputs = ["system", "workload", "phase", "batch", "tp", "compute_dtype"]
    outputs = ["op", "count", "flop", "hbm_read_bytes", "intensity_flop_per_byte", "tensor_s", "memory_s", "time_s",
               "bound"]
    cols = list(df.columns)
    assert set(inputs) <= set(cols) and set(outputs) <= set(cols)
    assert max(cols.index(c) for c in inputs) < cols.index("op")  # each row: inputs first, then outputs
    assert (df["system"] == "trn2-ultraserver").all() and (df["tp"] == 4).all()


def test_roofline_set_changes_the_numbers(capsys):
    base = ["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--phase", "decode",
            "--batch", "8", "--format", "json"]
    _, out, _ = run(capsys, *base)
    _, out2, _ = run(capsys, *base, "--set", "hbm_bandwidth=x2", "--set", "hbm_efficiency=0.9")
    a, b = json.loads(out), json.loads(out2)
    assert set(a) == {"perfmodel", "command", "inputs", "meta", "results", "provenance"}
    assert set(a["results"]) == {"inputs", "results", "per_operator"} and a["provenance"] and a["command"] == "roofline"
    assert b["meta"]["whatif"] == ["spec.hbm_bandwidth=x2", "cal.hbm_efficiency=0.9"]
    assert b["results"]["results"][0]["step_time_s"] < 0.6 * a["results"]["results"][0]["step_time_s"]
    assert b["results"]["results"][0]["whatif"] == "hbm_bandwidthx2_hbm_efficiency0.9"


def test_memory_table_and_min_fit(capsys):
    rc, out, _ = run(capsys, "memory", "--hardware", "trn1.32xlarge", "--workload", "gpt3-175b", "--phase", "train",
                     "--seq", "2048", "--zero", "1", "--format", "md")
    assert rc == 0
    for text in ("weights", "optimizer_state", "activations", "Fit and minimum chips", "Min chips", "NO"):
        assert text in out
    rc, out, _ = run(capsys, "memory", "--hardware", "trn3-ultraserver", "--workload", "deepseek-v3", "--phase",
                     "decode", "--tp", "8", "--ep", "8", "--batch", "64", "--dtype", "mxfp8", "--format", "csv")
    df = pd.read_csv(io.StringIO(out))
    assert {"system", "tp", "ep", "component", "footprint_bytes"} <= set(df.columns)
    assert set(df["component"]) >= {"weights", "kv_cache", "reserved"}
    assert df.loc[df["component"] == "kv_cache", "footprint_bytes"].iloc[0] > 0


def test_report_csv_columns_and_markers(capsys):
    rc, out, _ = run(capsys, *SMALL_REPORT, "--format", "csv")
    assert rc == 0
    df = pd.read_csv(io.StringIO(out))
    assert list(df["system"]) == ["trn2-ultraserver", "trn3-ultraserver"]
    for col in ("case", "plan", "batch", "context", "compute_dtype", "step_time_s", "tokens_per_s_per_chip",
                "peak_flop_per_s", "achieved_flop_per_s", "mfu_frac", "bound", "memory_total_bytes", "min_chips",
                "tokens_per_mw", "usd_per_million_tokens", "basis_performance", "basis_tokens_per_mw",
                "basis_usd_per_mtok", "uncertain_inputs"):
        assert col in df.columns, col
    assert (df["achieved_flop_per_s"] < df["peak_flop_per_s"]).all()
    # Trainium power is not published: every tokens/MW figure rests on an estimate
    assert set(df["basis_tokens_per_mw"]) <= {"estimated", "projected", "assumed"}
    rc, out, _ = run(capsys, *SMALL_REPORT)
    assert "Llama-3 70B decode" in out and "TPOT (ms)" in out and "rests on an estimated input" in out
    assert "*" in out  # the tokens/MW figures are marked


def test_report_progress_and_default_cases(tmp_path, monkeypatch):
    from perfmodel import report

    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))  # computed here, not read from another test's run
    calls = []
    rep = report.build_report(report.CASES[:1], ["trn2-ultraserver", "trn3-ultraserver"], with_claims=False,
                              progress=lambda i, n, label: calls.append((i, n, label)))
    assert [c[0] for c in calls] == [1, 2] and calls[-1][1] == 2
    assert [s.title for s in rep.sections][:3] == ["Verdict", "Systems compared", report.CASES[0].title]
    assert {c.workload for c in report.CASES} == {"gpt-oss-120b", "llama-3-70b", "deepseek-v3", "gpt3-175b"}
    assert {"trn1.32xlarge", "trn2-ultraserver", "trn3-ultraserver", "trn4-projected"} <= set(report.SYSTEMS)


def test_errors_are_one_line(capsys):
    rc, out, err = run(capsys, "roofline", "--hardware", "trn9", "--workload", "llama-3-70b")
    assert rc == 1 and err.startswith("perfmodel: error: no system 'trn9'") and "Traceback" not in err
    rc, _, err = run(capsys, "roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-70b",
                     "--set", "hbm_bandwith=x2")
    assert rc == 1 and "unknown what-if name 'hbm_bandwith'" in err and len(err.strip().splitlines()) == 1
    rc, _, err = run(capsys, "roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-70b",
                     "--tp", "2", "--ep", "4")
    assert rc == 1 and "ep" in err and "Traceback" not in err
    rc, _, err = run(capsys, "--debug", "roofline", "--hardware", "trn9", "--workload", "llama-3-70b")
    assert rc == 1 and "Traceback" in err


def test_unknown_dtype_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit):
        cli.main(["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-70b", "--dtype", "fp7"])
    assert "unknown data type" in capsys.readouterr().err


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("name", COMMANDS)
def test_help_is_complete(name, capsys):
    p = _subparser(name)
    assert p.description, f"{name} has no description"
    for action in p._actions:
        if action.dest == "help":
            continue
        assert action.help and len(action.help) > 10, f"{name} {action.option_strings}: no help"
    with pytest.raises(SystemExit):
        cli.main([name, "--help"])
    out = capsys.readouterr().out
    assert "--format" in out or name == "knobs"


def test_knobs_lists_every_family(capsys):
    rc, out, _ = run(capsys, "knobs", "--hardware", "trn3-ultraserver", "--workload", "llama-3-70b", "-f", "csv")
    df = pd.read_csv(io.StringIO(out))
    assert rc == 0 and set(df["family"]) == {"spec", "cal", "workload"}
    assert {"hbm_bandwidth", "hbm_efficiency", "num_hidden_layers"} <= set(df["name"])
