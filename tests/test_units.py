"""Unit parsing at the edge: decimal vs binary prefixes, dimensions, round trips."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel.core import units


@pytest.mark.parametrize("text,kind,expected", [
    ("2.9 TB/s", "bandwidth", 2.9e12),
    ("820 GiB/s", "bandwidth", 820 * 2**30),
    ("800 Gbps", "bandwidth", 100e9),  # bits, not bytes
    ("96 GiB", "capacity", 96 * 2**30),
    ("96 GB", "capacity", 96e9),
    ("190 TFLOPS", "flop_rate", 190e12),
    ("380 TOPS", "flop_rate", 380e12),
    ("1.5 us", "time", 1.5e-6),
    ("10 µs", "time", 10e-6),
    ("2 ms", "time", 2e-3),
    ("2.4 GHz", "frequency", 2.4e9),
    ("1.2 kW", "power", 1200.0),
    ("21.50 USD/h", "price_rate", 21.5),
    ("128 elem/cycle", "elements_per_cycle", 128.0),
    ("16", "count", 16.0),
    (16, "count", 16.0),
    ("85 %", "ratio", 0.85),
])
def test_parse_to_si(text, kind, expected):
    assert units.parse(text, kind) == pytest.approx(expected, rel=1e-12)


def test_decimal_and_binary_prefixes_differ():
    assert units.parse("1 GiB", "capacity") / units.parse("1 GB", "capacity") == pytest.approx(2**30 / 1e9)
    assert units.parse("1 TiB/s", "bandwidth") > units.parse("1 TB/s", "bandwidth")


@pytest.mark.parametrize("text,kind,fragment", [
    ("2.9 TB", "bandwidth", "dimension"),  # a capacity where a bandwidth is due
    ("2.9 TB/s", "capacity", "dimension"),
    ("2.9", "bandwidth", "with its unit"),  # bare number
    (2.9, "bandwidth", "with its unit"),
    ("190 TB/s", "flop_rate", "dimension"),
    ("5 furlongs", "capacity", "cannot read"),
    ("", "time", "empty"),
    ("nan GB", "capacity", "finite"),
])
def test_parse_rejects_with_a_reason(text, kind, fragment):
    with pytest.raises(units.UnitError, match=fragment):
        units.parse(text, kind)


@given(st.floats(min_value=1e-3, max_value=1e6, allow_nan=False), st.sampled_from(["KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"]))
def test_capacity_round_trip(value, unit):
    si = units.parse(f"{value!r} {unit}", "capacity")
    back = units.registry().Quantity(si, "B").to(unit).magnitude
    assert math.isclose(back, value, rel_tol=1e-9)


def test_format_quantity_uses_sensible_prefixes():
    assert units.format_quantity(2.9e12, "bandwidth") == "2.9 TB/s"
    assert units.format_quantity(96 * 2**30, "capacity") == "96 GiB"
    assert units.format_quantity(1.5e-6, "time") == "1.5 us"


def test_every_catalogue_quantity_is_pints_own_conversion(monkeypatch):
    """A value is number x the unit's factor (units._factor): for every quantity the catalogue holds, bit for
    bit what pint's Quantity(number, unit).to(internal unit) gives."""
    import re

    from perfmodel.catalog import check

    seen = {}
    parse_text = units._parse_text
    monkeypatch.setattr(units, "_parse_text", lambda s, kind, k: seen.setdefault((s, kind), parse_text(s, kind, k)))
    check.check_catalog()
    ureg = units.registry()
    with_units = 0
    for (s, kind), value in seen.items():
        m = units._QUANTITY.fullmatch(s)
        unit = re.sub(r"\s*([/*·^])\s*", r"\1", re.sub(r"\s+", " ", m.group(2).strip()))
        if not unit:
            continue
        with_units += 1
        k = units.KINDS[kind]
        q = ureg.Quantity(float(m.group(1)), ureg.parse_units(unit.replace("·", "*")))
        assert value == float(q.to(k.internal_unit or "count").magnitude), s
    assert with_units > 200


def test_a_unit_met_once_is_read_back_without_pint(tmp_path):
    import os
    import subprocess
    import sys

    code = ("import sys; from perfmodel.core import units; "
            "print(units.parse('2.9 TB/s', 'bandwidth'), 'pint' in sys.modules)")
    env = {**os.environ, "PERFMODEL_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["2900000000000.0", "True"]
    assert again.stdout.split() == ["2900000000000.0", "False"]
