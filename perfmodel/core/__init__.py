"""The records everything else is written in: units, data types, provenance, symbols, hardware,
workload and scenario records, the calibration and software-profile records, a system's resolved inputs, the
interval table of the error bars, and the system aggregates derived from them.

Plain validated records and pure functions over them, in SI floats; only units.py knows
unit prefixes. Change here when a record gains a field, a new data type or unit appears, or a
new formula symbol is needed.
Must not import: any other perfmodel package (this is the bottom layer).
"""
