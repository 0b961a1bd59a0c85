"""How long state operations take: lock, read, write (with history and the secret scan), on each backend.

Run from the repository root: `.venv/bin/python benchmarks/bench_state.py [ROUNDS]`.
The Blob figures are against Azurite on loopback, so they measure hpclz and the SDK, not Azure.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.azurite import find_azurite, start_azurite

from hpclz.azure.backends import open_backend
from hpclz.azure.blob_state import CONNECTION_STRING_ENV
from hpclz.config.loader import load_config
from hpclz.config.operations import AzureBlobState
from hpclz.config.root import LandingZoneConfig
from hpclz.state.factory import new_state
from hpclz.state.model import ResourceRecord

REPO = Path(__file__).resolve().parent.parent


def _timed(label: str, rounds: int, action: Callable[[], object]) -> None:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    print(f"  {label:<28} median {statistics.median(samples):7.2f} ms  max {max(samples):7.2f} ms")


def bench(config: LandingZoneConfig, base_dir: Path, rounds: int) -> None:
    backend = open_backend(config, base_dir=base_dir)
    doc = new_state(config)
    for n in range(300):  # a large landing zone: 300 resources
        doc.resources.append(
            ResourceRecord(
                id=f"/subscriptions/x/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm{n}",
                type="Microsoft.Compute/virtualMachines",
                name=f"vm{n}",
                api_version="2024-07-01",
                deployment="compute",
                properties={"hardwareProfile": {"vmSize": "Standard_ND96isr_H100_v5"}, "zones": ["1"]},
            )
        )
    state = {"doc": backend.write(doc)}

    def write() -> None:
        state["doc"] = backend.write(state["doc"])

    def lock_cycle() -> None:
        with backend.lock("bench"):
            pass

    _timed("write (300 resources)", rounds, write)
    _timed("read", rounds, backend.read)
    _timed("lock + release", rounds, lock_cycle)
    _timed("lock_info", rounds, backend.lock_info)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    config = load_config(REPO / "configs" / "energy.yaml").config
    with tempfile.TemporaryDirectory() as tmp:
        print("local:")
        bench(config, Path(tmp), rounds)
        binary = find_azurite()
        if binary is None:
            print("azure_blob: skipped (no azurite-blob)")
            return
        process, azurite = start_azurite(binary, Path(tmp))
        try:
            os.environ[CONNECTION_STRING_ENV] = azurite.connection_string
            blob = config.model_copy(update={"state": AzureBlobState(account_url="https://unused.example")})
            print("azure_blob (Azurite):")
            bench(blob, Path(tmp), rounds)
        finally:
            process.terminate()
            process.wait()


if __name__ == "__main__":
    main()
