"""Grafana dashboards for node and GPU health, rendered as files to import into Azure Managed Grafana.

CCWS's monitoring imports its dashboards with `az grafana dashboard import --definition <file>` after deployment
(Azure/cyclecloud-monitoring@3da922e:infra/add_dashboards.sh); ARM has no resource for a dashboard inside a
Managed Grafana instance, so hpclz renders them as artifacts and `hpclz deploy` prints the same command. The
panels read the series the node scripts export (job `node`: node exporter; job `dcgm`: DCGM exporter), with the
cluster and role labels the nodes' Prometheus adds, and the queries follow CCWS's gpu_device.json.
"""

from __future__ import annotations

import json
from typing import Any

from hpclz.render.zone import Zone

SELECT = 'cluster="$cluster", instance=~"$instance"'


def _panel(index: int, title: str, expr: str, unit: str) -> dict[str, Any]:
    return {
        "id": index + 1,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"refId": "A", "expr": expr, "legendFormat": "__auto"}],
    }


def _variable(name: str, query: str, multi: bool) -> dict[str, Any]:
    return {
        "name": name,
        "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "query": {"query": query, "refId": name},
        "refresh": 2,
        "multi": multi,
        "includeAll": multi,
        "allValue": ".*" if multi else None,
    }


def _dashboard(uid: str, title: str, metric: str, panels: list[tuple[str, str, str]]) -> dict[str, Any]:
    variables = [
        {"name": "datasource", "type": "datasource", "query": "prometheus"},
        _variable("cluster", f"label_values({metric}, cluster)", multi=False),
        _variable("instance", f'label_values({metric}{{cluster="$cluster"}}, instance)', multi=True),
    ]
    return {
        "uid": uid,
        "title": title,
        "tags": ["hpclz"],
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": variables},
        "panels": [_panel(i, *p) for i, p in enumerate(panels)],
    }


NODE_PANELS = [
    ("Up (1 = reporting)", f'up{{job="node", {SELECT}}}', "none"),
    (
        "CPU busy",
        f'1 - avg by (instance) (rate(node_cpu_seconds_total{{mode="idle", {SELECT}}}[$__rate_interval]))',
        "percentunit",
    ),
    (
        "Memory used",
        f"1 - node_memory_MemAvailable_bytes{{{SELECT}}} / node_memory_MemTotal_bytes{{{SELECT}}}",
        "percentunit",
    ),
    ("Load (1 min)", f"node_load1{{{SELECT}}}", "none"),
    ("Free space per file system", f'node_filesystem_avail_bytes{{fstype!~"tmpfs|overlay", {SELECT}}}', "bytes"),
    ("Network received", f"rate(node_network_receive_bytes_total{{{SELECT}}}[$__rate_interval])", "Bps"),
    (
        "InfiniBand received",
        f"rate(node_infiniband_port_data_received_bytes_total{{{SELECT}}}[$__rate_interval])",
        "Bps",
    ),
    ("InfiniBand links down", f"increase(node_infiniband_link_downed_total{{{SELECT}}}[$__rate_interval])", "none"),
]
GPU_PANELS = [
    ("GPU utilization", f"DCGM_FI_DEV_GPU_UTIL{{{SELECT}}}", "percent"),
    ("GPU memory used", f"DCGM_FI_DEV_FB_USED{{{SELECT}}}", "decmbytes"),
    ("GPU temperature", f"DCGM_FI_DEV_GPU_TEMP{{{SELECT}}}", "celsius"),
    ("Power draw", f"DCGM_FI_DEV_POWER_USAGE{{{SELECT}}}", "watt"),
    ("Last XID error (0 = none)", f"DCGM_FI_DEV_XID_ERRORS{{{SELECT}}}", "none"),
    ("Double-bit ECC errors (volatile)", f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{SELECT}}}", "none"),
    (
        "Single-bit ECC errors (volatile)",
        f"increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{SELECT}}}[$__rate_interval])",
        "none",
    ),
    ("Thermal throttling", f"rate(DCGM_FI_DEV_THERMAL_VIOLATION{{{SELECT}}}[$__rate_interval]) / 1e6", "percentunit"),
    ("PCIe replays", f"increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{SELECT}}}[$__rate_interval])", "none"),
]


def dashboards(zone: Zone) -> dict[str, str]:
    """Artifact path -> dashboard JSON, when Managed Grafana is on."""
    prom = zone.prometheus
    if prom is None or not prom.grafana:
        return {}
    out = {"grafana/hpclz-nodes.json": _dashboard("hpclz-nodes", "hpclz: cluster nodes", "node_load1", NODE_PANELS)}
    if prom.gpu_exporter:
        out["grafana/hpclz-gpus.json"] = _dashboard("hpclz-gpus", "hpclz: GPUs", "DCGM_FI_DEV_GPU_UTIL", GPU_PANELS)
    return {path: json.dumps(body, indent=2, sort_keys=True) + "\n" for path, body in out.items()}
