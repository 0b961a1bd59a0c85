"""The deploy engine: apply a rendered plan through the Azure adapter and record what it made in state.

runner (waves of ARM deployments), records (state records from ARM's answers), destroy, preflight (which gathers
the live facts with live_reads and runs hpclz.rules.live over them). Only hpclz.azure touches the SDK.
"""
