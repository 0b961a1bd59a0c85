"""The Open OnDemand portal (portal.*): what its template exposes, what its boot script pins and checks."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from socket import socket as tcp_socket
from typing import Any

import pytest

from hpclz.config.portal import Portal
from hpclz.render.model import Deployment, DeploymentPlan
from tests.conftest import PRESETS, require
from tests.render.conftest import preset_plan, resources_of, variant
from tests.render.test_node_portability import _shellcheck

SECRET_PARAMETER = "secretOodClientSecret"


def _portal(plan: DeploymentPlan) -> Deployment:
    return next(d for d in plan.deployments if d.component == "portal")


def _of(deployment: Deployment, type_: str) -> list[dict[str, Any]]:
    return [r for r in deployment.template["resources"] if r["type"] == type_]


def _script(deployment: Deployment) -> str:
    (vm,) = _of(deployment, "Microsoft.Compute/virtualMachines")
    raw = base64.b64decode(vm["properties"]["osProfile"]["customData"])
    assert raw[:2] == b"\x1f\x8b"  # gzip, always: cloud-init unpacks it (hpclz.render.payload)
    text = gzip.decompress(raw).decode()
    assert text == deployment.artifacts["cloud-init/portal.sh"]
    return text


@pytest.fixture(autouse=True)
def _no_gpg_agent_left(tmp_path: Path) -> Iterator[None]:
    """gpg starts an agent per keyring and leaves it running: stop each one a test's keyrings started."""
    yield
    for socket in tmp_path.rglob("S.gpg-agent"):
        subprocess.run(["gpgconf", "--homedir", str(socket.parent), "--kill", "gpg-agent"], check=False, timeout=30)


@pytest.fixture
def gpg_dir() -> Iterator[Path]:
    """A short folder for the gpg tests: gpg-agent's socket lives in the keyring folder, and a socket path must fit
    sun_path's 108 bytes (unix(7)); a pytest-xdist worker's tmp_path (.../popen-gw0/test_.../...) plus mktemp's
    folder does not, and gpg then fails with "failed to start agent"."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="hpclz-gpg-", dir="/tmp"))
    try:
        yield folder
    finally:
        for socket in folder.rglob("S.gpg-agent"):
            subprocess.run(["gpgconf", "--homedir", str(socket.parent), "--kill", "gpg-agent"], check=False, timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


def _with_secret(data: dict[str, Any]) -> None:
    data["identity"]["key_vault"].setdefault("secrets", {})["ood-client-secret"] = "${env:OOD_CLIENT_SECRET}"
    data["portal"]["oidc"]["client_secret_name"] = "ood-client-secret"
    data["portal"]["server_name"] = "ood.hpc.example.com"
    data["portal"]["allowed_cidrs"] = ["10.8.0.0/16", "192.168.10.0/24"]


def test_the_portal_is_off_unless_asked_for() -> None:
    assert Portal().enabled is False
    for path in PRESETS:
        components = {d.component for d in preset_plan(path.stem).deployments}
        assert ("portal" in components) == (path.stem in ("ai-training", "energy")), path.stem


def test_the_portal_has_no_public_ip_and_takes_https_only_from_the_hub() -> None:
    portal = _portal(preset_plan("ai-training"))
    assert not _of(portal, "Microsoft.Network/publicIPAddresses")
    (nic,) = _of(portal, "Microsoft.Network/networkInterfaces")
    (config,) = nic["properties"]["ipConfigurations"]
    assert "publicIPAddress" not in config["properties"]
    assert config["properties"]["subnet"]["id"].endswith("'vnet-aitrain-prod-eus2', 'snet-aitrain-admin-prod-eus2')]")
    assert nic["properties"]["networkSecurityGroup"]["id"].endswith("'nsg-aitrain-ood-prod-eus2')]")
    (nsg,) = _of(portal, "Microsoft.Network/networkSecurityGroups")
    rules = {r["name"]: r["properties"] for r in nsg["properties"]["securityRules"]}
    # The hub of configs/ai-training.yaml is 10.0.0.0/16 (portal.allowed_cidrs, where its users arrive): only it
    # reaches 443, and only Bastion (its subnet 10.40.1.0/26) 22, for admins.
    assert rules["AllowPortalHttps"]["sourceAddressPrefix"] == "10.0.0.0/16"
    assert rules["AllowPortalHttps"]["destinationPortRange"] == "443"
    assert rules["AllowBastionSsh"]["sourceAddressPrefix"] == "10.40.1.0/26"
    assert rules["DenyAllInbound"] == {**rules["DenyAllInbound"], "access": "Deny", "sourceAddressPrefix": "*"}
    allowed = [p for p in rules.values() if p["access"] == "Allow"]
    # srun's range from the cluster's subnets (test_slurm_reaches_srun_on_the_portal_on_the_pinned_range_only).
    assert {p["destinationPortRange"] for p in allowed} == {"443", "22", "60001-63000"}


@pytest.mark.parametrize("stem", ["ai-training", "energy"])
def test_the_hubs_users_reach_cyclecloud_and_the_portal_on_https(stem: str) -> None:
    """Users of these presets arrive from the hub. The admin subnet (the CycleCloud server) denies only the Internet, so
    its NSG's default AllowVnetInBound lets the hub's range in: the VirtualNetwork tag covers peered VNets
    (learn.microsoft.com/azure/virtual-network/service-tags-overview), as for finance and manufacturing. The portal's
    NSG denies the rest of the VNet, so it lists the hub's range for 443 only."""
    plan = preset_plan(stem)
    (peering,) = resources_of(plan, "Microsoft.Network/virtualNetworks/virtualNetworkPeerings")
    (hub,) = peering["properties"]["remoteAddressSpace"]["addressPrefixes"]
    (admin,) = [n for n in resources_of(plan, "Microsoft.Network/networkSecurityGroups") if "-admin-" in n["name"]]
    inbound = [
        r["properties"] for r in admin["properties"]["securityRules"] if r["properties"]["direction"] == "Inbound"
    ]
    assert [(r["access"], r["sourceAddressPrefix"]) for r in inbound] == [("Deny", "Internet")]
    (nsg,) = _of(_portal(plan), "Microsoft.Network/networkSecurityGroups")
    rules = {r["name"]: r["properties"] for r in nsg["properties"]["securityRules"]}
    assert hub in rules["AllowPortalHttps"].get(
        "sourceAddressPrefixes", [rules["AllowPortalHttps"].get("sourceAddressPrefix")]
    )
    assert rules["AllowPortalHttps"]["destinationPortRange"] == "443"
    assert not any(
        hub in r.get("sourceAddressPrefixes", [r.get("sourceAddressPrefix")])
        for n, r in rules.items()
        if n != "AllowPortalHttps"
    )


