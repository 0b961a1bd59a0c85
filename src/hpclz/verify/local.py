"""`hpclz verify --local`: run the node agent in this process, on this machine, and wrap it as a VerifyReport.

With `nccl=True` the run is the full single-node tier (health, perf, intra-node all-reduce); without, the fast
health tier. Fixtures (argument, else HPCLZ_VERIFY_FIXTURES) replace every reading, as for the agent.
"""

from __future__ import annotations

import os
from pathlib import Path

from hpclz.config.root import LandingZoneConfig
from hpclz.errors import ExitCode, HpclzError
from hpclz.verify.agent import FIXTURES_ENV, SKU_ENV, run_agent
from hpclz.verify.model import CollectiveResult, NodeReport, VerifyReport
from hpclz.verify.probes import detect_sku
from hpclz.verify.probes.source import Source
from hpclz.verify.report import bad_nodes
from hpclz.verify.thresholds import canonical_sku, known_skus, overrides_for


def run_local(
    config_or_sku: LandingZoneConfig | str | None, nccl: bool = False, fixtures: Path | None = None
) -> VerifyReport:
    """Verify this node. The SKU is a string argument, else $HPCLZ_VERIFY_SKU, else IMDS (or the fixtures'
    vm-size.txt), else the config's only partition size with known thresholds; the config's verify.thresholds
    apply."""
    config = config_or_sku if isinstance(config_or_sku, LandingZoneConfig) else None
    sku = config_or_sku if isinstance(config_or_sku, str) else None
    if fixtures is None and os.environ.get(FIXTURES_ENV):
        fixtures = Path(os.environ[FIXTURES_ENV])
    if fixtures is not None and not fixtures.is_dir():
        raise HpclzError(f"fixtures folder {fixtures} does not exist", exit_code=ExitCode.USAGE)
    sku = sku or os.environ.get(SKU_ENV) or detect_sku(Source(fixtures, timeout_s=5)) or _sku_from_config(config)
    try:
        overrides = overrides_for(config.verify.thresholds, sku) if config else {}
    except ValueError as exc:
        raise HpclzError(f"config: {exc}", exit_code=ExitCode.CONFIG_INVALID) from None
    timeout = float(config.verify.check_timeout_seconds) if config else 20.0
    raw = run_agent(
        fixtures=fixtures,
        sku=sku,
        tier="perf" if nccl else "health",
        with_nccl=nccl,
        overrides=overrides,
        timeout_s=timeout,
    )
    node = NodeReport.model_validate(raw)
    report = VerifyReport(landing_zone=config.metadata.name if config else None, nodes=[node])
    if "collective" in raw:
        report.collectives.append(CollectiveResult.model_validate(raw["collective"]))
    report.bad_nodes = bad_nodes(report.nodes)
    report.duration_s = node.duration_s
    return report


def _sku_from_config(config: LandingZoneConfig | None) -> str | None:
    if config is None:
        return None
    known = known_skus()
    sizes = {p.vm_size for p in config.compute.partitions if canonical_sku(p.vm_size, known)}
    return sizes.pop() if len(sizes) == 1 else None
