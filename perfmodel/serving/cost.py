"""Cost: instance price per hour to $ per million output tokens, $ per month, $ per training run.

    $/M output tokens  = node $/h / (output tokens/s per node x 3600) x 1e6
                       = chip $/h / (output tokens/s per chip x 3600) x 1e6
    $/month            = chips x chip $/h x 730 h   (8,760 h / 12)
    $/training run     = chips x chip $/h x 24 x days

The price is the spec sheet's on-demand `node.price` (published or derived) unless the user
passes a reserved / negotiated one. Systems without a list price (Trn3, Trn4, GB200) use the
calibration parameter `assumed_price_per_chip_hour` only where it is set (> 0), and every output
says so (`price_status` = "assumed"); with none, `Price.available` is False and outputs say
"no price" instead of a number.

Does not: model performance or power.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfmodel.core import units
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.hardware import System

HOURS_PER_MONTH = units.HOURS_PER_MONTH
SECONDS_PER_HOUR = units.SECONDS_PER_HOUR
TOKENS_PER_MILLION = units.MILLION


@dataclass(frozen=True)
class Price:
    """Price of one node (instance) per hour, with how it is known."""

    system: str
    usd_per_node_hour: float | None
    node_chips: int
    status: str  # published | derived | estimated | assumed | override | none
    note: str

    @property
    def available(self) -> bool:
        return self.usd_per_node_hour is not None

    @property
    def usd_per_chip_hour(self) -> float:
        return self.require() / self.node_chips

    def require(self) -> float:
        if self.usd_per_node_hour is None:
            raise ValueError(f"{self.system}: no price ({self.note}); pass one (Python: price_for(system, "
                             "usd_per_node_hour=...); CLI: --price USD_PER_NODE_HOUR)")
        return self.usd_per_node_hour

    @property
    def label(self) -> str:
        if not self.available:
            return "no price"
        return f"${self.usd_per_node_hour:,.2f}/h per {self.node_chips}-chip node ({self.status}: {self.note})"


def price_for(system: System, cal: Calibration | None = None, usd_per_node_hour: float | None = None,
              alternative: str | None = None) -> Price:
    """The node price: a user override, a labelled spec alternative (e.g. 'post-cut'), the
    spec sheet's on-demand price, or the calibration's assumed per-chip price; else 'no price'."""
    n = system.node.chips
    if usd_per_node_hour is not None:
        if not usd_per_node_hour > 0:
            raise ValueError(f"price override must be > 0 USD/h, got {usd_per_node_hour!r}")
        return Price(system.name, float(usd_per_node_hour), n, "override", "user-set reserved / negotiated price")
    sv = system.provenance.get("node.price")
    if alternative:
        if sv is None:
            raise ValueError(f"{system.name}: no spec price, so no alternative {alternative!r}")
        alt = sv.alternative(alternative)
        return Price(system.name, alt.si, n, sv.status.value, f"spec alternative '{alternative}' ({alt.source})")
    if system.node.price_usd_per_hour is not None:
        src = f"{sv.source}, {sv.status.value}" if sv else "spec sheet"
        asof = f", as of {system.node.price_as_of}" if system.node.price_as_of else ""
        return Price(system.name, system.node.price_usd_per_hour, n, sv.status.value if sv else "published",
                     f"on-demand list price ({src}{asof})")
    cal = cal or calibration_of(system)
    per_chip = cal.get("assumed_price_per_chip_hour", 0.0)
    if per_chip > 0:
        reason = cal.params["assumed_price_per_chip_hour"].reason
        return Price(system.name, per_chip * n, n, "assumed",
                     f"NO LIST PRICE; assumed ${per_chip:.2f} per chip-hour (calibration: {reason})")
    return Price(system.name, None, n, "none", "no list price and no assumed price")


def usd_per_million_tokens(tokens_per_s_per_chip, price: Price) -> np.ndarray:
    """$ per million output tokens at a per-chip throughput (tokens/s)."""
    tps = np.asarray(tokens_per_s_per_chip, dtype=float)
    if np.any(tps <= 0):
        raise ValueError("cost: throughput must be > 0 tokens/s to price a token")
    return price.usd_per_chip_hour / (tps * SECONDS_PER_HOUR) * TOKENS_PER_MILLION


def monthly_usd(chips, price: Price) -> np.ndarray:
    return np.asarray(chips, dtype=float) * price.usd_per_chip_hour * HOURS_PER_MONTH


def training_run_usd(chips, days, price: Price) -> np.ndarray:
    """$ for `chips` chips over `days` days at the node price."""
    return np.asarray(chips, dtype=float) * price.usd_per_chip_hour * units.HOURS_PER_DAY * np.asarray(days, dtype=float)


def add_cost_columns(df: pd.DataFrame, price: Price,
                     per_chip_col: str = "output_tokens_per_s_per_chip") -> pd.DataFrame:
    """$ / M output tokens and output tokens per $ (NaN with price_status 'none' when there is no price)."""
    out = df.copy()
    if price.available:
        usd = usd_per_million_tokens(out[per_chip_col].to_numpy(), price)
        out["usd_per_million_output_tokens"] = usd
        out["output_tokens_per_usd"] = TOKENS_PER_MILLION / usd
    else:
        out["usd_per_million_output_tokens"] = np.nan
        out["output_tokens_per_usd"] = np.nan
    out["usd_per_node_hour"] = price.usd_per_node_hour if price.available else np.nan
    out["price_status"] = price.status
    out["price_note"] = price.label
    return out