def test_allowed_ranges_and_nothing_else_reach_https() -> None:
    portal = _portal(variant("ai-training", _with_secret))
    (nsg,) = _of(portal, "Microsoft.Network/networkSecurityGroups")
    rules = {r["name"]: r["properties"] for r in nsg["properties"]["securityRules"]}
    assert rules["AllowPortalHttps"]["sourceAddressPrefixes"] == ["10.8.0.0/16", "192.168.10.0/24"]
    assert rules["AllowBastionSsh"]["sourceAddressPrefix"] == "10.40.1.0/26"


def test_bastion_reaches_the_portals_ssh_but_not_its_https() -> None:
    """Bastion's tunnel carries SSH or RDP only ("The bastion tunnel doesn't relay web servers or hosts.":
    MicrosoftDocs/azure-docs@b8db86a includes/bastion-native-connect-tunnel.md l.11): admins reach 443 by `ssh -L`
    over the tunnel to 22, so the portal's NSG refuses 443 from the Bastion subnet, with and without allowed ranges."""
    from hpclz.rules.nsgflow import refusal

    bastion = "10.40.1.0/26"  # configs/ai-training.yaml's Bastion subnet; the portal sits in its admin subnet
    for plan in (preset_plan("ai-training"), variant("ai-training", _with_secret)):
        (nsg,) = _of(_portal(plan), "Microsoft.Network/networkSecurityGroups")
        rules = nsg["properties"]["securityRules"]
        assert refusal(rules, "Inbound", bastion, "10.40.0.0/24", (22, 22)) is None
        found = refusal(rules, "Inbound", bastion, "10.40.0.0/24", (443, 443))
        assert found is not None and found[1]["name"] == "DenyAllInbound"


def test_boot_script_pins_open_ondemand_and_the_clusters_slurm() -> None:
    script = _script(_portal(preset_plan("ai-training")))
    # Open OnDemand 4.1.4 as CCWS pins it; OSC's key by its full fingerprint (OSC/puppet-module-openondemand).
    assert "apt-get install -y ondemand=4.1.4\n" in script
    assert "https://apt.osc.edu/ondemand/DEB-GPG-KEY-ondemand FE143EA1CB378B569BBF7C544B72FE2B92D31755" in script
    assert "repo=https://apt.osc.edu/ondemand/4.1/web/apt" in script
    # The cluster's own Slurm build (compute.cyclecloud.slurm_version) from cyclecloud-slurm's jammy repository.
    assert "'slurm-smd-client=25.11.5*'" in script
    assert "https://packages.microsoft.com/repos/slurm-ubuntu-jammy/ stable main" in script
    assert "BC528686B50D79E339D3721CEB3E94ADBE1229CF" in script
    # munge and slurm with cyclecloud-slurm's ids, the key and slurm.conf from /sched/<cluster>.
    assert "groupadd -g 11101 munge" in script and "groupadd -g 11100 slurm" in script
    assert "cfg=/sched/aitrain-prod\n" in script
    assert 'install -o munge -g munge -m 0600 "$cfg/munge.key" /etc/munge/munge.key' in script
    # Home and /sched from the Azure Files NFS shares every node mounts.
    assert re.search(r"st\w+\.file\.core\.windows\.net:/st\w+/sched /sched nfs vers=4,minorversion=1", script)


@pytest.mark.parametrize("preset", ["ai-training", "energy"])
def test_the_portal_mounts_sched_read_only_and_home_read_write(preset: str) -> None:
    """/sched holds slurm.conf and prolog.d scripts that run as root on every compute node, on a share without root
    squash: the user-facing portal mounts it read-only (it only reads munge.key and the conf files there)."""
    script = _script(_portal(preset_plan(preset)))
    sched = re.findall(r"echo '\S+:\S+ /sched nfs (\S+) 0 0' >> /etc/fstab", script)
    home = re.findall(r"echo '\S+:\S+/home /shared nfs (\S+) 0 0' >> /etc/fstab", script)
    assert len(sched) == 1 and len(home) == 1
    assert "ro" in sched[0].split(",")
    assert "ro" not in home[0].split(",")


def test_nodejs_22_comes_from_nodesource_before_ondemand_is_installed() -> None:
    """The ondemand 4.1.4 deb "Depends: ... nodejs (>= 22.0), nodejs (<< 23.0)" (OSC/ondemand@6b54ef1, tag v4.1.4,
    packaging/deb/control:18) and Ubuntu 22.04 ships nodejs 12: without NodeSource's node_22.x repository (what OSC/ood-ansible adds,
    tasks/install-package.yml) apt cannot install ondemand at all."""
    script = _script(_portal(preset_plan("ai-training")))
    key = (
        "fetch_key https://deb.nodesource.com/gpgkey/nodesource-repo.gpg.key "
        "6F71F525282841EEDAF851B42F59B5F99B1BE0B4 /etc/apt/keyrings/nodesource.gpg\n"
    )
    source = (
        "echo 'deb [signed-by=/etc/apt/keyrings/nodesource.gpg] https://deb.nodesource.com/node_22.x nodistro main' "
        "> /etc/apt/sources.list.d/hpclz-nodesource.list\n"
    )
    assert key in script and source in script
    install = script.index("apt-get install -y ondemand=4.1.4\n")
    # The repository is known to apt (an `apt-get update` after it) before ondemand's dependencies are resolved.
    assert script.index(key) < script.index(source) < script.rindex("apt-get update\n", 0, install) < install


def test_sign_in_without_a_secret_is_the_id_token_flow_ccws_uses() -> None:
    script = _script(_portal(preset_plan("ai-training")))
    metadata = (
        "https://login.microsoftonline.com/0c6a3d1e-4b2f-4e8a-9d37-8f2b5a1c6e90/v2.0/.well-known/openid-configuration"
    )
    assert f'oidc_provider_metadata_url: "{metadata}"' in script
    assert 'oidc_client_id: "3c1f9a52-7d4e-4b8a-9e21-5f6d0c8b2a17"' in script
    assert "OIDCResponseType: id_token" in script
    assert "AuthType openid-connect" in script
    domain = "[cC][oO][nN][tT][oO][sS][oO][aA][iI]%.[oO][nN][mM][iI][cC][rR][oO][sS][oO][fF][tT]%.[cC][oO][mM]"
    assert f'user_map_match: "^([^@]+)@{domain}$:lower"' in script
    assert "oidc_client_secret" not in script and "hpclz-portal-secret" not in script
    assert not _of(_portal(preset_plan("ai-training")), "Microsoft.Resources/deployments")


