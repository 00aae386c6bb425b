"""A benchmark's targets: each figure compared with its target where it is printed, and the process's exit
status saying whether every one was met (bench/run_all.py names the benchmarks that exit non-zero).

    targets = Targets()
    print(f"... {targets.at_least('decode configs/s', rate, 1e6)}")   # 'meets (1.6x headroom)' or 'MISSES (...)'
    print(f"... {targets.at_most('roofline warm s', t, 0.5)}")
    targets.exit()   # SystemExit naming the missed figures, if any (exit status 1)

Not a module that runs anything itself (run_all.py collects the bench_*.py scripts only).
"""

from __future__ import annotations


class Targets:
    def __init__(self) -> None:
        self.missed: list[str] = []

    def _verdict(self, what: str, value: float, target: float, ok: bool, unit: str, miss_word: str) -> str:
        ratio = max(value, target) / max(min(value, target), 1e-300)
        if ok:
            return f"meets ({ratio:.2f}x headroom)"
        self.missed.append(f"{what} {_shown(value)}{unit} against {_shown(target)}{unit}")
        return f"MISSES ({ratio:.2f}x {miss_word})"

    def at_least(self, what: str, value: float, target: float, unit: str = "") -> str:
        """A figure that must reach `target` (a rate)."""
        return self._verdict(what, value, target, value >= target, unit, "short")

    def at_most(self, what: str, value: float, target: float, unit: str = "") -> str:
        """A figure that must stay below `target` (a time, a memory ratio)."""
        return self._verdict(what, value, target, value < target, unit, "over")

    def exit(self) -> None:
        """Exit non-zero naming every missed figure (run_all.py reports the benchmark and runs the next)."""
        if self.missed:
            raise SystemExit("missed: " + "; ".join(self.missed))


def _shown(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"
