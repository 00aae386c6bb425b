"""perfmodel calibrate: a fit recovers a known parameter, files round-trip and apply only when asked."""

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from perfmodel import catalog, cli, validation
from perfmodel.catalog import calibration
from perfmodel.catalog.replacements import Replacements
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.validation import calibrate, fit_problem

TRUE_TENSOR = 0.6  # the family file says 0.9
FAMILY = "neuron-latency"


def _cases(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """Compute-bound TTFT cases of four models on trn1 / inf2 whose 'measured' values are the model's own
    predictions with tensor_efficiency = 0.6."""
    with open(validation.CSV, newline="") as fh:
        ref = list(csv.DictReader(fh))
    picked, seen = [], {}
    for r in ref:
        if r["metric"] == "TTFT P50" and int(r["input_len"] or 0) >= 4096 and seen.get(r["model"], 0) < 2:
            seen[r["model"]] = seen.get(r["model"], 0) + 1
            picked.append(r)
    assert len(seen) >= 3, seen
    d = tmp_path_factory.mktemp("cal")
    draft = _cases(d / "draft.csv", picked)
    truth = calibration.CalibratedSet("neuron", {"tensor_efficiency": TRUE_TENSOR}, origin="test", reason="truth")
    pred = validation.run_cases(draft, [FAMILY], replaced=Replacements(calibrated=(truth,))).set_index("case_id")[
        "predicted"]
    for r in picked:
        r["value"] = repr(float(pred[r["case_id"]]))
    return _cases(d / "synthetic.csv", picked)


@pytest.fixture(scope="module")
def fitted(synthetic):
    return calibrate.fit("neuron", ["tensor_efficiency"], synthetic, folds=2)


def test_fit_recovers_a_known_parameter(fitted):
    assert fitted.fitted["tensor_efficiency"] == pytest.approx(TRUE_TENSOR, rel=2e-3)
    assert not fitted.final.held
    p = fitted.params_frame().set_index("parameter").loc["tensor_efficiency"]
    assert p["initial_si"] == pytest.approx(0.9) and p["status"] == "fitted"


def test_forked_fits_give_the_same_result(fitted, synthetic):
    par = calibrate.fit("neuron", ["tensor_efficiency"], synthetic, folds=2, jobs=2)
    assert par.fitted == fitted.fitted and par.cv == fitted.cv and par.folds == fitted.folds


def test_cross_validation_reports_uncalibrated_and_calibrated_held_out_error(fitted):
    assert len(fitted.folds) == 2
    held = set()
    for f in fitted.folds:
        assert f["uncalibrated_median_abs_error"] > 0.05  # 0.9 vs 0.6 on compute-bound prefill
        assert f["calibrated_median_abs_error"] < 0.01
        assert not held & set(f["held_out_groups"])  # a model is never on both sides
        held |= set(f["held_out_groups"])
    assert fitted.cv["cases"] == len(fitted.problem.case_ids)
    assert fitted.cv["calibrated_p90_abs_error"] < fitted.cv["uncalibrated_p90_abs_error"]
    frame = fitted.cv_frame()
    assert {"uncalibrated_median_abs_error_frac", "calibrated_median_abs_error_frac"} <= set(frame.columns)
    assert frame["evaluation"].str.contains("held out").sum() == 3 and frame["evaluation"].str.startswith("in-sample").any()


def test_file_round_trips_and_changes_predictions_only_where_it_is_passed(fitted, synthetic, tmp_path):
    path = fitted.write(tmp_path / "neuron-test.toml")
    s = calibration.load_calibrated_set(path)
    assert s.family == "neuron" and s.values["tensor_efficiency"] == pytest.approx(fitted.fitted["tensor_efficiency"])
    f = s.file
    assert f.fitted_on.sha256 == fit_problem.sha256_of(synthetic) and f.fitted_on.cases == len(fitted.problem.case_ids)
    assert f.cross_validation.folds == 2 and f.params["tensor_efficiency"].initial == 0.9
    assert f.method.startswith("scipy.optimize.least_squares")
    trn1, h100 = catalog.load_system("trn1.32xlarge"), catalog.load_system("p5.48xlarge")
    before = validation.run_cases(synthetic, [FAMILY])
    assert calibration.calibration_for(trn1)["tensor_efficiency"] == 0.9
    h100_tensor = calibration.calibration_for(h100)["tensor_efficiency"]
    fit = Replacements.of_files([path])
    p = catalog.load_system("trn1.32xlarge", replaced=fit).calibration.params["tensor_efficiency"]
    assert p.value == pytest.approx(TRUE_TENSOR, rel=2e-3) and p.status == "calibrated"
    assert p.origin == str(path) and p.reason.startswith(f"fitted by perfmodel calibrate on {synthetic}")
    assert catalog.load_system("p5.48xlarge", replaced=fit).calibration["tensor_efficiency"] == h100_tensor  # untouched
    with pytest.raises(CatalogError, match="not for p5.48xlarge"):  # a set passed for another family's system
        calibration.calibration_for(h100, calibrated=fit.calibrated[0])
    inside = validation.run_cases(synthetic, [FAMILY], replaced=fit)
    after = validation.run_cases(synthetic, [FAMILY])
    assert catalog.load_system("trn1.32xlarge").calibration.params["tensor_efficiency"].status == "assumed"
    assert np.allclose(before["predicted"], after["predicted"])
    assert inside["error_frac"].abs().max() < 0.01 < before["error_frac"].abs().min()


def _validate_json(capsys, argv) -> list[float]:
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    return [r["predicted"] for r in out["results"]["cases"]]


def test_cli_calibration_option_before_or_after_the_command(fitted, synthetic, tmp_path, capsys):
    path = str(fitted.write(tmp_path / "set.toml"))
    base = ["validate", FAMILY, "--cases", str(synthetic), "--show", "cases", "-f", "json"]
    plain = _validate_json(capsys, base)
    before = _validate_json(capsys, ["--calibration", path] + base)
    after = _validate_json(capsys, base + ["--calibration", path])
    again = _validate_json(capsys, base)
    assert before == after and plain == again and before != plain
    assert all(b > p for b, p in zip(before, plain))  # slower tensor engine: longer TTFT


def test_cli_calibrate_writes_the_file_and_prints_both_errors(synthetic, tmp_path, capsys):
    out = tmp_path / "cli.toml"
    assert cli.main(["calibrate", "--family", "neuron", "--params", "tensor_efficiency", "--cases", str(synthetic),
                     "--folds", "2", "--out", str(out), "-q", "-f", "json", "--jobs", "1"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["meta"]["written"] == str(out) and out.exists()
    assert rep["results"]["params"][0]["parameter"] == "tensor_efficiency"
    assert rep["results"]["params"][0]["fitted_si"] == pytest.approx(TRUE_TENSOR, rel=2e-3)
    rows = {r["evaluation"]: r for r in rep["results"]["cross_validation"]}
    pooled = next(r for k, r in rows.items() if k.startswith("all folds"))
    assert pooled["uncalibrated_median_abs_error_frac"] > 0.05 > pooled["calibrated_median_abs_error_frac"]
    calibration.load_calibrated_set(out)


GOOD = """schema_version = 1
family = "neuron"
created = "2025-01-31T12:00:00"
method = "test"

[fitted_on]
cases_file = "x.csv"
sha256 = "{sha}"
cases = 3

[params.op_overhead]
value = "3 us"
initial = "2 us"
lower = "0 s"
kind = "time"
""".replace("{sha}", "0" * 64)


@pytest.mark.parametrize("edit, field", [
    (lambda t: t.replace('method = "test"', 'method = "test"\ncolour = "red"'), "field colour: unknown key"),
    (lambda t: t.replace('family = "neuron"', 'family = "trainium"'), "field family"),
    (lambda t: t.replace('created = "2025-01-31T12:00:00"', 'created = "last week"'), "field created"),
    (lambda t: t.replace("cases = 3", ""), "field fitted_on.cases: required field is missing"),
    (lambda t: t.replace("0" * 64, "abc"), "field fitted_on.sha256"),
    (lambda t: t.replace("params.op_overhead", "params.op_overheads"), "field params.op_overheads: not a parameter"),
    (lambda t: t.replace('value = "3 us"', "value = 3"), "field params.op_overhead.value"),
    (lambda t: t.replace('kind = "time"', 'kind = "ratio"'), "field params.op_overhead.kind"),
    (lambda t: t.replace('lower = "0 s"', 'lower = "5 us"'), "field params.op_overhead.value: '3 us' is outside"),
    (lambda t: t.replace("[params.op_overhead]", "[params.op_overhead]\nfoo = 1"), "field params.op_overhead.foo"),
    (lambda t: t + "[[[", "malformed TOML"),
])
def test_bad_file_names_the_file_and_the_field(tmp_path, edit, field):
    good = tmp_path / "good.toml"
    good.write_text(GOOD)
    assert calibration.load_calibrated_set(good).values["op_overhead"] == pytest.approx(3e-6)
    bad = tmp_path / "bad.toml"
    bad.write_text(edit(GOOD))
    with pytest.raises(CatalogError) as exc:
        calibration.load_calibrated_set(bad)
    assert str(bad) in str(exc.value) and field in str(exc.value)


def test_bad_file_on_the_command_line_is_one_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace('kind = "time"', 'kind = "ratio"'))
    assert cli.main(["--calibration", str(bad), "validate", "--show", "summary"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("perfmodel: error: ") and str(bad) in err and "params.op_overhead.kind" in err


def test_two_sets_for_one_family_are_refused(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text(GOOD)
    with pytest.raises(CatalogError, match="two calibrated sets"):
        Replacements.of_files([good, good])
    assert cli.main(["--calibration", str(good), "--calibration", str(good), "specs", "list"]) == 1


def test_identify_holds_parameters_without_effect_or_not_separable():
    rng = np.random.default_rng(1)
    a = rng.normal(size=20)
    b = rng.normal(size=20)
    jac = np.column_stack([a, b, np.zeros(20), 2 * a + 1e-6 * rng.normal(size=20)])
    held = fit_problem.identify(jac, ["a", "b", "none", "twice_a"])
    assert set(held) == {"none", "twice_a"}
    assert held["none"].startswith("no effect") and held["twice_a"].startswith("not separable from a")


def test_folds_keep_groups_whole_and_cap_at_the_number_of_groups():
    groups = ["m1"] * 5 + ["m2"] * 3 + ["m3"] * 3 + ["m4"]
    f = fit_problem.assign_folds(groups, 3, seed=0)
    for g in set(groups):
        assert len({int(x) for x, gg in zip(f, groups) if gg == g}) == 1
    assert sorted(set(f.tolist())) == [0, 1, 2]
    assert fit_problem.assign_folds(groups, 10).max() == 3


@pytest.mark.parametrize("params, message", [
    (["no_such_thing"], "not a parameter of"),
    (["attention_vector_passes"], "per-chip values"),
    (["tensor_efficiency", "tensor_efficiency"], "listed twice"),
])
def test_unfittable_parameters_are_refused(params, message):
    with pytest.raises(fit_problem.CalibrateError, match=message):
        fit_problem.setup("neuron", params)


def test_bounds_by_kind():
    assert fit_problem.bounds_for("ratio", 0.9) == (0.05, 1.0)
    assert fit_problem.bounds_for("ratio", 0.0) == (0.0, 1.0)
    assert fit_problem.bounds_for("ratio", 1.25) == (0.05, math.inf)
    assert fit_problem.bounds_for("time", 2e-6) == (0.0, math.inf)


def test_help_lists_the_default_parameters():
    from perfmodel.cli import calibrate as cli_calibrate

    assert cli_calibrate._DEFAULT_HELP == ", ".join(calibrate.DEFAULT_PARAMS)