def test_a_client_secret_is_read_from_key_vault_by_the_vms_own_identity() -> None:
    plan = variant("ai-training", _with_secret)
    portal = _portal(plan)
    script = _script(portal)
    assert "OIDCResponseType" not in script  # the code flow, with the secret
    assert "client_secret=$(/opt/hpclz/bin/hpclz-portal-secret kv-aitrain-prod-eus2-a1 ood-client-secret)" in script
    assert 'servername: "ood.hpc.example.com"' in script and "-subj /CN=ood.hpc.example.com" in script
    (vm,) = _of(portal, "Microsoft.Compute/virtualMachines")
    assert vm["identity"] == {"type": "SystemAssigned"}
    (nested,) = _of(portal, "Microsoft.Resources/deployments")
    assert nested["resourceGroup"] == "rg-aitrain-management-prod-eus2"
    (role,) = nested["properties"]["template"]["resources"]
    # Key Vault Secrets User (learn.microsoft.com/azure/role-based-access-control/built-in-roles).
    assert "4633458b-17de-408a-b874-0445c86b69e6" in role["properties"]["roleDefinitionId"]
    # On the one secret, never the vault: the portal's users must not reach the Slurm database password through it.
    assert role["scope"] == "Microsoft.KeyVault/vaults/kv-aitrain-prod-eus2-a1/secrets/ood-client-secret"
    assert "'Microsoft.KeyVault/vaults/secrets', 'kv-aitrain-prod-eus2-a1', 'ood-client-secret'" in role["name"]
    assert ".identity.principalId" in role["properties"]["principalId"]
    # Nobody else reads it: the nodes' compute identity holds the config's other secrets, not the portal's.
    others = [
        r for d in plan.deployments for r in d.template["resources"]
        if r["type"] == "Microsoft.Authorization/roleAssignments" and "ood-client-secret" in str(r.get("scope"))
    ]  # fmt: skip
    assert others == []
    # The secret itself travels only as the identity deployment's secureString parameter.
    identity = next(d for d in plan.deployments if d.component == "identity")
    assert identity.secure_parameters[SECRET_PARAMETER] == "identity.key_vault.secrets.ood-client-secret"
    assert portal.secure_parameters == {}


@pytest.mark.parametrize("edit", [None, _with_secret], ids=["id-token", "client-secret"])
def test_portal_scripts_pass_shellcheck(edit: Any, tmp_path: Path) -> None:
    """The same check as every node script (tests/render/test_node_portability.py), and the helpers it writes."""
    plan = preset_plan("ai-training") if edit is None else variant("ai-training", edit)
    script = _script(_portal(plan))
    bodies = re.findall(r"<<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", script, flags=re.S | re.M)
    for index, text in enumerate([script, *[b for b in bodies if b.startswith("#!/bin/bash")]]):
        path = tmp_path / f"portal{index}.sh"
        path.write_text(text, encoding="utf-8")
        checked = _shellcheck(path)
        assert checked.returncode == 0, checked.stdout


def _fetch_key(script: str) -> str:
    return script[script.index("fetch_key() {") : script.index("\n}\n", script.index("fetch_key() {")) + 3]


def _key(home: Path) -> tuple[Path, str]:
    """A throwaway signing key, armored as a repository publishes it."""
    env = {"GNUPGHOME": str(home), "PATH": "/usr/bin:/bin"}
    home.mkdir(mode=0o700)
    subprocess.run(
        [
            "gpg",
            "--batch",
            "--passphrase",
            "",
            "--quick-gen-key",
            "repo <repo@example.com>",
            "ed25519",
            "sign",
            "never",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    listing = subprocess.run(
        ["gpg", "--with-colons", "--list-keys"], env=env, check=True, capture_output=True, text=True
    )
    fingerprint = next(line.split(":")[9] for line in listing.stdout.splitlines() if line.startswith("fpr"))
    armored = home.parent / f"{home.name}.asc"
    armored.write_bytes(subprocess.run(["gpg", "--armor", "--export"], env=env, check=True, capture_output=True).stdout)
    return armored, fingerprint


def test_a_repository_key_with_another_fingerprint_is_refused(gpg_dir: Path) -> None:
    """The check runs for real: curl fetches the key, gpg reads its fingerprint, a mismatch stops the boot."""
    require(shutil.which("gpg") is not None and shutil.which("curl") is not None, "gpg and curl")
    armored, fingerprint = _key(gpg_dir / "gnupg")
    function = _fetch_key(_script(_portal(preset_plan("ai-training"))))
    env = {"GNUPGHOME": str(gpg_dir / "gnupg"), "PATH": "/usr/bin:/bin", "TMPDIR": str(gpg_dir)}

    def run(expected: str, keyring: Path) -> subprocess.CompletedProcess[str]:
        call = f"{function}\nfetch_key file://{armored} {expected} {keyring}\n"
        return subprocess.run(["bash", "-euo", "pipefail", "-c", call], env=env, capture_output=True, text=True)

    wrong = run("FE143EA1CB378B569BBF7C544B72FE2B92D31755", gpg_dir / "wrong.gpg")
    assert wrong.returncode == 1 and "refusing it" in wrong.stderr
    assert not (gpg_dir / "wrong.gpg").exists()
    right = run(fingerprint, gpg_dir / "right.gpg")
    assert right.returncode == 0, right.stderr
    exported = (gpg_dir / "right.gpg").read_bytes()
    assert exported[:1] != b"-"  # binary, what apt's signed-by reads
    shown = subprocess.run(
        ["gpg", "--show-keys", "--with-colons", str(gpg_dir / "right.gpg")], env=env, capture_output=True, text=True
    )
    assert f":{fingerprint}:" in shown.stdout


@pytest.mark.checkov
def test_all_gates_pass_on_the_portal_with_a_secret_and_private_ranges() -> None:
    """The variant the presets do not show (vault reader, server name, allowed ranges) through schema, lint and
    checkov, on the portal deployment alone (checkov's start-up dominates)."""
    from hpclz.arm import checkov_gate
    from hpclz.gates import Gate, check_plan
    from tests.arm.support import require_schemas

    require_schemas()
    require(checkov_gate.find_checkov() is not None, "checkov")
    plan = variant("ai-training", _with_secret)
    only = plan.model_copy(update={"deployments": [_portal(plan)]})
    report = check_plan(only)
    assert report.ran == [Gate.SCHEMA, Gate.LINT, Gate.CHECKOV]
    # HPCLZ-TPL-031 (an allowlist entry nothing matched) speaks of the whole plan, not of one deployment.
    found = [f for f in report.findings if f.rule_id != "HPCLZ-TPL-031"]
    assert found == [], [f"{f.rule_id} {f.path}: {f.message}" for f in found]


def _heredoc(script: str, target: str) -> str:
    start = script.index(f"cat > {target} <<'HPCLZ_EOF'\n") + len(f"cat > {target} <<'HPCLZ_EOF'\n")
    return script[start : script.index("\nHPCLZ_EOF\n", start)]


def test_the_portal_and_cluster_files_are_the_yaml_open_ondemand_reads() -> None:
    from ruamel.yaml import YAML

    script = _script(_portal(preset_plan("ai-training")))
    portal = YAML(typ="safe").load(_heredoc(script, "/etc/ood/config/ood_portal.yml"))
    assert portal["auth"] == ["AuthType openid-connect", "Require valid-user"]
    assert portal["oidc_uri"] == "/oidc" and portal["port"] == 443
    # The user map is a Lua pattern; test_the_user_map_is_a_lua_pattern_that_lower_cases_the_upns_user runs it.
    assert portal["user_map_match"].endswith(":lower")
    assert portal["oidc_settings"]["OIDCResponseType"] == "id_token"
    cluster = YAML(typ="safe").load(_heredoc(script, "/etc/ood/config/clusters.d/aitrain-prod.yml"))
    assert cluster["v2"]["job"] == {"adapter": "slurm", "bin": "/usr/bin", "conf": "/etc/slurm/slurm.conf"}


ETC_SLURM = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "cyclecloud-slurm" / "etc-slurm-4.0.9.json").read_text(
        encoding="utf-8"
    )
)


