"""The model of one device: operator formulas (sympy, written once), the operator graph per
phase, the multi-engine roofline, binding numbers to symbols, vectorised evaluation, stand-alone
kernels, the memory footprint, the parallelism plan's checks, and the formulas as LaTeX.

Change here when an operator, a formula, an engine rule, a memory component or a plan check
changes.
Must not import: training, serving, sweep, claims, validation, report, cli.
"""
