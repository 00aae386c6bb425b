"""What one run replaces in the catalogue (catalog/replacements.py) is an argument: it reaches every validation
family and every system it is passed to, changes nothing where it is not passed, and the claims refuse it."""

from __future__ import annotations

import pytest

from perfmodel import catalog, cli, validation
from perfmodel.catalog.calibration import CalibratedSet
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.catalog.spec_schema import CatalogError
from test_calibrate import GOOD

SLOW = {"tensor_efficiency": 0.45, "hbm_efficiency": 0.5, "link_efficiency_node": 0.4}


def _sets() -> Replacements:
    return Replacements(calibrated=tuple(CalibratedSet(f, SLOW, origin=f"test-{f}", reason="test")
                                         for f in ("neuron", "nvidia")))


def test_a_calibrated_set_reaches_every_validation_family_it_is_passed_to():
    """Each family of the development file sees the sets (some of its predictions move); without them, none does."""
    plain = validation.run_cases().set_index(["case_id", "metric"])
    again = validation.run_cases().set_index(["case_id", "metric"])
    slow = validation.run_cases(replaced=_sets()).set_index(["case_id", "metric"])
    predicted = plain["predicted"].notna()
    assert plain["predicted"][predicted].equals(again["predicted"][predicted])  # nothing left in force between runs
    moved = (slow["predicted"] != plain["predicted"]) & predicted
    families = plain.loc[predicted, "family"].unique()
    assert len(families) >= 6
    for fam in families:
        assert moved[plain["family"].eq(fam)].any(), f"family {fam}: the calibrated sets did not reach it"


def test_a_set_replaces_only_its_familys_values_with_their_provenance():
    r = _sets()
    trn2 = catalog.load_system("trn2.48xlarge", replaced=Replacements(calibrated=(r.calibrated[0],)))
    h100 = catalog.load_system("p5.48xlarge", replaced=Replacements(calibrated=(r.calibrated[0],)))
    p = trn2.calibration.params["hbm_efficiency"]
    assert p.value == 0.5 and p.status == "calibrated" and p.origin == "test-neuron"
    assert h100.calibration.params["hbm_efficiency"] == catalog.load_system("p5.48xlarge").calibration.params[
        "hbm_efficiency"]
    assert catalog.load_system("trn2.48xlarge").calibration.params["hbm_efficiency"].status != "calibrated"


def test_the_record_checks_its_sets_and_is_a_cache_key():
    one = CalibratedSet("neuron", SLOW, origin="a", reason="t")
    with pytest.raises(CatalogError, match="two calibrated sets for family 'neuron'"):
        Replacements(calibrated=(one, CalibratedSet("neuron", SLOW, origin="b", reason="t")))
    with pytest.raises(CatalogError, match="unknown family 'amd'"):
        Replacements(calibrated=(CalibratedSet("amd", SLOW, origin="c", reason="t"),))
    assert not NONE and Replacements(calibrated=(one,))
    assert Replacements(calibrated=(one,)) == Replacements(calibrated=(one,))
    assert hash(Replacements(calibrated=(one,))) == hash(Replacements(calibrated=(one,)))
    assert Replacements(calibrated=(one,)).calibrated_for("nvidia") is None


@pytest.mark.parametrize("argv", [["claims", "--id", "D1"], ["report", "--claims"],
                                  ["validate", "--build-intervals"], ["calibrate", "--family", "neuron"]])
def test_commands_that_run_on_the_shipped_catalogue_refuse_a_set_in_one_line(argv, tmp_path, capsys):
    path = tmp_path / "set.toml"
    path.write_text(GOOD)
    assert cli.main(["--calibration", str(path), *argv]) in (1, 2)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "calibrated set" in err[0]  # the set announced, then one line saying why not
    assert "without --calibration" in err[1]
