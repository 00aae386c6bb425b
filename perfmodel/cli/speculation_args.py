"""--draft / --draft-tokens / --acceptance (serve, pareto, sensitivity, simulate) as the serving model's Speculation:
the draft named first (a draft under workloads/drafts/ or 'mtp', with did-you-mean), then its acceptance.

Does not: price anything (serving/speculative.py does).
"""

from __future__ import annotations


def speculation(args):
    """--draft / --draft-tokens / --acceptance as serving/speculative.Speculation (None without --draft)."""
    from perfmodel.serving.speculative import Speculation

    if not args.draft:
        if args.acceptance:
            raise ValueError("--acceptance needs --draft NAME (the draft that proposes the tokens)")
        return None
    from perfmodel.catalog import files, workload_files

    if args.draft not in (known := ["mtp", *workload_files.list_drafts()]):  # named before anything about it
        raise ValueError(f"--draft {args.draft!r}: no such draft{files.did_you_mean(args.draft, known)} (drafts: "
                         f"{', '.join(known)}; workloads/drafts/)")
    model = None if args.draft == "mtp" else workload_files.load_draft(args.draft)  # read here, at the edge
    acc = tuple(args.acceptance or ())
    if len(acc) == 1 and acc[0] >= 1:
        return Speculation(args.draft, args.draft_tokens, mean_accepted=acc[0], model=model)
    return Speculation(args.draft, args.draft_tokens, acceptance=acc, model=model)
