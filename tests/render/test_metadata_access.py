"""Who on a CycleCloud node reaches the instance metadata service, and so the identities' tokens.

CycleCloud keeps every user but root and its own out by default ("node.prevent_metadata_access: Prevents users,
other than the root user or cyclecloud user, from accessing the VM metadata from the node. CycleCloud applies these
access rules in iptables. Default: true", learn.microsoft.com/azure/cyclecloud/cluster-references/
configuration-reference). hpclz keeps it on every node, execute arrays included: a job that reached the service
would hold every role of every identity its node carries (HPCLZ-TPL-060). Jobs get their blob containers through
the per-job SAS that a root-run Slurm prolog mints (docs/checkpoints.md), and every hpclz service that asks for a
token runs as root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, require
from tests.render.test_cloudinit import _artifacts, _scripts
from tests.render.test_stock_template import parse

PRESETS = sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))
SETTING = "cyclecloud.node.prevent_metadata_access"
UNITS = ("hpclz-prometheus.service", "hpclz-node-exporter.service")


def _jobs_use_the_identity(stem: str) -> bool:
    """The preset gives the compute identity blob containers to write and read (storage.blob.containers)."""
    config = yaml.safe_load((REPO / "configs" / f"{stem}.yaml").read_text(encoding="utf-8"))
    blob = (config.get("storage") or {}).get("blob") or {}
    compute = ((config.get("identity") or {}).get("managed_identities") or {}).get("compute", True)
    return bool(blob.get("containers")) and compute is not False


@pytest.mark.parametrize("stem", PRESETS)
def test_every_node_keeps_the_metadata_service_closed_to_jobs(stem: str) -> None:
    """Stated on each node, never left to [[node defaults]] or CycleCloud's default, whether or not the compute
    identity holds blob data roles (storage.blob.containers)."""
    sections = parse(_artifacts(stem)["cyclecloud/slurm-cluster.txt"])
    assert SETTING not in sections["defaults"].settings
    assert sections["scheduler"].settings[SETTING] == "true"
    if "login" in sections:
        assert sections["login"].settings[SETTING] == "true"
    arrays = [s for s in sections.values() if s.settings.get("slurm.role") == "execute"]
    assert arrays
    assert {s.settings[SETTING] for s in arrays} == {"true"}


def test_the_presets_cover_both_kinds() -> None:
    assert {_jobs_use_the_identity(stem) for stem in PRESETS} == {True, False}


@pytest.mark.parametrize("stem", PRESETS)
def test_no_preset_turns_periodic_converge_off(stem: str) -> None:
    """Left to CycleCloud, as the stock template and CCWS leave it (tests/fixtures/cyclecloud-slurm)."""
    sections = parse(_artifacts(stem)["cyclecloud/slurm-cluster.txt"])
    assert not [name for name, s in sections.items() if "cyclecloud.maintenance_converge.enabled" in s.settings]


def _metrics_program(stem: str) -> str:
    cluster = _artifacts(stem)["cyclecloud/slurm-cluster.txt"]
    scheduler = next(s for s in _scripts(cluster) if "/opt/hpclz/bin/hpclz-metrics <<" in s)
    [text] = re.findall(r"cat > /opt/hpclz/bin/hpclz-metrics <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", scheduler, re.S | re.M)
    return str(text)


def _unit(program: str, name: str) -> str:
    [text] = re.findall(
        rf"cat > /etc/systemd/system/{re.escape(name)} <<'HPCLZ_UNIT'\n(.*?)^HPCLZ_UNIT$", program, re.S | re.M
    )
    return str(text)


def _directives(unit: str) -> dict[str, str]:
    lines = [line for line in unit.splitlines() if not line.startswith("#")]
    return {key: value for key, sep, value in (line.partition("=") for line in lines) if sep and key}


def test_prometheus_runs_as_root_without_capabilities() -> None:
    program = _metrics_program("ai-training")
    prometheus = _directives(_unit(program, "hpclz-prometheus.service"))
    assert "User" not in prometheus  # systemd.exec(5), User=: "defaults to root"
    assert prometheus["CapabilityBoundingSet"] == ""
    assert prometheus["NoNewPrivileges"] == "yes" and prometheus["ProtectSystem"] == "strict"
    assert prometheus["StateDirectory"] == "hpclz-prometheus"
    assert "--storage.agent.path=/var/lib/hpclz-prometheus" in prometheus["ExecStart"]
    # The exporter needs no token: it stays unprivileged.
    assert _directives(_unit(program, "hpclz-node-exporter.service"))["User"] == "hpclz-metrics"
    assert "chown hpclz-metrics" not in program


def test_systemd_accepts_the_metrics_units(tmp_path: Path) -> None:
    """systemd-analyze(1) verify: "Load unit files and print warnings if any errors are detected", below --root."""
    analyze = shutil.which("systemd-analyze")
    require(analyze is not None, "systemd-analyze (Debian's systemd package)")
    assert analyze is not None
    program = _metrics_program("ai-training")
    root = tmp_path / "root"
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "usr/lib/systemd/system").mkdir(parents=True)
    for stock in Path("/usr/lib/systemd/system").iterdir():
        if stock.suffix in (".target", ".slice") and stock.is_file() and not stock.is_symlink():
            shutil.copy(stock, root / "usr/lib/systemd/system" / stock.name)
    for binary in ("prometheus/prometheus", "node_exporter/node_exporter"):
        path = root / "opt/hpclz" / binary
        path.parent.mkdir(parents=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    for name in UNITS:
        (root / "etc/systemd/system" / name).write_text(_unit(program, name))
    done = subprocess.run(
        [analyze, "verify", f"--root={root}", *(str(root / "etc/systemd/system" / n) for n in UNITS)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert not any(name in done.stderr for name in UNITS), done.stderr


# A stand-in for CycleCloud's rule, in a network namespace of its own, on loopback: the documented behaviour (every
# user but root refused; the cyclecloud user does not exist here), as an iptables owner match, which reads "the
# packet socket's file structure ... owned by the given user" (iptables-extensions(8), owner). Each process then
# asks a stand-in metadata service as the unit's credentials say: its User= (root when absent) and, for an empty
# CapabilityBoundingSet=, no capability at all (setpriv(1), --bounding-set -all).
NAMESPACE = r"""
set -eu
ip link set lo up
iptables -A OUTPUT -o lo -p tcp --dport "$PORT" -m owner ! --uid-owner 0 -j REJECT
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$SERVE" >/dev/null 2>&1 &
server=$!
trap 'kill $server' EXIT
for _ in $(seq 50); do python3 -c "$ASK" 2>/dev/null && break; sleep 0.1; done
for uid in $UIDS; do
  caps=""
  [ "$uid" = 0 ] && caps="--bounding-set=-all --inh-caps=-all"  # CapabilityBoundingSet= (empty)
  if setpriv --reuid="$uid" --regid="$uid" --clear-groups $caps --no-new-privs python3 -c "$ASK" 2>/dev/null; then
    echo "$uid answered"
  else
    echo "$uid refused"
  fi
