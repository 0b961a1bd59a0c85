"""`hostname` and `scontrol` stand-ins for a node whose host name changes while a script runs, as cyclecloud-slurm
renames a node's host to its Slurm node name (slurm.use_nodename_as_hostname) while it installs Slurm, from jetpack,
after the node's CloudInit has started hpclz's services (Azure/cyclecloud-slurm@50e6739
azure-slurm-install/install.py set_hostname l.1027-1049, called at l.1143).

`hostname` prints the name the test writes to a file (`-s`: up to its first dot, as hostname(1) does); `scontrol show
node NAME` answers only for the Slurm node names given, and otherwise prints "Node NAME not found" and exits 1, as
Slurm's scontrol does for a name that is none of its nodes (SchedMD/slurm src/scontrol/info_node.c,
scontrol_print_node). Each `scontrol` call is noted in `asked`."""

from __future__ import annotations

from pathlib import Path


class RenamedHost:
    def __init__(self, bin_dir: Path, name: str, slurm_nodes: list[str]) -> None:
        self.name_file = bin_dir / "hostname.txt"
        self.asked = bin_dir / "scontrol.calls"
        self.rename(name)
        hostname = bin_dir / "hostname"
        hostname.write_text(
            f'#!/bin/sh\nname=$(cat {self.name_file})\n[ "$1" = -s ] && name=${{name%%.*}}\necho "$name"\n',
            encoding="utf-8",
        )
        known = " ".join(slurm_nodes)
        scontrol = bin_dir / "scontrol"
        scontrol.write_text(
            f'#!/bin/sh\necho "$*" >>{self.asked}\n'
            f'[ "$1 $2" = "show node" ] || exit 2\n'
            f'for n in {known}; do [ "$3" = "$n" ] && echo "NodeName=$n State=IDLE" && exit 0; done\n'
            'echo "Node $3 not found"\nexit 1\n',
            encoding="utf-8",
        )
        for tool in (hostname, scontrol):
            tool.chmod(0o755)

    def rename(self, name: str) -> None:
        self.name_file.write_text(name + "\n", encoding="utf-8")

    def calls(self) -> list[str]:
        return self.asked.read_text(encoding="utf-8").splitlines() if self.asked.exists() else []
