"""Managed Prometheus: the Azure Monitor workspace, the data collection endpoint and rule the nodes remote-write
through, Azure Managed Grafana, the alert rule groups, and what the node scripts need to find them.

CCWS's monitoring (Azure/cyclecloud-monitoring@3da922e) installs Prometheus with node exporter and DCGM exporter
through cluster-init on every node and remote-writes to the workspace's ingestion endpoint with the nodes'
managed identity; hpclz does the same from its node scripts, because CycleCloud (not hpclz's ARM) creates the
node scale sets. CCWS writes through the workspace's default rule, which Azure puts in a managed resource group
whose rule no ARM template can name up front; hpclz creates its own endpoint and rule beside the workspace, in
the shape `az aks` gives the rule it creates for managed Prometheus (Azure/azure-cli,
acs/azuremonitormetrics/dc/dcr.py: kind Linux, a prometheusForwarder source, a monitoringAccounts destination),
so the roles on it are granted by name and the node looks the URL up in ARM at boot.
"""

from __future__ import annotations

from typing import Any

from hpclz.catalog import load_catalog
from hpclz.render.arm import resource_id_expr
from hpclz.render.engine import Safe
from hpclz.render.zone import Zone

WORKSPACE_TYPE = "Microsoft.Monitor/accounts"
ENDPOINT_TYPE = "Microsoft.Insights/dataCollectionEndpoints"
RULE_TYPE = "Microsoft.Insights/dataCollectionRules"
GRAFANA_TYPE = "Microsoft.Dashboard/grafana"

# Pinned so every node runs the same exporters, each download checked against its SHA-256.
# Checksums are the releases' own sha256sums.txt (github.com/prometheus/prometheus/releases/tag/v2.54.1,
# github.com/prometheus/node_exporter/releases/tag/v1.8.2). Prometheus 2.54 has the remote-write azuread managed
# identity client that CCWS's 3.3.0 uses (prometheus.io/docs/prometheus/2.54/configuration/configuration/#azuread).
EXPORTERS: dict[str, dict[str, str]] = {
    "prometheus": {
        "version": "2.54.1",
        "amd64": "31715ef65e8a898d0f97c8c08c03b6b9afe485ac84e1698bcfec90fc6e62924f",
        "arm64": "3d9946ca730f2679bbd63e9d40e559a0ba227a638d237e723af1a99bd7098263",
    },
    "node_exporter": {
        "version": "1.8.2",
        "amd64": "6809dd0b3ec45fd6e992c19071d6b5253aed3ead7bf0686885a51d85c6643c66",
        "arm64": "627382b9723c642411c33f48861134ebe893e70a63bcc8b3fc0619cd0bfac4be",
    },
}
# CCWS runs the DCGM exporter as a container (40_dcgm_exporter.sh); hpclz pulls it by digest, the one NVIDIA's GPU
# Operator 25.3.1 runs (NVIDIA/gpu-operator@797b316:bundle/v25.3.1/manifests/
# gpu-operator-certified.clusterserviceversion.yaml, DCGM_EXPORTER_IMAGE), so a moved tag cannot change it.
DCGM_EXPORTER_IMAGE = (
    "nvcr.io/nvidia/k8s/dcgm-exporter@sha256:6c78381d83e2ccd84e9645d35d8768d98a52b73c75d1bb9395b5f030ce9bd3a4"
)
# The DCGM fields the dashboards and alerts read, a subset of CCWS's custom_dcgm_counters.csv; names and types as
# DCGM exporter's counter files spell them (NVIDIA/dcgm-exporter etc/default-counters.csv).
DCGM_COUNTERS = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in us)."),
)


def ids(zone: Zone) -> dict[str, tuple[str, ...]]:
    """(type, name) of each Prometheus resource, all in the monitoring resource group."""
    names = zone.names
    return {
        "workspace": (WORKSPACE_TYPE, names.name("monitor_workspace")),
        "endpoint": (ENDPOINT_TYPE, names.name("data_collection_endpoint", "prom")),
        "rule": (RULE_TYPE, names.name("data_collection_rule", "prom")),
        "grafana": (GRAFANA_TYPE, names.name("grafana")),
    }


