"""Provenance records: one spec value as the file wrote it, its SI value, source and status.

Every number in hardware_specs/ becomes a SpecValue: the original string ("2.9 TB/s"),
the parsed SI float, the quantity kind, the source key(s), the status (published /
derived / estimated / projected), and any alternative values other sources give.
Reports use these to mark figures that rest on estimates or projections.

Does not: parse files (specs.py does) or compute anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Status(str, Enum):
    """How a spec value is known. Ordered from firmest to weakest."""

    PUBLISHED = "published"
    DERIVED = "derived"
    ESTIMATED = "estimated"
    PROJECTED = "projected"
    ASSUMED = "assumed"  # model assumptions (calibration files), never datasheet facts

    @property
    def rank(self) -> int:
        return list(Status).index(self)

    @property
    def is_uncertain(self) -> bool:
        """Estimated, projected or assumed: reports flag results that rest on these."""
        return self in (Status.ESTIMATED, Status.PROJECTED, Status.ASSUMED)


@dataclass(frozen=True)
class Alternative:
    """A value another source gives for the same field (a recorded conflict)."""

    raw: str
    si: float
    source: str
    note: str = ""
    label: str = ""


@dataclass(frozen=True)
class SpecValue:
    """One field of a spec file, parsed.

    `si` is in the internal unit of `kind` (see units.KINDS). For projected values
    written as a ratio to a base chip, `ratio` and `ratio_range` hold the statement and
    `si` holds ratio x the base value once resolved (`ratio_low_si` / `ratio_high_si`
    bound the range).
    """

    path: str
    raw: str
    si: float
    kind: str
    source: str
    status: Status
    note: str = ""
    derivation: str = ""
    as_of: str = ""
    alternatives: tuple[Alternative, ...] = field(default_factory=tuple)
    ratio: float | None = None
    ratio_range: tuple[float, float] | None = None
    base_path: str = ""

    def alternative(self, label: str) -> Alternative:
        for alt in self.alternatives:
            if alt.label == label:
                return alt
        raise KeyError(f"{self.path} has no alternative labelled {label!r}")

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(s.strip() for s in self.source.replace(";", ",").split(",") if s.strip())

    @property
    def low_si(self) -> float:
        return self.si * (self.ratio_range[0] / self.ratio) if self.ratio and self.ratio_range else self.si

    @property
    def high_si(self) -> float:
        return self.si * (self.ratio_range[1] / self.ratio) if self.ratio and self.ratio_range else self.si
