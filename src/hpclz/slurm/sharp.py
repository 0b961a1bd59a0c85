"""The InfiniBand switch grouping for the scheduler's tree topology, read the way cyclecloud-slurm's `azslurm topology
-f` reads it (Azure/cyclecloud-slurm@049346f azure-slurm/slurmcc/topology.py):

- SHARP lives in HPC-X on the Azure HPC images, at `/opt/hpcx-<version>-.../` chosen by the OS (l.242-251: e.g.
  `/opt/hpcx-v2.18-gcc-mlnx_ofed-ubuntu22.04-cuda12-x86_64/` on Ubuntu), or at the base path `SHARP_CMD` names
  (l.392-407). The version in that path changes with the image, so here the node takes the first
  `/opt/hpcx-*/sharp/bin/sharp_cmd` it has, unless `SHARP_CMD` names one.
- It runs on one node of the partition through `srun` (the scheduler has no InfiniBand), first
  `<base>sharp/bin/sharp_hello` ("SHARP is disabled on cluster" when that fails, and azslurm exits, l.276-287), then
  `SHARP_SMX_UCX_INTERFACE=mlx5_ib0:1 <base>sharp/bin/sharp_cmd topology --ib-dev mlx5_ib0:1 --guids_file <file>
  --topology_file <file>` (l.392-407) with the port GUIDs of all the nodes, and reads the topology file's
  `SwitchName=ibsw2 Nodes=0x155dfffd341acb,...` lines (l.425-438).

azslurm writes its files on the shared /sched folder; here the GUIDs go to the node as arguments and the topology
file comes back on srun's output, so nothing depends on both machines seeing one path. The reading is kept
(`--switches`, with the GUIDs it was asked for in a comment) and SHARP runs again only when a node reports a GUID it
was not asked about: a new VM, not every pass. When it cannot be read, the caller keeps the tree partitions flat and
says why: never a guessed tree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from hpclz.slurm.client import NodeInfo, SlurmClient, SlurmError
from hpclz.slurm.topology import POWERED_OFF

WHY = "hpclz-sharp: "
ASKED = "# hpclz: sharp_cmd topology asked for: "
SRUN_TIMEOUT_S = 300.0
# Run on the node under bash. `$@`: the port GUIDs. Prints the topology file, or one `hpclz-sharp: <why>` line (srun's
# own last line, "task 0: Exited with exit code N", would hide why); SHARP's own output goes to stderr.
NODE_SCRIPT = r"""set -u
host=$(hostname -s)
base=${SHARP_CMD:-}
if [ -z "$base" ]; then
  for d in /opt/hpcx-*/; do [ -x "${d}sharp/bin/sharp_cmd" ] && base=$d && break; done
fi
if [ -z "$base" ] || [ ! -x "${base}sharp/bin/sharp_cmd" ]; then
  echo "hpclz-sharp: no SHARP on $host: no ${base:-/opt/hpcx-*/}sharp/bin/sharp_cmd"
  exit 0
fi
if ! "${base}sharp/bin/sharp_hello" >&2; then
  echo "hpclz-sharp: sharp_hello failed on $host: SHARP is disabled on the fabric"
  exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '%s\n' "$@" >"$dir/guids.txt"
if ! SHARP_SMX_UCX_INTERFACE=mlx5_ib0:1 "${base}sharp/bin/sharp_cmd" topology --ib-dev mlx5_ib0:1 \
    --guids_file "$dir/guids.txt" --topology_file "$dir/topology.txt" >&2; then
  echo "hpclz-sharp: sharp_cmd topology failed on $host"
  exit 0
fi
cat "$dir/topology.txt"
"""


_SWITCH = re.compile(r"^\s*SwitchName=(\S+)\s+Nodes=(\S+)", re.M)


def sharp_guid(guid: str) -> str:
    """A port GUID as SHARP writes it: lower case, without the `0x00` ibstat prints (topology.py l.353-357)."""
    guid = guid.strip().lower()
    return "0x" + guid[4:] if guid.startswith("0x00") else guid


def sharp_switches(text: str) -> list[tuple[str, list[str]]]:
    """(switch, its port GUIDs) for each leaf line of `sharp_cmd topology` output, in file order."""
    return [(name, [sharp_guid(g) for g in guids.split(",") if g]) for name, guids in _SWITCH.findall(text)]


def _asked(text: str) -> set[str]:
    return {g for line in text.splitlines() if line.startswith(ASKED) for g in line.removeprefix(ASKED).split(",") if g}


def read_switches(
    client: SlurmClient,
    nodes: Sequence[NodeInfo],
    guids: Mapping[str, Sequence[str] | None],
    partitions: Sequence[str],
    kept: Path,
) -> tuple[list[tuple[str, list[str]]] | None, str]:
    """(switch, its GUIDs) for the nodes' GUIDs, from `kept` when it covers them all, else from SHARP on an idle
    node of `partitions` (then kept); (None, why) when it cannot be read."""
    wanted = sorted({g for found in guids.values() if found for g in found})
    if not wanted:
        return None, "no InfiniBand partition node has reported its port GUIDs yet"
    if kept.is_file():
        text = kept.read_text(encoding="utf-8")
        known = sharp_switches(text)
        if known and set(wanted) <= _asked(text) | {g for _, members in known for g in members}:
            return known, ""
    # azslurm runs SHARP on a powered-on idle node of the partition (topology.py l.100-118, l.276, l.409).
    idle = [
        n for n in nodes if guids.get(n.name) and n.base == "idle" and not set(n.flags) & (POWERED_OFF | set("#*!"))
    ]
    if not idle:
        return None, "no idle InfiniBand node that has reported to run sharp_cmd topology on"
    host = idle[0]
    partition = next(p for p in partitions if p in host.partitions)
    try:
        out = client.run(
            "srun", "-p", partition, "-w", host.name, "-N", "1", "-n", "1", "--immediate=60",
            "bash", "-c", NODE_SCRIPT, "hpclz-sharp", *wanted,
            timeout=SRUN_TIMEOUT_S,
        )  # fmt: skip
    except SlurmError as exc:
        return None, f"SHARP's switch grouping not read on {host.name}: {exc}"
    found = sharp_switches(out)
    said = [line.removeprefix(WHY) for line in out.splitlines() if line.startswith(WHY)]
    if said or not found:
        return None, f"SHARP's switch grouping not read on {host.name}: " + (
            said[-1] if said else "sharp_cmd topology listed no switch"
        )
    staged = kept.with_name(kept.name + ".hpclz-new")
    staged.write_text(ASKED + ",".join(wanted) + "\n" + out, encoding="utf-8")
    staged.replace(kept)
    return found, ""