def _join_script(tmp_path: Path) -> Path:
    """hpclz-portal-join as rendered, with /sched, munge's key and /etc/slurm moved under tmp_path."""
    script = _script(_portal(preset_plan("ai-training")))
    body = (
        _heredoc(script, "/opt/hpclz/bin/hpclz-portal-join")
        .replace("/sched/", f"{tmp_path}/sched/")
        .replace("/etc/munge/munge.key", f"{tmp_path}/etc/munge.key")
        .replace("/etc/slurm", f"{tmp_path}/etc/slurm")
        .replace("-o munge -g munge ", "")  # ownership needs the munge account, which this machine may lack
        .replace("systemctl restart munge", "echo restart munge")
    )
    join = tmp_path / "join.sh"
    join.write_text(body, encoding="utf-8")
    (tmp_path / "etc").mkdir()
    return join


def _free_port() -> int:
    with tcp_socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_join_unit_waits_for_sched_then_copies_the_key_and_links_the_config(tmp_path: Path) -> None:
    """hpclz-portal-join run for real on a /sched laid out as cyclecloud-slurm 4.0.9's scheduler leaves it
    (tests/fixtures/cyclecloud-slurm/etc-slurm-4.0.9.json: /sched/<cluster>/munge.key, slurm.conf and the files
    every node links into /etc/slurm), moved under tmp_path."""
    join = _join_script(tmp_path)
    cluster = tmp_path / "sched" / "aitrain-prod"
    cluster.mkdir(parents=True)

    waiting = subprocess.run(["bash", str(join)], capture_output=True, text=True, check=False)
    assert waiting.returncode == 1 and "not ready yet" in waiting.stdout  # systemd retries it a minute later

    (cluster / "munge.key").write_bytes(bytes(range(256)) * 4)  # 1024 bytes, as install.py writes it
    linked = ETC_SLURM["links"]["files"]
    for name in linked:
        (cluster / name).write_text(f"# {name}\n", encoding="utf-8")
    joined = subprocess.run(["bash", str(join)], capture_output=True, text=True, check=False)
    assert joined.returncode == 0, joined.stderr
    key = tmp_path / "etc" / "munge.key"
    assert key.read_bytes() == (cluster / "munge.key").read_bytes() and oct(key.stat().st_mode)[-3:] == "600"
    etc = tmp_path / "etc" / "slurm"
    links = {p.name: p.resolve() for p in etc.iterdir() if p.is_symlink()}
    # cyclecloud-slurm's links, and topology.yaml, which hpclz-topology writes beside them from Slurm 25.05.
    assert links == {n: cluster / n for n in linked if n != "slurm.conf"} | {"topology.yaml": cluster / "topology.yaml"}
    # slurm.conf is the portal's own: the cluster's, then srun's ports (test_srun_ports.py runs it).
    own = etc / "slurm.conf"
    assert not own.is_symlink()
    assert own.read_text(encoding="utf-8") == f"Include {cluster / 'slurm.conf'}\nSrunPortRange=60001-63000\n"
    assert {p.name for p in etc.iterdir()} == set(linked) | {"topology.yaml", "plugstack.conf.d"}
    # pyxis as the login node loads it, from where a login node publishes it (the pyxis tests below).
    published = tmp_path / "sched" / "aitrain-prod" / "hpclz" / "pyxis"
    assert (etc / "plugstack.conf.d" / "pyxis.conf").read_text(encoding="utf-8") == f"include {published}/*.conf\n"
    assert "joined cluster aitrain-prod" in joined.stdout


def test_a_slurm_command_on_the_joined_portal_reads_every_file_slurm_conf_includes(tmp_path: Path) -> None:
    """cyclecloud-slurm's slurm.conf Includes azure.conf, accounting.conf, keep_alive.conf and site_specific.conf
    (etc-slurm-4.0.9.json); a real Slurm client (Debian's slurm-wlm) reading the joined /etc/slurm must get past
    them to the controller. Missing one, it retries for 60 s and stops: "s_p_parse_file: cannot stat file"."""
    require(shutil.which("sinfo") is not None, "Slurm client commands (slurm-wlm)")
    join = _join_script(tmp_path)
    cluster = tmp_path / "sched" / "aitrain-prod"
    cluster.mkdir(parents=True)
    (cluster / "munge.key").write_bytes(bytes(range(256)) * 4)
    includes = "".join(f"Include {name}\n" for name in ETC_SLURM["slurm_conf_includes"]["files"])
    # No controller listens on a port just found free on loopback: the command must get as far as asking it.
    conf = f"ClusterName=aitrain-prod\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={_free_port()}\n{includes}"
    (cluster / "slurm.conf").write_text(conf, encoding="utf-8")
    # The join may run between the scheduler writing slurm.conf and the files it Includes (install.py writes
    # slurm.conf at l.529-530, the others at l.579-645, accounting.conf after them, l.1155-1158): it joins then.
    assert subprocess.run(["bash", str(join)], capture_output=True, text=True, check=False).returncode == 0
    for name in ETC_SLURM["links"]["files"]:
        if name != "slurm.conf":
            (cluster / name).write_text("\n", encoding="utf-8")
    # plugstack.conf as install.py writes it (l.631-638); the portal has no plugstack.conf.d of its own.
    (cluster / "plugstack.conf").write_text(f"include {tmp_path}/etc/slurm/plugstack.conf.d/*\n", encoding="utf-8")
    env = {**os.environ, "SLURM_CONF": str(tmp_path / "etc" / "slurm" / "slurm.conf")}
    # sinfo reads slurm.conf and its Includes; sbatch (what Open OnDemand submits with) reads plugstack.conf too.
    for command in (["sinfo"], ["sbatch", "--wrap", "hostname"]):
        ran = subprocess.run(command, capture_output=True, text=True, check=False, env=env, timeout=90, cwd=tmp_path)
        assert "cannot stat file" not in ran.stderr and "Parse error" not in ran.stderr, ran.stderr
        assert "Unable to contact slurm controller" in ran.stderr, ran.stderr


