"""Outputs written safely (issue 15): whole files or none, never over an input, an existing file only
with --force, one sweep per path at a time, an interrupted sweep marked partial, no live formulas."""

import io
import shutil
import threading
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel.catalog.files import catalog_root
from perfmodel.cli.parser import main
from perfmodel.core import safe_write
from perfmodel.report import export
from perfmodel.sweep import SweepSpec, run_sweep
from perfmodel.sweep import run as sweep_run

REPO = Path(__file__).resolve().parents[1]
SYSTEM, MODEL = "trn2-ultraserver", "llama-3-8b"
SPEC = SweepSpec(catalog.load_system(SYSTEM), catalog.load_workload(MODEL), "decode", grid={"batch": [1, 2, 4, 8], "context": [1024, 2048, 4096]})  # 12 rows
EVIL = '=HYPERLINK("http://evil.example","click")'
SWEEP_ARGS = ["sweep", "--hardware", SYSTEM, "--workload", MODEL, "--grid", "batch=1,2,4,8", "--grid",
              "context=1024,2048,4096", "--chunk", "4", "--no-progress"]


def _refused(capsys, argv) -> str:
    """The one stderr line of a command refused before it runs (exit status 2)."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def _interrupt_on(call: int):
    """A sweep `reduce` that raises KeyboardInterrupt on its `call`-th chunk (1-based), as Ctrl-C would."""
    seen = []

    def reduce(df):
        seen.append(len(df))
        if len(seen) == call:
            raise KeyboardInterrupt
        return df
    return reduce


# ---------------------------------------------------------------- whole files or none

def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "r.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), safe_write.atomic_path(target) as tmp:
        tmp.write_text("half of the new")
        raise RuntimeError("disk full")
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]
    book = tmp_path / "r.xlsx"
    export.write_xlsx({"a": pd.DataFrame({"x": [1]})}, book)
    before = book.read_bytes()
    with pytest.raises(AttributeError):  # the second sheet fails after the first is written
        export.write_xlsx({"a": pd.DataFrame({"x": [2]}), "b": None}, book)
    assert book.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.xlsx"]
    safe_write.write_text(target, "new")
    assert target.read_text() == "new" and len(list(tmp_path.iterdir())) == 2


def test_a_missing_folder_is_one_clear_line(tmp_path):
    with pytest.raises(safe_write.OutputError, match=r"cannot write: folder .*nowhere does not exist"):
        safe_write.write_text(tmp_path / "nowhere" / "r.json", "{}")


# ---------------------------------------------------------------- never over an input

def test_validate_and_calibrate_refuse_to_overwrite_their_measurements(tmp_path, capsys):
    cases = tmp_path / "m.csv"
    shutil.copy(REPO / "reference" / "published_measurements.csv", cases)
    before = cases.read_bytes()
    line = _refused(capsys, ["validate", "--cases", str(cases), "--out", str(cases), "--force"])
    assert line == (f"perfmodel validate: --out {cases} is the --cases file this command reads; choose another "
                    "output file")
    link = tmp_path / "link.csv"
    link.symlink_to(cases)
    assert "is the --cases file" in _refused(capsys, ["validate", "--cases", str(cases), "--out", str(link), "-f",
                                                      "csv", "--force"])
    assert "is the --cases file" in _refused(capsys, ["calibrate", "--family", "neuron", "--cases", str(cases),
                                                      "--out", str(cases), "--force", "-q"])
    assert "is the --calibration file" in _refused(capsys, ["--calibration", str(cases), "specs", "list", "--out",
                                                            str(cases), "--force"])
    assert cases.read_bytes() == before


def test_validate_refuses_to_overwrite_its_default_measurements(tmp_path, capsys, monkeypatch):
    from perfmodel.validation import harness

    cases = tmp_path / "published_measurements.csv"
    cases.write_text("case_id\n")
    monkeypatch.setattr(harness, "CSV", cases)  # the default --cases, without touching the repository's file
    assert main(["validate", "--out", str(cases), "--force"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"perfmodel validate: --out {cases} is the measurements file this command reads (the default "
                   "--cases); choose another output file") and cases.read_text() == "case_id\n"


def test_sweep_refuses_to_overwrite_a_catalogue_file(tmp_path, capsys, monkeypatch):
    root = tmp_path / "catalogue"  # a copy: a regression must not clobber the repository's files
    for folder in ("hardware_specs", "workloads"):
        shutil.copytree(catalog_root() / folder, root / folder)
    monkeypatch.setenv("PERFMODEL_CATALOG", str(root))  # --catalog sets it for the process: undone after the test
    workload = root / "workloads" / f"{MODEL}.toml"
    before = workload.read_bytes()
    assert main(["--catalog", str(root), *SWEEP_ARGS, "--format", "json", "--out", str(workload), "--force"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"perfmodel sweep: --out {workload} is a catalogue file a sweep reads (workloads/{MODEL}.toml); "
                   "choose another output file") and workload.read_bytes() == before


# ---------------------------------------------------------------- an existing file only with --force

def test_an_existing_out_is_replaced_only_with_force(tmp_path, capsys):
    out = tmp_path / "systems.csv"
    out.write_text("keep me")
    line = _refused(capsys, ["specs", "list", "--format", "csv", "--out", str(out)])
    assert line == f"perfmodel specs list: --out {out} exists; pass --force to replace it"
    assert out.read_text() == "keep me"
    assert main(["specs", "list", "--format", "csv", "--out", str(out), "--force"]) == 0
    assert "trn2-ultraserver" in out.read_text() and capsys.readouterr().out.strip() == f"wrote {out}"
    sweep_out = tmp_path / "r.parquet"
    sweep_out.write_text("keep me")
    assert _refused(capsys, [*SWEEP_ARGS, "--out", str(sweep_out)]) == (
        f"perfmodel sweep: --out {sweep_out} exists; pass --force to replace it")


def test_calibrate_refuses_to_replace_todays_default_file(tmp_path, capsys, monkeypatch):
    from perfmodel.validation import fit_result

    earlier = tmp_path / "neuron-today.toml"
    earlier.write_text("# an earlier fit\n")
    monkeypatch.setattr(fit_result, "default_path", lambda family, created: earlier)
    assert main(["calibrate", "--family", "neuron", "-q"]) == 2  # refused before any fitting
    assert capsys.readouterr().err.strip() == (f"perfmodel calibrate: {earlier} (the default --out) exists; pass "
                                               "--force to replace it, or --out another file")
    assert earlier.read_text() == "# an earlier fit\n"


# ---------------------------------------------------------------- one sweep per path; interrupted sweeps

def test_a_second_sweep_to_the_same_path_is_refused_while_the_first_runs(tmp_path):
    out = tmp_path / "r.parquet"
    started, go, result = threading.Event(), threading.Event(), {}

    def slow(df):
        started.set()
        assert go.wait(60)
        return df

    first = threading.Thread(target=lambda: result.setdefault("run", run_sweep(SPEC, out, chunk_size=4,
                                                                                progress=False, reduce=slow)))
    first.start()
    try:
        assert started.wait(60)
        with pytest.raises(safe_write.OutputError, match=r"another sweep is writing it \(r.partial.parquet is "
                                                         r"locked\)"):
            run_sweep(SPEC, out, chunk_size=4, progress=False)
        assert not out.exists()  # nothing at the target until the first is complete
    finally:
        go.set()
        first.join(60)
    assert result["run"].rows == 12 and len(pd.read_parquet(out)) == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.parquet"]
    run_sweep(SPEC, out, chunk_size=5, progress=False)  # a later sweep replaces it whole
    assert len(pd.read_parquet(out)) == 12 and sorted(p.name for p in tmp_path.iterdir()) == ["r.parquet"]


@pytest.mark.parametrize("name, read", [("r.parquet", pd.read_parquet), ("r.csv", pd.read_csv),
                                        ("parts", pd.read_parquet)])
def test_an_interrupted_sweep_leaves_its_rows_marked_partial(tmp_path, capsys, name, read):
    out = tmp_path / name
    with pytest.raises(KeyboardInterrupt):
        run_sweep(SPEC, out, chunk_size=4, progress=False, reduce=_interrupt_on(2))
    partial = safe_write.partial_path(out, folder=name == "parts")
    assert not out.exists() and len(read(partial)) == 4  # the first chunk's rows, readable
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"sweep interrupted after 4 of 12 configurations: the 4 rows done are in {partial} (partial); "
                   f"{out} is left as it was"]
    run = run_sweep(SPEC, out, chunk_size=4, progress=False)  # the next run reuses the stale partial file
    assert run.rows == 12 and len(read(out)) == 12 and not partial.exists()


def test_a_sweep_stopped_before_any_rows_leaves_nothing_and_an_old_file_untouched(tmp_path, capsys):
    out = tmp_path / "r.parquet"
    out.write_text("an earlier sweep")

    def broken(df):
        raise RuntimeError("bad reduce")

    with pytest.raises(RuntimeError):
        run_sweep(SPEC, out, chunk_size=4, progress=False, reduce=broken)
    assert out.read_text() == "an earlier sweep" and sorted(p.name for p in tmp_path.iterdir()) == ["r.parquet"]
    assert capsys.readouterr().err.strip() == (f"sweep stopped by an error after 0 of 12 configurations: no rows "
                                               f"written; {out} is left as it was")


def test_cli_sweep_interrupted_says_where_the_partial_rows_are(tmp_path, capsys, monkeypatch):
    evaluate = sweep_run.evaluate_chunk

    def ctrl_c_on_second(plan, g, start, stop):  # the second chunk, on whichever thread evaluates it
        if start == 4:
            raise KeyboardInterrupt
        return evaluate(plan, g, start, stop)

    monkeypatch.setattr(sweep_run, "evaluate_chunk", ctrl_c_on_second)
    out = tmp_path / "r.parquet"
    assert main([*SWEEP_ARGS, "--out", str(out)]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("sweep interrupted after 4 of 12 configurations") and "r.partial.parquet (partial)" in \
        err[0] and err[1] == "interrupted"
    assert not out.exists() and len(pd.read_parquet(tmp_path / "r.partial.parquet")) == 4


# ---------------------------------------------------------------- no live formulas in CSV and XLSX

FRAME = pd.DataFrame({"case_id": [EVIL, "+cmd", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", "\tx", "ok", "-5"],
                      "value": [-3.0, 1.0, 2.0, -0.5, 4.0, 5.0, 6.0]})


def test_csv_escapes_formula_text_and_leaves_numbers():
    text = export.to_csv(FRAME)
    back = pd.read_csv(io.StringIO(text), dtype={"case_id": str})
    assert list(back["case_id"]) == ["'" + EVIL, "'+cmd", "'-2+3+cmd|' /C calc'!A0", "'@SUM(A1)", "'\tx", "ok", "-5"]
    assert back["value"].tolist() == FRAME["value"].tolist() and text.splitlines()[1].endswith(",-3.0")  # numbers
    assert export.emit(FRAME, "csv") == export.to_csv(FRAME)
    cat = FRAME.assign(case_id=FRAME["case_id"].astype("category"))
    assert export.to_csv(cat) == export.to_csv(FRAME)
    assert FRAME["case_id"].iloc[0] == EVIL  # the caller's frame is not changed


def test_xlsx_cells_are_text_not_formulas(tmp_path):
    path = export.write_xlsx({"cases": FRAME}, tmp_path / "x.xlsx")
    for book in (openpyxl.load_workbook(path), openpyxl.load_workbook(io.BytesIO(
            export.xlsx_bytes({"cases": FRAME})))):
        ws = book["cases"]
        assert ws["A2"].data_type == "s" and ws["A2"].value == "'" + EVIL
        assert all(ws.cell(r, 1).data_type == "s" for r in range(2, 9))
        assert ws["B2"].data_type == "n" and ws["B2"].value == -3


def test_validate_exports_a_formula_case_id_as_text(tmp_path, capsys):
    ref = REPO / "reference" / "published_measurements.csv"
    cases = pd.read_csv(ref, dtype=str, keep_default_na=False)
    cases = cases[cases["case_id"].isin(["NCCL-001", "NCCL-002"])].copy()
    cases.loc[cases["case_id"] == "NCCL-001", "case_id"] = EVIL
    path = tmp_path / "evil.csv"
    cases.to_csv(path, index=False)
    book = tmp_path / "v.xlsx"
    assert main(["validate", "nccl", "--cases", str(path), "--show", "cases", "-f", "xlsx", "--out", str(book)]) == 0
    cells = [c for c in openpyxl.load_workbook(book)["cases"]["A"][1:]]
    assert any(c.value == "'" + EVIL for c in cells) and all(c.data_type == "s" for c in cells)
    capsys.readouterr()
    assert main(["validate", "nccl", "--cases", str(path), "--show", "cases", "-f", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert rows and not any(Path(r).name.startswith("=") or r.startswith('"=') for r in rows)


def _formula_cells(book: Path) -> list[str]:
    wb = openpyxl.load_workbook(book)
    return [f"{ws.title}!{c.coordinate}={c.value!r}" for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if c.data_type == "f" or (isinstance(c.value, str) and c.value[:1] in "=@+" and c.value != "+")]


def test_hostile_names_reach_no_workbook_as_formulas(tmp_path, capsys):
    """Names a user writes (scenario names, a demand's name, case ids) go through every workbook's sheets, the
    'columns' key and the meta sheet as text, never as live formulas."""
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["roofline", "--hardware", SYSTEM, "--workload", MODEL, "--save-scenario", str(a), "--scenario-name",
                 EVIL, "-f", "json"]) == 0
    assert main(["roofline", "--hardware", "p5.48xlarge", "--workload", MODEL, "--save-scenario", str(b),
                 "--scenario-name", "@SUM(1)+cmd", "-f", "json"]) == 0
    demand = tmp_path / "d.toml"
    demand.write_text(f'[demand]\nname = \'{EVIL}\'\nworkload = "{MODEL}"\nrequests_per_s = 5.0\n'
                      'input_tokens = 512\noutput_tokens = 128\nttft_s = 2.0\ntpot_s = 0.05\n')
    runs = {"compare": ["compare", str(a), str(b)], "roofline": ["roofline", "--scenario", str(a)],
            "memory": ["memory", "--scenario", str(b)],
            "plan": ["plan", "--demand", str(demand), "--systems", "p5.48xlarge", "--no-progress"]}
    for name, argv in runs.items():
        book = tmp_path / f"{name}.xlsx"
        assert main([*argv, "-f", "xlsx", "--out", str(book)]) == 0, capsys.readouterr().err
        assert not _formula_cells(book), (name, _formula_cells(book)[:3])
    capsys.readouterr()
