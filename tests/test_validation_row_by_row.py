"""One bad row never hides the rest: a row that cannot be read or predicted is listed with its reason and every
other row is predicted (exit 0); --strict makes any such row an error naming the file, row, case and field."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from perfmodel import cli
from perfmodel.validation import harness

ROOT = Path(__file__).resolve().parents[1]
GOOD = pd.read_csv(ROOT / "reference" / "published_measurements.csv", dtype=str, keep_default_na=False)


def _file(tmp_path: Path, bad: dict) -> Path:
    rows = GOOD[GOOD["phase"].eq("decode")].head(6).copy()
    broken = rows.iloc[[0]].assign(case_id="BROKEN-1", **bad)
    path = tmp_path / "mixed.csv"
    pd.concat([rows, broken]).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("bad, field, words", [
    ({"batch": "Server scenario, 12.5 qps target"}, "batch", "'12.5' is not a whole number between 1 and"),
    ({"value": "n/a"}, "value", "'n/a' is not a positive number"),
    ({"parallelism": "TP 2.5"}, "parallelism", "TP degree '2.5' is not a whole number"),
])
def test_a_malformed_row_is_listed_and_the_good_ones_are_predicted(tmp_path, bad, field, words):
    path = _file(tmp_path, bad)
    df = harness.run_cases(path).set_index("case_id")
    broken = df.loc["BROKEN-1"]
    assert pd.isna(broken["predicted"]) and f"field {field!r}" in broken["reason"] and words in broken["reason"]
    good = df.drop(index="BROKEN-1")
    assert len(good) == 6 and good["predicted"].notna().all()
    with pytest.raises(harness.CasesError, match=rf"mixed.csv: row 8 \(case 'BROKEN-1'\) field '{field}': "):
        harness.run_cases(path, strict=True)


def test_the_cli_lists_the_row_and_exits_0_and_strict_refuses(tmp_path, capsys):
    path = _file(tmp_path, {"batch": "Server scenario, 12.5 qps target"})
    assert cli.main(["validate", "--cases", str(path), "--show", "not-expressed", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "BROKEN-1" in out and "field 'batch'" in out
    assert cli.main(["validate", "--cases", str(path), "--strict"]) != 0
    err = capsys.readouterr().err
    assert "row 8 (case 'BROKEN-1') field 'batch'" in err and "Traceback" not in err


def test_a_row_its_family_cannot_model_is_listed_with_why(tmp_path, monkeypatch):
    """A family that raises on one row, and says nothing about another: both listed, the rest predicted."""
    def predict(rows: pd.DataFrame, replaced) -> pd.DataFrame:
        if rows["case_id"].eq("BOOM").any():
            raise ValueError("no such thing as a boom")
        return harness.frame([harness.row(r["case_id"], r["hardware"], r["metric"], float(r["value_num"]),
                                          float("nan") if r["case_id"] == "SILENT" else 1.0, r["unit"])
                              for _, r in rows.iterrows()])

    fam = harness.Family("toy", lambda df: df["phase"].eq("toy"), predict, "a test family", {})
    monkeypatch.setitem(harness.VALIDATIONS, "toy", fam)
    rows = GOOD.head(3).assign(phase="toy")
    rows["case_id"] = ["OK", "BOOM", "SILENT"]
    path = tmp_path / "toy.csv"
    rows.to_csv(path, index=False)
    df = harness.run_cases(path).set_index("case_id")
    assert df.at["OK", "predicted"] == 1.0
    assert "the toy family cannot model it: no such thing as a boom" in df.at["BOOM", "reason"]
    assert "the toy family could not predict it" in df.at["SILENT", "reason"]
    with pytest.raises(harness.CasesError, match=r"row 3 \(case 'BOOM'\): the toy family cannot model it"):
        harness.run_cases(path, strict=True)