def test_only_the_pinned_key_of_a_file_holding_two_is_trusted(gpg_dir: Path) -> None:
    """A key file with a second key appended (a tampered download) yields a keyring of the pinned key alone."""
    require(shutil.which("gpg") is not None and shutil.which("curl") is not None, "gpg and curl")
    pinned, fingerprint = _key(gpg_dir / "pinned")
    other, other_fingerprint = _key(gpg_dir / "other")
    both = gpg_dir / "both.asc"
    both.write_bytes(pinned.read_bytes() + other.read_bytes())
    function = _fetch_key(_script(_portal(preset_plan("ai-training"))))
    env = {"GNUPGHOME": str(gpg_dir / "pinned"), "PATH": "/usr/bin:/bin", "TMPDIR": str(gpg_dir)}
    call = f"{function}\nfetch_key file://{both} {fingerprint} {gpg_dir / 'apt.gpg'}\n"
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", call], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(
        ["gpg", "--show-keys", "--with-colons", str(gpg_dir / "apt.gpg")], env=env, capture_output=True, text=True
    ).stdout
    assert f":{fingerprint}:" in shown and f":{other_fingerprint}:" not in shown


def test_the_portal_is_a_service_vm_in_the_service_zone_patched_in_the_window() -> None:
    """Zones and patching for the portal, as for the CycleCloud server: the service zone, platform-orchestrated
    guest patches, and the InGuestPatch maintenance configuration assigned to it (the portal deploys after it)."""
    portal = _portal(preset_plan("ai-training"))
    (vm,) = _of(portal, "Microsoft.Compute/virtualMachines")
    assert vm["zones"] == ["1"]
    assert vm["properties"]["osProfile"]["linuxConfiguration"]["patchSettings"]["patchMode"] == "AutomaticByPlatform"
    (assignment,) = _of(portal, "Microsoft.Maintenance/configurationAssignments")
    assert assignment["scope"] == "Microsoft.Compute/virtualMachines/vm-aitrain-ood-prod-eus2"
    assert "'mc-aitrain-prod-eus2')]" in assignment["properties"]["maintenanceConfigurationId"]
    assert any(name.endswith("-maintenance") for name in portal.depends_on)


def test_without_a_window_or_zone_the_portal_is_neither_zonal_nor_scheduled() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["maintenance"].pop("window")
        data["compute"].pop("service_zone")

    portal = _portal(variant("ai-training", edit))
    (vm,) = _of(portal, "Microsoft.Compute/virtualMachines")
    assert "zones" not in vm
    assert "patchSettings" not in vm["properties"]["osProfile"]["linuxConfiguration"]
    assert not _of(portal, "Microsoft.Maintenance/configurationAssignments")


@pytest.mark.parametrize("preset", ["ai-training", "energy"])
def test_the_shell_app_opens_the_first_login_node_by_the_host_name_it_takes(preset: str) -> None:
    """OOD's shell app needs the cluster's `login.host` (osc.github.io/ood-documentation/latest/installation/
    add-cluster-config.html). The login nodearray carries cyclecloud-slurm's stock prefix, `<cluster>-`
    (Azure/cyclecloud-slurm@50e6739:templates/slurm.txt l.198), so login-1 renames itself `<cluster>-login-1`
    (azure-slurm-install/install.py l.1027-1039), and that is the host the portal's cluster file names."""
    from ruamel.yaml import YAML

    from tests.render.test_cloudinit import _nodearrays

    plan = preset_plan(preset)
    script = _script(_portal(plan))
    found = re.search(r"^cfg=/sched/(\S+)$", script, flags=re.M)
    assert found is not None
    cluster = found.group(1)
    config = YAML(typ="safe").load(_heredoc(script, f"/etc/ood/config/clusters.d/{cluster}.yml"))
    assert config["v2"]["login"] == {"host": f"{cluster}-login-1"}
    compute = next(d for d in plan.deployments if "cyclecloud/slurm-cluster.txt" in d.artifacts)
    login = _nodearrays(compute.artifacts["cyclecloud/slurm-cluster.txt"])["login"]
    assert f'slurm.node_prefix = "{cluster}-"' in login
    assert "slurm.use_nodename_as_hostname = true" in login


def test_without_login_nodes_the_cluster_file_names_no_login_host() -> None:
    """compute.login.count 0: CycleCloud starts no login node, so there is no host for the shell app to open."""
    from ruamel.yaml import YAML

    def edit(data: dict[str, Any]) -> None:
        data["compute"].setdefault("login", {"vm_size": "Standard_D8as_v5"})["count"] = 0

    script = _script(_portal(variant("ai-training", edit)))
    config = YAML(typ="safe").load(_heredoc(script, "/etc/ood/config/clusters.d/aitrain-prod.yml"))
    assert "login" not in config["v2"]
    assert config["v2"]["job"]["adapter"] == "slurm"


def _subnet_cidrs(preset: str) -> dict[str, str]:
    from hpclz.config.loader import load_config

    subnets = load_config(Path(__file__).resolve().parents[2] / "configs" / f"{preset}.yaml").config.network.vnet
    return {role: str(getattr(subnets.subnets, role).cidr) for role in ("admin", "compute")}


@pytest.mark.parametrize("preset", ["ai-training", "energy"])
def test_slurm_reaches_srun_on_the_portal_on_the_pinned_range_only(preset: str) -> None:
    """srun and salloc typed on the portal listen for slurmctld and slurmstepd (slurm.conf(5), SrunPortRange;
    slurm.schedmd.com/network.html): the portal's own slurm.conf pins the range after the cluster's, and the
    portal's NSG lets exactly that range in, TCP, from the scheduler's (admin) and the nodes' (compute) subnets.
    The cluster's slurm.conf is left as cyclecloud-slurm writes it (tests/slurm/test_srun_ports.py runs the result)."""
    plan = preset_plan(preset)
    (nsg,) = _of(_portal(plan), "Microsoft.Network/networkSecurityGroups")
    rules = {r["name"]: r["properties"] for r in nsg["properties"]["securityRules"]}
    srun = rules["AllowSlurmToSrun"]
    cidrs = _subnet_cidrs(preset)
    assert srun["sourceAddressPrefixes"] == [cidrs["admin"], cidrs["compute"]]
    assert (srun["protocol"], srun["direction"], srun["access"]) == ("Tcp", "Inbound", "Allow")
    assert srun["destinationPortRange"] == "60001-63000"
    assert srun["priority"] < rules["DenyAllInbound"]["priority"]
    join = _heredoc(_script(_portal(plan)), "/opt/hpclz/bin/hpclz-portal-join")
    assert "printf 'Include %s\\nSrunPortRange=%s\\n' \"$cfg/slurm.conf\" 60001-63000 >" in join
    compute = next(d for d in plan.deployments if "cyclecloud/slurm-params.json" in d.artifacts)
    assert "SrunPortRange" not in json.loads(compute.artifacts["cyclecloud/slurm-params.json"])["HpclzSlurmConfig"]


