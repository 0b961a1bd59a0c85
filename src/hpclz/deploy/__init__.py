"""The deploy engine: apply a rendered plan through the Azure adapter and record what it made in state.

runner (waves of ARM deployments), records (state records from ARM's answers), destroy, preflight and the
live rules it runs, backends (which state backend a config opens). Only hpclz.azure touches the SDK.
"""