def resources(zone: Zone) -> dict[str, Any] | None:
    """The monitoring template's view: names, and the workspace's ID for the rule's destination."""
    prom = zone.prometheus
    if prom is None:
        return None
    found = ids(zone)
    return {
        "workspace": found["workspace"][1],
        "workspace_id": resource_id_expr(*found["workspace"]),
        "endpoint": found["endpoint"][1],
        "endpoint_id": resource_id_expr(*found["endpoint"]),
        "rule": found["rule"][1],
        "grafana": found["grafana"][1] if prom.grafana else None,
    }


def node_metrics(zone: Zone, identity: str, vm_size: str | None = None) -> dict[str, Any] | None:
    """What a node script needs to install the exporters and find the remote-write URL: the rule and endpoint
    relative to the subscription (the node reads its subscription from IMDS), looked up with `identity`. The DCGM
    exporter only for a size the SKU catalog knows has GPUs (a size it does not know gets it too, checked at boot)."""
    prom = zone.prometheus
    if prom is None or not zone.config.identity.managed_identities.compute:
        return None
    found = ids(zone)
    group = f"resourceGroups/{zone.rg['monitoring']}/providers"
    return {
        "identity": identity,
        "rule": f"{group}/{RULE_TYPE}/{found['rule'][1]}",
        "endpoint": f"{group}/{ENDPOINT_TYPE}/{found['endpoint'][1]}",
        "cluster": f"{zone.config.metadata.name}-{zone.config.metadata.environment.value}",
        "exporters": EXPORTERS,
        "dcgm_image": DCGM_EXPORTER_IMAGE if prom.gpu_exporter and _has_gpus(vm_size) else None,
        # Constant text from this module, inside a quoted here-document: nothing in it comes from the config.
        "dcgm_counters": Safe("\n".join(", ".join(row) for row in DCGM_COUNTERS)),
    }


def _has_gpus(vm_size: str | None) -> bool:
    if vm_size is None:
        return False
    sku = load_catalog().sku(vm_size)
    return sku is None or sku.is_gpu


# Alert rules on the nodes' metrics. Compute nodes come and go with autoscaling, so "stopped reporting" means
# down only for the nodes that always run (scheduler, login). DCGM_FI_DEV_XID_ERRORS holds the last XID a GPU
# raised (0 = none); an uncorrectable (double-bit) ECC error ends the job that hit it and needs a GPU reset before
# the row is remapped (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt), so one is enough to take the node out.
NODE_DOWN = 'present_over_time(up{job="node",role=~"scheduler|login"}[30m]) unless on(instance) up{job="node"}'
PROMETHEUS_ALERTS: tuple[dict[str, Any], ...] = (
    {
        "alert": "HpclzNodeDown",
        "expression": NODE_DOWN,
        "for": "PT5M",
        "severity": 1,
        "summary": "A scheduler or login node stopped reporting metrics for 5 minutes",
    },
    {
        "alert": "HpclzGpuXidError",
        "expression": "max by (cluster, instance, gpu) (DCGM_FI_DEV_XID_ERRORS) > 0",
        "for": "PT0M",
        "severity": 2,
        "summary": "A GPU raised an XID error: drain the node and check `dmesg` for NVRM: Xid",
    },
    {
        "alert": "HpclzGpuEccDoubleBit",
        "expression": "max by (cluster, instance, gpu) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL) > 0",
        "for": "PT0M",
        "severity": 1,
        "summary": "A GPU has uncorrectable (double-bit) ECC errors: drain the node and reset or replace the GPU",
    },
)


def alert_groups(zone: Zone) -> list[dict[str, Any]]:
    prom = zone.prometheus
    if prom is None or not prom.alerts:
        return []
    found = ids(zone)
    rules = [a for a in PROMETHEUS_ALERTS if prom.gpu_exporter or not a["alert"].startswith("HpclzGpu")]
    return [
        {
            "name": zone.names.name("prometheus_rule_group", "nodes"),
            "workspace_id": resource_id_expr(*found["workspace"]),
            "rules": rules,
        }
    ]
