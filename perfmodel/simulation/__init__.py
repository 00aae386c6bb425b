"""Request-level serving simulation on SimPy: engines (continuous batching, token budget, paged KV,
preemption, prefix cache), deployments (replicas or xPyD workers behind a router), traffic (Poisson, gamma,
closed loop, trace) and what a run measures (percentiles, goodput, queues over time); its agreement with the
steady state (compare.py); the deployment's service capacity, the utilisation its traffic offers and the
replicas that would hold it (capacity.py).

Front door: simulate, Layout (deployment.py), Traffic, Shapes (traffic.py), summarize (metrics.py).
Change here when a scheduler rule, a routing policy, a traffic kind or a run statistic changes.
Must not import: sweep, claims, validation, report, cli.
"""
