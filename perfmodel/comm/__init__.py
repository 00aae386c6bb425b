"""Communication: where a parallel group sits on the system's link tiers, the collective
algorithms, and the alpha-beta cost of a collective over that topology.

Change here when a collective algorithm, a link tier rule or a launch mode is added.
Must not import: model, training, serving, sweep, claims, validation, report, cli.
"""