def _execute_arrays(cluster: str) -> dict[str, int]:
    """The rendered cluster template's execute nodearrays (one per partition) and their MaxCount."""
    parts = re.split(r"^    \[\[nodearray ([^\]]+)\]\]$", cluster, flags=re.M)
    arrays = dict(zip(parts[1::2], parts[2::2], strict=True))
    return {
        name: int(re.search(r"^    MaxCount = (\d+)$", text, flags=re.M).group(1))  # type: ignore[union-attr]
        for name, text in arrays.items()
        if "slurm.role = execute" in text
    }


@pytest.mark.parametrize("preset", ["ai-training", "energy"])
def test_host_regex_lets_the_proxy_reach_every_partitions_nodes_and_nothing_else(preset: str) -> None:
    from ruamel.yaml import YAML

    plan = preset_plan(preset)
    script = _script(_portal(plan))
    # The settings travel in the portal VM's userData, which hpclz-portal-proxy writes into ood_portal.yml.
    (vm,) = _of(_portal(plan), "Microsoft.Compute/virtualMachines")
    portal = json.loads(base64.b64decode(vm["properties"]["userData"]))
    assert portal["kind"] == "hpclz-portal-proxy"
    assert (portal["node_uri"], portal["rnode_uri"]) == ("/node", "/rnode")
    regex = portal["host_regex"]
    (compute,) = [d for d in plan.deployments if d.component == "compute"]
    cluster = compute.artifacts["cyclecloud/slurm-cluster.txt"]
    # cyclecloud-slurm names a node <slurm.node_prefix><nodearray>-<i>, i = 1..MaxCount (Azure/cyclecloud-slurm@50e6739
    # azure-slurm/slurmcc/partition.py l.193-209); the rendered template sets no prefix, so the names below are the
    # host names (slurm.use_nodename_as_hostname) of every node every partition can have. Only the login nodearray
    # carries a prefix (the portal's shell opens <cluster>-login-1).
    parts = re.split(r"^    \[\[nodearray ([^\]]+)\]\]$", cluster, flags=re.M)
    prefixed = {name for name, text in zip(parts[1::2], parts[2::2], strict=True) if "slurm.node_prefix" in text}
    assert prefixed == {"login"}, prefixed
    arrays = _execute_arrays(cluster)
    assert len(arrays) >= 2
    for array, max_count in arrays.items():
        for i in range(1, max_count + 1):
            # OOD puts host_regex between `/node/` and `/<port>` in an Apache LocationMatch (ood-portal.conf.erb l.236):
            # the whole host segment must match.
            assert re.fullmatch(regex, f"{array}-{i}"), f"{array}-{i}"
        assert not re.fullmatch(regex, f"{array}-0")
        assert not re.fullmatch(regex, f"{array}-{10 ** len(str(max(arrays.values())))}")
        assert not re.fullmatch(regex, f"{array}-1.attacker.example")
        assert not re.fullmatch(regex, f"{array}1-1")
    for other in ("login-1", "scheduler", "localhost", "169.254.169.254", "10.40.0.4", "login.microsoftonline.com"):
        assert not re.fullmatch(regex, other), other
    # The way Apache applies it: OOD's LocationMatch for node_uri, `^<node_uri>/(?<host><host_regex>)/(?<port>\d+)`
    # (ood-portal.conf.erb l.236; Python spells a named group (?P<...>)), for a few request paths.
    location = re.compile(rf"^{portal['node_uri']}/(?P<host>{regex})/(?P<port>\d+)")
    first = next(iter(arrays))
    assert location.match(f"/node/{first}-1/8888/lab").group("host") == f"{first}-1"  # type: ignore[union-attr]
    for path in (f"/node/{first}-1.attacker.example/8888", "/node/login-1/22", "/node/10.40.0.4/80", "/node/x/1"):
        assert location.match(path) is None, path
    # The session publishes the node's short host name, the form host_regex matches.
    cluster_file = YAML(typ="safe").load(_heredoc(script, f"/etc/ood/config/clusters.d/{_cluster_name(script)}.yml"))
    assert cluster_file["v2"]["batch_connect"] == {
        "basic": {"set_host": "host=$(hostname -s)"},
        "vnc": {"set_host": "host=$(hostname -s)"},
    }


def _cluster_name(script: str) -> str:
    match = re.search(r"cat > /etc/ood/config/clusters\.d/([^ ]+)\.yml <<", script)
    assert match is not None
    return match.group(1)


def _ood_allowed_hosts(portal: dict[str, Any], addresses: list[str], fqdn: str) -> list[str]:
    """OOD_ALLOWED_HOSTS as Open OnDemand 4.1.4 builds it from ood_portal.yml (OSC/ondemand@6b54ef1, tag v4.1.4,
    ood-portal-generator/lib/ood_portal_generator/view.rb l.25-29 and l.127-167): servername, or without one the VM's
    non-loopback IPv4 addresses; then proxy_server (default: servername, or the FQDN); then server_aliases."""
    servername = portal.get("servername")
    hosts = [servername] if servername else list(addresses)
    hosts.append(portal.get("proxy_server", servername or fqdn))
    hosts += portal.get("server_aliases", [])
    return sorted(set(hosts))


def _rails_allows(allowed: list[str], host: str) -> bool:
    """Rails' HostAuthorization for string entries: the name, then an optional port, case-insensitive
    (rails/rails@01e6c58 actionpack/lib/action_dispatch/middleware/host_authorization.rb, sanitize_string)."""
    return any(re.fullmatch(rf"{re.escape(name)}(?::\d+)?", host, re.IGNORECASE) for name in allowed)


