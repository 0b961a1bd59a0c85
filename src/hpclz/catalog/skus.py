"""Load the packaged catalog: VM sizes (skus.json) and service limits (services.json)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class InfiniBand(BaseModel):
    model_config = ConfigDict(frozen=True)

    ports: int
    gbps_per_port: int
    generation: str

    def describe(self) -> str:
        return f"{self.ports} x {self.gbps_per_port} Gb/s {self.generation}"


class Sku(BaseModel):
    """One VM size as the series page documents it."""

    model_config = ConfigDict(frozen=True)

    name: str
    vcpus: int
    memory_gib: int
    gpu_count: int = 0
    gpu_model: str | None = None
    gpu_memory_gib: int | None = None
    infiniband: InfiniBand | None = None
    accelerated_networking: bool = True
    nvme_disks: int = 0
    # The host CPU's instruction set: an image must be built for it (HPCLZ-CMP-070). Grace hosts are arm64.
    architecture: Literal["x64", "arm64"] = "x64"
    # VMs that share one NVLink domain (an NVL72 rack: 18 VMs of 4 GPUs); None where NVLink ends at the VM.
    nvlink_domain_vms: int | None = None
    quota_family: str
    source: str
    unconfirmed: tuple[str, ...] = ()

    @property
    def is_gpu(self) -> bool:
        return self.gpu_count > 0

    @property
    def rdma(self) -> bool:
        return self.infiniband is not None

    @property
    def rack_scale(self) -> bool:
        """True when NVLink spans VMs, so the size is allocated and scheduled in whole domains (racks)."""
        return self.nvlink_domain_vms is not None


class Catalog(BaseModel):
    model_config = ConfigDict(frozen=True)

    skus: dict[str, Sku]
    spot_quota_family: str
    services: dict[str, Any]

    def sku(self, name: str) -> Sku | None:
        return self.skus.get(name)

    def similar(self, name: str) -> list[str]:
        import difflib

        return difflib.get_close_matches(name, list(self.skus), n=2, cutoff=0.75)

    def service(self, *keys: str) -> Any:
        node: Any = self.services
        for key in keys:
            node = node[key]
        return node


def _read(name: str) -> Any:
    return json.loads(resources.files("hpclz.catalog").joinpath(name).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    raw = _read("skus.json")
    skus = {name: Sku(name=name, **facts) for name, facts in raw["skus"].items()}
    return Catalog(skus=skus, spot_quota_family=raw["_spot_quota_family"], services=_read("services.json"))
