"""Seed claims: each row of seed_claims.md computed from the model, with its verdict.

A claim function takes nothing (it loads what it needs from the catalogue) and returns
ClaimResult rows: the quoted value, the modelled value, the tolerance, whether it is
within, and, for a miss, the reason (which assumption differs). Nothing is transcribed:
`modelled` is always computed.

Does not: format output (cli / report do that).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

CLAIMS: list[Callable[[], list["ClaimResult"]]] = []


@dataclass(frozen=True)
class ClaimResult:
    id: str  # "D4", "D4.bandwidth", ...
    claim: str  # what is claimed, in words
    seed: str  # seed file(s) it comes from, e.g. "000, 001"
    quoted: float
    modelled: float
    unit: str  # "x", "TB", "PFLOP/s", "%", ...
    tolerance_frac: float  # relative tolerance from seed_claims.md
    note: str = ""  # how it was computed; for a miss, why
    bound: str = "approx"  # "approx": |error| <= tolerance; "at_least" / "at_most": one-sided claims


    @property
    def error_frac(self) -> float:
        return (self.modelled - self.quoted) / self.quoted if self.quoted else float("nan")

    @property
    def within(self) -> bool:
        if self.bound == "at_least":  # "more than X": holds if modelled >= X (less the tolerance)
            return self.error_frac >= -self.tolerance_frac - 1e-12
        if self.bound == "at_most":
            return self.error_frac <= self.tolerance_frac + 1e-12
        return abs(self.error_frac) <= self.tolerance_frac + 1e-12

    def as_dict(self) -> dict:
        return {**asdict(self), "error_frac": self.error_frac, "within": self.within}


def claim(fn: Callable[[], list[ClaimResult]]) -> Callable[[], list[ClaimResult]]:
    """Register a claim function (decorator)."""
    CLAIMS.append(fn)
    return fn


# One module per family of claims (the id's letter); importing a module registers its claim functions.
FAMILY_MODULES = {"D": "perfmodel.claims.specs", "M": "perfmodel.claims.memory", "P": "perfmodel.claims.perf",
                  "C": "perfmodel.claims.comm", "S": "perfmodel.claims.serving.verdicts"}
CLAIM_MODULES = tuple(FAMILY_MODULES.values())


def load_claim_modules() -> None:
    import importlib

    for mod in CLAIM_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:  # a missing dependency is a real error; a missing module is not built yet
                raise


def all_claims(prefix: str = "") -> list[ClaimResult]:
    """Every registered claim whose id starts with `prefix`, in registration order, as the code computes it
    now (read back from result_cache when this version of the code and catalogue computed it before); only
    the family modules the prefix can match are computed (an unknown letter computes none)."""
    from perfmodel.claims import result_cache

    load_claim_modules()
    wanted = {m for letter, m in FAMILY_MODULES.items() if letter.startswith(prefix[:1].upper())}
    rows: list[ClaimResult] = []
    for fn in CLAIMS:
        if fn.__module__ in wanted:
            rows.extend(r for r in result_cache.rows(fn, lambda d: ClaimResult(**d)) if r.id.startswith(prefix))
    return rows