def _redirected(portal: dict[str, Any], fqdn: str, host: str) -> bool:
    """The canonical-name rewrite ood-portal.conf.erb l.86-92 renders when servername is set: a request is sent to
    https://<proxy_server>:<port> unless its Host is `<alias>(:<port>)?` or `<proxy_server>(:<port>)?`."""
    servername = portal.get("servername")
    if not servername:
        return False
    names = [*portal.get("server_aliases", []), portal.get("proxy_server", servername)]
    port = portal["port"]
    return not any(re.fullmatch(f"({name}(:{port})?)?", host, re.IGNORECASE) for name in names)


@pytest.mark.parametrize("edit", [None, _with_secret], ids=["no-server-name", "server-name"])
def test_the_dashboard_answers_the_bastion_tunnels_host(edit: Any) -> None:
    """The documented way in is `az network bastion tunnel ... --port 9443`, then https://localhost:9443: the browser
    sends `Host: localhost:9443`, which Apache passes to the dashboard (ProxyPreserveHost On). Without server_aliases
    Open OnDemand allows only the VM's addresses and FQDN (or servername) and Rails answers 403 "Blocked host"; with a
    servername Apache also redirects it to https://<servername>:443. A host that is none of these stays refused."""
    from ruamel.yaml import YAML

    plan = preset_plan("ai-training") if edit is None else variant("ai-training", edit)
    portal = YAML(typ="safe").load(_heredoc(_script(_portal(plan)), "/etc/ood/config/ood_portal.yml"))
    fqdn = "aitrain-prod-ood.internal.cloudapp.net"
    allowed = _ood_allowed_hosts(portal, ["10.20.0.36"], fqdn)
    assert _rails_allows(allowed, "localhost:9443")
    assert not _redirected(portal, fqdn, "localhost:9443")
    assert not _rails_allows(allowed, "evil.example.com") and not _rails_allows(allowed, "localhost.evil.example.com")
    if edit is not None:
        assert portal["servername"] == "ood.hpc.example.com"
        assert _rails_allows(allowed, "ood.hpc.example.com") and not _redirected(portal, fqdn, "ood.hpc.example.com")
        assert _redirected(portal, fqdn, "10.20.0.36")  # by address: sent to the name, as OOD intends


# Open OnDemand's user map as mod_ood_proxy runs it (OSC/ondemand@6b54ef1, tag v4.1.4, mod_ood_proxy/lib/ood/
# user_map.lua, map): a `:lower` suffix strips off and lower-cases the match, else the match is the user; no match
# (or Lua's error on lower-casing none) maps nobody. Apache's mod_lua runs Lua 5.3 on Debian and Ubuntu (apache2-bin
# depends on liblua5.3-0).
LUA_MAP = """
local user_map_match, remote_user = arg[1], arg[2]
local ok, sys_user = pcall(function()
  local pat = string.match(user_map_match, "^(.*):lower$")
  if pat then
    return string.lower(string.match(remote_user, pat))
  end
  return string.match(remote_user, user_map_match)
end)
io.write(ok and sys_user or "")
"""


def _lua_map(pattern: str, upn: str) -> str:
    ran = subprocess.run(["lua5.3", "-", pattern, upn], input=LUA_MAP, capture_output=True, text=True, check=True)
    return ran.stdout


def test_the_user_map_is_a_lua_pattern_that_lower_cases_the_upns_user() -> None:
    """Open OnDemand matches user_map_match with Lua's string.match ("Lua regular expression",
    ood_portal_example.yml l.142-147), where a backslash is an ordinary character: the pattern must map the tenant's
    users, first.last and capitalised ones to the lower-case names hpclz-portal-users gives their homes
    (tests/render/test_portal_users.py), and nobody of another domain."""
    require(shutil.which("lua5.3") is not None, "Lua 5.3 (lua5.3), the Lua Apache's mod_lua runs")
    from ruamel.yaml import YAML

    script = _script(_portal(preset_plan("ai-training")))
    pattern = YAML(typ="safe").load(_heredoc(script, "/etc/ood/config/ood_portal.yml"))["user_map_match"]
    assert _lua_map(pattern, "alice@contosoai.onmicrosoft.com") == "alice"
    assert _lua_map(pattern, "john.smith@contosoai.onmicrosoft.com") == "john.smith"
    assert _lua_map(pattern, "John.Smith@contosoai.onmicrosoft.com") == "john.smith"
    assert _lua_map(pattern, "MARY_ANN-2@ContosoAI.onmicrosoft.com") == "mary_ann-2"
    for stranger in (
        "alice@contosoai.onmicrosoft.community",
        "alice@contosoaixonmicrosoft.com",
        "alice@evil.example.com",
        "alice@contosoai.onmicrosoft.com@evil.example.com",
        "alice",
    ):
        assert _lua_map(pattern, stranger) == "", stranger


@pytest.mark.parametrize("preset", ["ai-training", "energy"])
def test_the_desktop_app_nothing_can_run_is_hidden_once_the_package_is_in(preset: str) -> None:
    """bc_desktop, the ondemand package's only interactive app, wants a VNC desktop on a compute node, which no node
    has: the boot script makes its folder unreadable to users, as CCWS's portal does, after the package put it there
    (a chmod before would fail under set -e, and a later package install would not undo it: ondemand is held)."""
    script = _script(_portal(preset_plan(preset)))
    install = script.index("apt-get install -y ondemand=4.1.4\n")
    hide = script.index("\nchmod 0600 /var/www/ood/apps/sys/bc_desktop\n")
    assert install < script.index("apt-mark hold ondemand") < hide < script.index("systemctl restart apache2")
    assert "apps/sys/bc_vscode" not in script and "git clone" not in script  # no app is fetched at boot


def _login_script(preset: str) -> str:
    plan = preset_plan(preset)
    cluster = next(d for d in plan.deployments if "cyclecloud/slurm-cluster.txt" in d.artifacts)
    scripts = re.findall(r"CloudInit = '''(.*?)'''", cluster.artifacts["cyclecloud/slurm-cluster.txt"], flags=re.S)
    (login,) = [script for script in scripts if "hpclz login node setup done" in script]
    return str(login)


def _publish_script(tmp_path: Path) -> Path:
    """hpclz-pyxis-publish as the login node's boot script writes it, with /opt/pyxis and /sched under tmp_path."""
    body = (
        _heredoc(_login_script("ai-training"), "/opt/hpclz/bin/hpclz-pyxis-publish")
        .replace("/opt/pyxis/", f"{tmp_path}/opt/pyxis/")
        .replace("/sched/", f"{tmp_path}/sched/")
    )
    publish = tmp_path / "publish.sh"
    publish.write_text(body, encoding="utf-8")
    return publish


