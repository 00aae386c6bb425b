"""The seed claims: each number of seed_claims.md computed from the model, with its verdict.

Front door: claim, ClaimResult, all_claims (from registry.py); one module per claim family.
Change here when a claim is added or its computation changes.
Must not import: validation, report, cli.
"""

from perfmodel.claims.registry import CLAIM_MODULES, CLAIMS, ClaimResult, all_claims, claim, load_claim_modules

__all__ = ["CLAIMS", "CLAIM_MODULES", "ClaimResult", "all_claims", "claim", "load_claim_modules"]
