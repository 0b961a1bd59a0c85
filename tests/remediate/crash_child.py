"""Run the remediator in its own process until it is killed before its Nth save (argv: state world die_at)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hpclz.remediate.engine import Policy
from hpclz.slurm.client import SlurmClient
from tests.support.remediation import CrashingStore, remediator


def main() -> int:
    state, world, die_at = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    slurm = SlurmClient.from_env()
    engine = remediator(state, world, slurm, os.environ["AZURE_SUBSCRIPTION_ID"], Policy(max_out_percent=50))
    engine.store = CrashingStore(state, die_at)
    engine.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