def test_a_login_node_publishes_the_pyxis_plugin_it_built_for_the_portal(tmp_path: Path) -> None:
    """hpclz-pyxis-publish run for real: nothing until cyclecloud-slurm has built the plugin, then a byte-for-byte
    copy and the plugstack line that loads it where the portal's pyxis.conf includes them, then nothing more while
    they are unchanged; a rebuilt plugin is published again."""
    publish = _publish_script(tmp_path)
    checked = _shellcheck(publish)
    assert checked.returncode == 0, checked.stdout
    built = tmp_path / "opt" / "pyxis" / "spank_pyxis.so"
    folder = tmp_path / "sched" / "aitrain-prod" / "hpclz" / "pyxis"

    early = subprocess.run(["bash", str(publish)], capture_output=True, text=True, check=False)
    assert early.returncode == 0 and "not built yet" in early.stdout and not folder.exists()
    built.parent.mkdir(parents=True)
    built.write_bytes(b"\x7fELF" + bytes(range(256)))
    done = subprocess.run(["bash", str(publish)], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "published" in done.stdout, done.stderr
    target = folder / "spank_pyxis.so"
    assert target.read_bytes() == built.read_bytes() and oct(target.stat().st_mode)[-3:] == "644"
    assert (folder / "pyxis.conf").read_text(encoding="utf-8") == f"optional {target}\n"
    assert sorted(p.name for p in folder.iterdir()) == ["pyxis.conf", "spank_pyxis.so"]  # nothing half-written left
    again = subprocess.run(["bash", str(publish)], capture_output=True, text=True, check=False)
    assert again.returncode == 0 and again.stdout == ""
    built.write_bytes(b"\x7fELF rebuilt")
    rebuilt = subprocess.run(["bash", str(publish)], capture_output=True, text=True, check=False)
    assert "published" in rebuilt.stdout and target.read_bytes() == b"\x7fELF rebuilt"
    joined = _heredoc(_script(_portal(preset_plan("ai-training"))), "/opt/hpclz/bin/hpclz-portal-join")
    assert "printf 'include %s\\n' '/sched/aitrain-prod/hpclz/pyxis/*.conf'" in joined


def test_turning_the_portal_on_or_off_leaves_the_clusters_template_alone() -> None:
    """Login nodes publish pyxis whether or not a portal loads it: the portal comes and goes (tests/deploy/
    test_day2.py, "turn the portal off": hpclz deletes its resources and writes nothing else) without a change to the
    cluster's nodes."""
    assert "hpclz-pyxis-publish" in _login_script("ai-training")

    def cluster(plan: DeploymentPlan) -> str:
        return next(d for d in plan.deployments if "cyclecloud/slurm-cluster.txt" in d.artifacts).artifacts[
            "cyclecloud/slurm-cluster.txt"
        ]

    def off(data: dict[str, Any]) -> None:
        data["portal"]["enabled"] = False

    assert cluster(variant("ai-training", off)) == cluster(preset_plan("ai-training"))


# A SPANK plugin that registers pyxis's --container-image option and nothing else, standing in for pyxis (built by
# cyclecloud-slurm on the nodes from sources this machine does not have): what sbatch needs to know the option. Like
# pyxis it registers the option from slurm_spank_init, since sbatch and salloc never read a static spank_options
# table ("Do not load static plugin options table in allocator context": SchedMD/slurm slurm-22-05-8-1
# src/common/plugstack.c l.371-375).
STAND_IN = """
#include <stddef.h>
#include <slurm/spank.h>
SPANK_PLUGIN(pyxis, 1);
static int image(int val, const char *optarg, int remote) { return 0; }
static struct spank_option container_image = {"container-image", "IMAGE", "stand-in for pyxis", 1, 0, image};
int slurm_spank_init(spank_t sp, int ac, char **av) { return spank_option_register(sp, &container_image); }
"""


def test_the_portals_sbatch_takes_container_jobs_once_a_login_node_published_pyxis(tmp_path: Path) -> None:
    """Slurm 22.05's sbatch on the joined portal's /etc/slurm, the cluster's plugstack.conf as install.py writes it
    (include /etc/slurm/plugstack.conf.d/*, l.631-638): with nothing published the portal's pyxis.conf includes
    nothing and plain jobs go on as before, while `#SBATCH --container-image` is refused ("unrecognized option");
    once a login node has published its plugin (hpclz-pyxis-publish, run for real), sbatch loads it and takes the
    option."""
    require(shutil.which("sbatch") is not None, "Slurm client commands (slurm-wlm)")
    require(
        shutil.which("gcc") is not None and Path("/usr/include/slurm/spank.h").exists(),
        "gcc and spank.h (libslurm-dev)",
    )
    join = _join_script(tmp_path)
    cluster = tmp_path / "sched" / "aitrain-prod"
    cluster.mkdir(parents=True)
    (cluster / "munge.key").write_bytes(bytes(range(256)) * 4)
    conf = f"ClusterName=aitrain-prod\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={_free_port()}\n"
    (cluster / "slurm.conf").write_text(conf, encoding="utf-8")
    (cluster / "plugstack.conf").write_text(f"include {tmp_path}/etc/slurm/plugstack.conf.d/*\n", encoding="utf-8")
    assert subprocess.run(["bash", str(join)], capture_output=True, text=True, check=False).returncode == 0
    env = {**os.environ, "SLURM_CONF": str(tmp_path / "etc" / "slurm" / "slurm.conf")}
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/bash\nhostname\n", encoding="utf-8")
    container = tmp_path / "container.sh"
    container.write_text("#!/bin/bash\n#SBATCH --container-image=ubuntu:22.04\nhostname\n", encoding="utf-8")

    def sbatch(job: Path) -> str:
        ran = subprocess.run(["sbatch", str(job)], capture_output=True, text=True, check=False, env=env, timeout=90)
        return ran.stderr

    # Nothing published (no login node, or not yet): plain jobs go on, without a word about pyxis.
    before = sbatch(plain)
    assert before.strip() == "sbatch: error: Batch job submission failed: Unable to contact slurm controller " + (
        "(connect failure)"
    ), before
    assert "unrecognized option '--container-image=ubuntu:22.04'" in sbatch(container)

    # A login node builds the plugin (here the stand-in) and publishes it with the real hpclz-pyxis-publish.
    source = tmp_path / "stand_in.c"
    source.write_text(STAND_IN, encoding="utf-8")
    built = tmp_path / "opt" / "pyxis" / "spank_pyxis.so"
    built.parent.mkdir(parents=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(built), str(source)], check=True, timeout=120)
    published = subprocess.run(["bash", str(_publish_script(tmp_path))], capture_output=True, text=True, check=False)
    assert "published" in published.stdout, published.stderr
    accepted = sbatch(container)
    assert "unrecognized option" not in accepted and "Unable to contact slurm controller" in accepted, accepted
    assert "spank" not in accepted and "plugin" not in accepted, accepted  # loaded without complaint
