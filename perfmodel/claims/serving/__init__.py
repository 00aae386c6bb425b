"""The serving claims S1-S4 (Trn3 vs Trn2 UltraServer, gpt-oss-120b): the curves, the readings, the verdicts.

    curves.py     the frontier sweeps of both UltraServers and the ratios read off them
    readings.py   S1-S3 as curves for every defensible reading (Trainium2 recipe, power basis)
    verdicts.py   the claim rows S1-S4, with the driver of a miss solved for (registered with the claims registry)

Import the module you need (`from perfmodel.claims.serving import curves`); nothing is re-exported here.
"""
