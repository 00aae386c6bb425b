"""The Neuron stacks' fitted graph cost against a fresh fit (provenance check), and the fit's time.

    python bench/bench_neuron_fit.py

Runs perfmodel.validation.neuron_fit on its default files (the development cases and the Trainium2 rows)
and compares each stack's fitted op_overhead with the value shipped in hardware_specs/stacks/neuron.toml:
a "fitted" value must reproduce; an "assumed" one is printed beside what the rows would give.
"""

from __future__ import annotations

import time

from perfmodel.catalog import neuron_stacks
from perfmodel.core import units
from perfmodel.validation import neuron_fit


def main() -> None:
    t0 = time.perf_counter()
    t = neuron_fit.table(neuron_fit.decode_rows())
    fitted = neuron_fit.fit(t)
    print(f"neuron fit: {len(t)} decode rows, {time.perf_counter() - t0:.1f} s")
    for name, v in fitted.items():
        s = neuron_stacks.stack(name).params[neuron_fit.PARAM]
        if s.status == "fitted":
            same = abs(s.value - v) <= max(0.01 * abs(v), 0.01 * units.US)
            verdict = "reproduces" if same else "DIFFERS"
        else:
            verdict = "assumed (kept: see its source)"
        print(f"  {name}.{neuron_fit.PARAM}: shipped {s.value / units.US:.3g} us ({s.status}), "
              f"refit {v / units.US:.3g} us: {verdict}")


if __name__ == "__main__":
    main()
