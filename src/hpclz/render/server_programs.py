"""The programs hpclz runs on the CycleCloud server that a newer hpclz may change: hpclz-server-programs (templates/
cloud-init/server_programs.py) installs them there from the hpclz wheel in the locker, in place, rather than from
customData, which Azure cannot update once the VM exists. Named once here for what renders them into customData (a
server without CycleCloud's identity: hpclz.render.cloudinit) and for what must still see what they reach
(hpclz.render.egress)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpclz.render.engine import render_text

if TYPE_CHECKING:
    from jinja2 import Environment

# Installed name on the server -> template; the loader's PROGRAMS lists the same pairs (tests/render/test_cloudinit.py).
SERVER_PROGRAMS = {"hpclz-cluster-sync": "cloud-init/cluster_sync.py", "hpclz-cc-users": "cloud-init/cc_users.py"}


def server_programs(env: Environment | None = None) -> dict[str, str]:
    """Each program's text by its installed name, as the wheel carries it (no template variable in them)."""
    return {name: render_text(template, env) for name, template in SERVER_PROGRAMS.items()}