done
"""
ASK = (
    "import os, urllib.request; "
    "urllib.request.urlopen('http://127.0.0.1:' + os.environ['PORT'] + '/metadata', timeout=5).read()"
)


def test_the_prometheus_unit_passes_cyclecloud_s_rule_and_an_unprivileged_user_would_not(tmp_path: Path) -> None:
    tools = [shutil.which(name) for name in ("iptables", "unshare", "setpriv", "ip")]
    require(os.geteuid() == 0 and all(tools), "root with iptables, unshare, setpriv and ip (network namespaces)")
    prometheus = _directives(_unit(_metrics_program("energy"), "hpclz-prometheus.service"))
    assert prometheus["CapabilityBoundingSet"] == ""
    nobody = 65534  # any user but root: the rule refuses them all alike
    unit_uid = 0 if prometheus.get("User", "root") == "root" else nobody
    serve = tmp_path / "serve"
    serve.mkdir()
    (serve / "metadata").write_text("{}")
    serve.chmod(0o755)
    tmp_path.chmod(0o755)
    done = subprocess.run(
        ["unshare", "--net", "bash", "-c", NAMESPACE],
        env={**os.environ, "PORT": "18080", "SERVE": str(serve), "ASK": ASK, "UIDS": f"{unit_uid} {nobody}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [f"{unit_uid} answered", f"{nobody} refused"], done.stdout + done.stderr


# hpclz's own rule (templates/cloud-init/_imds.sh.j2), which does not depend on CycleCloud applying its setting.
IMDS = "169.254.169.254"  # learn.microsoft.com/azure/virtual-machines/instance-metadata-service: "169.254.169.254"
CLOSE = "hpclz-imds-close"


def _close_program(script: str) -> str:
    [text] = re.findall(rf"cat > /opt/hpclz/bin/{CLOSE} <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", script, re.S | re.M)
    return str(text)


def _close_unit(script: str) -> str:
    [text] = re.findall(
        rf"cat > /etc/systemd/system/{CLOSE}.service <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", script, re.S | re.M
    )
    return str(text)


@pytest.mark.parametrize("stem", PRESETS)
def test_every_node_script_closes_the_metadata_service_itself(stem: str) -> None:
    """Scheduler, login and every partition: the program, its unit enabled for every boot, and a first run now."""
    cluster = _artifacts(stem)["cyclecloud/slurm-cluster.txt"]
    names = re.findall(r"^\s*\[\[(?:node|nodearray) ([^\]]+)\]\]", cluster, re.M)
    scripts = _scripts(cluster)
    assert len(scripts) == len([n for n in names if n != "defaults"]) >= 3
    assert any("hpclz on the Slurm scheduler node" in s for s in scripts)
    for script in scripts:
        program = _close_program(script)
        assert f"-d {IMDS}/32 -p tcp -m owner ! --uid-owner 0 -j REJECT" in program
        assert _close_unit(script) == _close_unit(scripts[0])
        enable = script.index(f"systemctl enable {CLOSE}.service\n")
        assert script.index(f"\n/opt/hpclz/bin/{CLOSE}\n", enable) > enable


def test_the_unit_runs_before_the_network_slurmd_and_logins() -> None:
    unit = _directives(_close_unit(_scripts(_artifacts("ai-training")["cyclecloud/slurm-cluster.txt"])[0]))
    assert unit["DefaultDependencies"] == "no" and unit["Wants"] == "network-pre.target"
    before = set(unit["Before"].split())
    assert {"network-pre.target", "slurmd.service", "sshd.service", "systemd-user-sessions.service"} <= before
    assert unit["Type"] == "oneshot" and unit["ExecStart"] == f"/opt/hpclz/bin/{CLOSE}"
    assert unit["WantedBy"] == "multi-user.target"


def test_systemd_accepts_the_close_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    require(analyze is not None, "systemd-analyze (Debian's systemd package)")
    assert analyze is not None
    root = tmp_path / "root"
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "usr/lib/systemd/system").mkdir(parents=True)
    for stock in Path("/usr/lib/systemd/system").iterdir():
        if stock.suffix in (".target", ".slice") and stock.is_file() and not stock.is_symlink():
            shutil.copy(stock, root / "usr/lib/systemd/system" / stock.name)
    binary = root / "opt/hpclz/bin" / CLOSE
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    unit = root / "etc/systemd/system" / f"{CLOSE}.service"
    unit.write_text(_close_unit(_scripts(_artifacts("energy")["cyclecloud/slurm-cluster.txt"])[0]))
    done = subprocess.run([analyze, "verify", f"--root={root}", str(unit)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert CLOSE not in done.stderr, done.stderr


def test_hpclz_s_own_rule_refuses_a_user_and_lets_root_through(tmp_path: Path) -> None:
    """The rendered program, run twice in a network namespace of its own with the metadata address swapped for
    loopback: one rule, root answered, any other user refused."""
    tools = [shutil.which(name) for name in ("iptables", "unshare", "setpriv", "ip")]
    require(os.geteuid() == 0 and all(tools), "root with iptables, unshare, setpriv and ip (network namespaces)")
    program = _close_program(_scripts(_artifacts("energy")["cyclecloud/slurm-cluster.txt"])[-1])
    assert program.count(f"{IMDS}/32") == 1
    close = tmp_path / CLOSE
    close.write_text(program.replace(f"{IMDS}/32", "127.0.0.1/32"))
    serve = tmp_path / "serve"
    serve.mkdir()
    (serve / "metadata").write_text("{}")
    serve.chmod(0o755)
    tmp_path.chmod(0o755)
    cyclecloud_s = 'iptables -A OUTPUT -o lo -p tcp --dport "$PORT" -m owner ! --uid-owner 0 -j REJECT\n'
    assert cyclecloud_s in NAMESPACE
    ours = 'sh "$CLOSE"; sh "$CLOSE"; echo "$(iptables -w -S OUTPUT | grep -c -- "-j REJECT") rules"\n'
    nobody = 65534
    done = subprocess.run(
        ["unshare", "--net", "bash", "-c", NAMESPACE.replace(cyclecloud_s, ours)],
        env={
            **os.environ,
            "PORT": "18081",
            "SERVE": str(serve),
            "ASK": ASK,
            "UIDS": f"0 {nobody}",
            "CLOSE": str(close),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["1 rules", "0 answered", f"{nobody} refused"], done.stdout + done.stderr
