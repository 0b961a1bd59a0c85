"""Money: retail prices (a shipped snapshot, refreshed from the Azure Retail Prices API) and the monthly
estimate `hpclz plan` prints and the budget rule checks.

Sits beside the config layer: it reads a LandingZoneConfig and price data, never templates or Azure state,
so rules, plan and deploy can all use it.
"""
