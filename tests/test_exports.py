"""Spreadsheet and report exports: XLSX sheets and headers, config-encoded names, HTML/Markdown charts."""

import json

import openpyxl
import pandas as pd
import pytest

from perfmodel import cli, report
from perfmodel.catalog import whatif as wi
from perfmodel.report import export

SCENARIO = ["--hardware", "trn2-ultraserver", "--workload", "llama-3-70b", "--phase", "decode", "--batch", "32",
            "--tp", "4"]


def _legend(path) -> pd.DataFrame:
    """The workbook's 'columns' sheet: each sheet's header, its field and the SI factor of its cells."""
    return pd.read_excel(path, sheet_name="columns", engine="openpyxl")


def _sheets(path) -> dict[str, list[str]]:
    """Each sheet's columns by field name (headers with units read back through the legend)."""
    wb = openpyxl.load_workbook(path, read_only=True)
    heads = {ws.title: [c.value for c in next(ws.iter_rows(max_row=1))] for ws in wb.worksheets}
    wb.close()
    key = _legend(path)
    field = {(a, b): c for a, b, c in zip(key["sheet"], key["column"], key["field"])}
    return {name: [field.get((name, h), h) for h in cols] for name, cols in heads.items()}


def _frame(path, sheet) -> pd.DataFrame:
    """A sheet back in field names and SI values (header x legend)."""
    df = pd.read_excel(path, sheet_name=sheet, engine="openpyxl")
    key = _legend(path)
    key = key[key["sheet"] == sheet].set_index("column")
    for col in df.columns:
        if col in key.index and key.at[col, "si_factor"] != 1:
            df[col] = df[col] * key.at[col, "si_factor"]
    return df.rename(columns=key["field"].to_dict())


