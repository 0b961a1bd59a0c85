"""Parser for `nvidia-smi nvlink -s` (per-GPU link speeds; `<inactive>` marks a link that is down)."""

from __future__ import annotations

import re

from hpclz.verify.probes.facts import NvLink

_GPU = re.compile(r"^GPU (\d+):")
_LINK = re.compile(r"^\s*Link (\d+):\s*(.*)$")


def parse_nvlink_status(text: str) -> list[NvLink]:
    links: list[NvLink] = []
    gpu = -1
    for line in text.splitlines():
        head = _GPU.match(line)
        if head:
            gpu = int(head.group(1))
            continue
        m = _LINK.match(line)
        if m and gpu >= 0:
            state = m.group(2).strip()
            speed = re.match(r"([\d.]+)\s*GB/s", state)
            links.append(
                NvLink(
                    gpu_index=gpu,
                    link=int(m.group(1)),
                    active="inactive" not in state.lower() and speed is not None,
                    speed_gbps=float(speed.group(1)) if speed else None,
                )
            )
    return links
