"""Closed-loop node repair: detect -> drain through Slurm -> classify -> reboot / reimage / Guest Health Report ->
return the node after a passing check, or retire it. A persisted, crash-safe state machine (`engine`), one
incident per node at a time, every transition recorded in a JSON event log (`store`).

Why here: it drives Slurm (hpclz.slurm), Azure (hpclz.azure) and verify's reports (hpclz.verify), so it sits in
the layer above them and below the services that wire it to the command line.
"""
