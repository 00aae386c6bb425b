"""Memory claims M1, M2 (seed 004): GPT-3 175B training state and the instances it is placed on.

The footprint is parameters x bytes per parameter (16 mixed precision; 8 with BF16 and
stochastic rounding). The instance count is not a pure memory statement: it depends on the
activation plan. The model's planner (feasibility.min_fit) searches tensor x pipeline x data
parallel plans on trn1.32xlarge for GPT-3 at sequence 2,048, micro-batch 1, ZeRO-1
(distributed optimizer), with and without Megatron sequence parallelism; the rows report the
planner's answer and say which plan the talk's count corresponds to.

Does not: format output.
"""

from __future__ import annotations

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.claims.registry import ClaimResult, claim
from perfmodel.core import units
from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Scenario
from perfmodel.core.workload import parameter_count
from perfmodel.model import feasibility, memory

TOL = 0.05


def _instances(optimizer: Optimizer, sequence_parallel: bool) -> feasibility.FitResult:
    arch = workload_files.load_workload("gpt3-175b")
    system = catalog.load_system("trn1.32xlarge")
    sc = Scenario(Phase.TRAIN, batch=1, seq_len=2048, optimizer=optimizer,
                  parallel=Parallelism(zero=1, sequence_parallel=sequence_parallel))
    return feasibility.min_fit(system, arch, sc)


def _rows(mid: str, optimizer: Optimizer, quoted_tb: float, quoted_instances: int, text: str) -> list[ClaimResult]:
    arch = workload_files.load_workload("gpt3-175b")
    n = parameter_count(arch).total
    per_param = sum(optimizer.bytes_per_param.values())
    state = memory.training_state_bytes(n, optimizer)
    no_sp, with_sp = _instances(optimizer, False), _instances(optimizer, True)
    breakdown = ", ".join(f"{k} {v:g}" for k, v in optimizer.bytes_per_param.items())
    return [
        ClaimResult(f"{mid}.bytes_per_param", f"GPT-3 175B {text}: bytes per parameter", "004",
                    16.0 if optimizer == Optimizer.ADAM_MIXED else 8.0, per_param, "B", TOL,
                    f"optimizer '{optimizer.value}': {breakdown} bytes per parameter"),
        ClaimResult(f"{mid}.footprint", f"GPT-3 175B {text}: training-state footprint", "004", quoted_tb,
                    state / units.TB, "TB", TOL,
                    f"{n / units.BILLION:.1f} B parameters (workloads/gpt3-175b.toml, closed-form count) x {per_param:g} B"),
        ClaimResult(f"{mid}.instances", f"GPT-3 175B {text}: trn1.32xlarge instances it is placed on", "004",
                    float(quoted_instances), with_sp.instances, "instances", TOL,
                    f"Fewest instances on which state + activations fit (seq 2,048, micro-batch 1, ZeRO-1, 1F1B): "
                    f"{with_sp.instances:g} with sequence parallelism (plan {with_sp.plan}), "
                    f"{no_sp.instances:g} without (plan {no_sp.plan}). The talk's {quoted_instances} lies between: "
                    f"it corresponds to the state taking ~1/3 of HBM ({state / (quoted_instances * 16 * 32 * units.GiB):.0%}), "
                    f"leaving room for activations of a 2022-era plan; the 2:1 ratio between 16 B and 8 B per "
                    f"parameter is reproduced either way."),
    ]


@claim
def m1_mixed_precision() -> list[ClaimResult]:
    return _rows("M1", Optimizer.ADAM_MIXED, 2.8, 16, "mixed precision (FP32 master weights)")


@claim
def m2_bf16_stochastic_rounding() -> list[ClaimResult]:
    return _rows("M2", Optimizer.ADAM_BF16_SR, 1.4, 8, "BF16 with stochastic rounding")