def test_a_workbook_reads_as_people_expect(tmp_path):
    """Numbers stored as numbers with number formats, units in the headers of quantities, every column
    sized, every provenance row with its unit, and a legend from each header to its field and SI factor."""
    out = tmp_path / "r.xlsx"
    assert cli.main(["roofline", *SCENARIO, "--format", "xlsx", "--out", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    res = wb["results"]
    heads = [c.value for c in res[1]]
    assert "Step time (ms)" in heads and "Memory total (GiB)" in heads and "step_time_s" not in heads
    row = {h: c for h, c in zip(heads, res[2])}
    assert row["Step time (ms)"].data_type == "n" and row["Step time (ms)"].number_format != "General"
    assert row["batch"].value == 32 and row["batch"].number_format == "#,##0"
    assert all(res.column_dimensions[c.column_letter].width >= len(str(c.value)) for c in res[1])
    assert res[1][0].font.bold and res.freeze_panes == "A2"
    inputs = {r[1].value: r[2] for r in wb["inputs"].iter_rows(min_row=2)}
    assert inputs["batch"].data_type == "n" and inputs["batch"].value == 32  # inputs are numbers, not text
    prov = _frame(out, "provenance")
    assert prov["si_unit"].notna().all() and (prov["si_unit"].astype(str).str.strip() != "").all()
    assert {"count", "ratio"} <= set(prov["si_unit"]) and "B/s" in set(prov["si_unit"])
    ms = _frame(out, "results")["step_time_s"].iloc[0]
    assert ms == pytest.approx(row["Step time (ms)"].value * 1e-3)  # the legend's factor gives SI back


def test_roofline_xlsx_default_name_and_sheets(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["roofline", *SCENARIO, "--set", "hbm_bandwidth=+50%", "--format", "xlsx"]) == 0
    files = list(tmp_path.glob("*.xlsx"))
    assert [f.name for f in files] == ["roofline_trn2-ultraserver_llama-3-70b_decode_b32_c4096_tp4_bf16_"
                                       "hbm_bandwidth_50.xlsx"]
    assert "wrote" in capsys.readouterr().out
    sheets = _sheets(files[0])
    assert list(sheets)[:4] == ["inputs", "results", "per_operator", "provenance"]
    assert sheets["inputs"] == ["section", "name", "value"]
    assert {"system", "workload", "phase", "batch", "tp", "compute_dtype", "whatif", "step_time_s", "mfu_frac",
            "tokens_per_s_per_chip", "memory_total_bytes", "tokens_per_mw", "basis_performance"} <= set(
        sheets["results"])
    ops = _frame(files[0], "per_operator")
    assert {"system", "batch", "tp", "op", "flop", "time_s", "bound"} <= set(ops.columns)
    assert (ops["batch"] == 32).all() and ops["op"].str.startswith(("attn.", "mlp.", "embed.", "head.")).all()
    assert sheets["provenance"] == ["system", "group", "field", "value_as_written", "si_value", "si_unit", "status",
                                    "uncertain", "source", "note"]
    prov = _frame(files[0], "provenance")
    hbm = prov[prov["field"] == "chip.memory.hbm_bandwidth"].iloc[0]
    assert hbm["status"] == "assumed" and "what-if" in hbm["value_as_written"] and hbm["source"] == "S7"
    assert "calibration" in set(prov["group"]) and "hbm_efficiency" in set(prov["field"])
    inputs = _frame(files[0], "inputs")
    assert ("what-if (spec)", "hbm_bandwidth") in set(zip(inputs["section"], inputs["name"]))


def test_memory_xlsx_has_components(tmp_path, capsys):
    out = tmp_path / "m.xlsx"
    assert cli.main(["memory", *SCENARIO, "--format", "xlsx", "--out", str(out)]) == 0
    sheets = _sheets(out)
    assert {"inputs", "results", "components", "per_operator", "provenance"} <= set(sheets)
    comp = _frame(out, "components")
    assert {"system", "tp", "batch", "component", "footprint_bytes"} <= set(comp.columns)
    res = _frame(out, "results")
    assert res["memory_total_bytes"].iloc[0] == pytest.approx(comp["footprint_bytes"].sum())
    assert res["min_chips"].iloc[0] >= 1


def test_report_xlsx_rows_carry_inputs(tmp_path, capsys):
    out = tmp_path / "report.xlsx"
    assert cli.main(["report", "--cases", "gpt-oss-120b-decode", "--systems", "trn2-ultraserver", "p5.48xlarge",
                     "--no-claims", "--no-progress", "--format", "xlsx", "--out", str(out)]) == 0
    sheets = _sheets(out)
    assert list(sheets)[:4] == ["inputs", "results", "per_operator", "provenance"]
    res = _frame(out, "results")
    assert list(res["system"]) == ["trn2-ultraserver", "p5.48xlarge"]
    assert {"case", "batch", "context", "tp", "compute_dtype", "expert_weights_dtype", "step_time_s"} <= set(
        res.columns)
    # gpt-oss ships MXFP4 experts; neither Trn2 nor H100 consumes MXFP4 natively, so they are stored as FP8
    assert set(res["expert_weights_dtype"]) == {"fp8"}
    ops = _frame(out, "per_operator")
    assert set(ops["system"]) == {"trn2-ultraserver", "p5.48xlarge"} and "case" in ops.columns
    prov = _frame(out, "provenance")
    assert set(prov["system"]) == {"trn2-ultraserver", "p5.48xlarge"}
    assert {"published", "estimated"} <= set(prov["status"])


def test_emit_sheets_json_and_csv():
    sheets = {"a": pd.DataFrame({"x_s": [1.0]}), "b": pd.DataFrame({"y": ["z"]})}
    data = json.loads(export.emit_sheets(sheets, "json", "a", meta={"k": 1}))
    assert data["meta"] == {"k": 1} and data["results"] == {"a": [{"x_s": 1.0}], "b": [{"y": "z"}]}
    assert data["provenance"] == [] and set(data) == {"perfmodel", "command", "inputs", "meta", "results", "provenance"}
    assert export.emit_sheets(sheets, "csv", "b").strip().splitlines() == ["y", "z"]
    assert export.xlsx_bytes(sheets)[:2] == b"PK"  # a zip (xlsx) archive


@pytest.fixture(scope="module")
def small_report():
    return report.build_report(report.CASES[2:3], ["trn2-ultraserver", "trn4-projected"], with_claims=False)


def test_report_html_inlines_charts(tmp_path, small_report):
    path = report.write_report(small_report, tmp_path / "r.html")
    html = path.read_text()
    assert html.count("<svg") == sum(len(s.charts) for s in small_report.sections) >= 3
    assert "Llama-3 70B decode" in html and "†" in html  # Trn4 figures rest on projected inputs
    assert "<script" not in html  # self-contained, works offline


def test_report_markdown_writes_chart_images(tmp_path, small_report):
    path = report.write_report(small_report, tmp_path / "r.md")
    text = path.read_text()
    pngs = sorted((tmp_path / "r_charts").glob("*.png"))
    assert len(pngs) == sum(len(s.charts) for s in small_report.sections)
    assert all(f"](r_charts/{p.name})" in text for p in pngs)
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match=".md or .html"):
        report.write_report(small_report, tmp_path / "r.txt")


def test_python_api_frames_are_tidy():
    """The DataFrames the Python API documents (docs/PYTHON_API.md)."""
    ld = report.load("trn3-ultraserver", "gpt-oss-120b")
    run = report.run_scenario(ld, wi.ScenarioOptions(phase="decode", batch=32, context=8192, dtype="mxfp8"))
    summary = run.summary()
    assert len(summary) == 1 and summary["system"].iloc[0] == "trn3-ultraserver"
    assert all(c == c.lower() and " " not in c for c in summary.columns)  # snake_case
    eng = report.engine_frame(run.result.ops)
    assert list(eng.columns) == ["block", "engine", "busy_s"] and (eng["busy_s"] > 0).all()
    roofs, ridges = report.roofline_frames(ld.system)
    mx = ridges.set_index("dtype").loc["mxfp8"]
    assert mx["ridge_intensity_flop_per_byte"] == pytest.approx(mx["peak_flop_per_s"] / mx["hbm_bandwidth_bytes_per_s"])
    assert (roofs["attainable_flop_per_s"] <= roofs.groupby("dtype")["attainable_flop_per_s"].transform("max")).all()
