#!/bin/bash
# hpclz: the Open OnDemand portal (portal.*), run once by cloud-init at first boot (customData).
# It does what CCWS's portal project does (Azure/cyclecloud-open-ondemand specs/default/cluster-init/files/playbooks/
# ood.yml) and joins the Slurm cluster the way a cyclecloud-slurm node does, through /sched.
set -euo pipefail
exec > >(tee -a /var/log/hpclz-portal-setup.log) 2>&1
export DEBIAN_FRONTEND=noninteractive
mkdir -p /etc/hpclz /opt/hpclz/bin /etc/apt/keyrings

# The cluster's munge and slurm accounts, with cyclecloud-slurm's ids, before any package creates them with others.
getent group munge >/dev/null || groupadd -g 11101 munge
id munge >/dev/null 2>&1 || useradd -r -u 11101 -g 11101 -d /var/lib/munge -s /usr/sbin/nologin munge
getent group slurm >/dev/null || groupadd -g 11100 slurm
id slurm >/dev/null 2>&1 || useradd -r -u 11100 -g 11100 -d /var/lib/slurm -s /usr/sbin/nologin slurm

apt-get update
apt-get install -y ca-certificates curl gnupg nfs-common openssl python3

# A repository key is trusted only by its pinned fingerprint: imported into a throwaway keyring, and only the key
# with that fingerprint is exported for apt (signed-by), whatever else the file holds, armored or not.
fetch_key() {
  local url=$1 fingerprint=$2 keyring=$3 home
  home=$(mktemp -d)
  curl -fsSL --retry 5 "$url" -o "$home/key"
  gpg --homedir "$home" --batch --quiet --import "$home/key"
  gpg --homedir "$home" --batch --export "$fingerprint" > "$keyring"
  rm -rf "$home"
  if [ ! -s "$keyring" ]; then
    rm -f "$keyring"
    echo "hpclz: $url holds no key $fingerprint; refusing it" >&2
    exit 1
  fi
}

# Shared home and /sched (storage.shared): users see the files their jobs write; /sched holds the cluster's config.
# /sched is mounted read-only here because the portal only reads it (hpclz-portal-join copies munge.key and links the
# conf files; hpclz-portal-users reads only home), so no portal process writes it by mistake. `ro` is a client-side
# option, not a security boundary: the share has no root squash and an Azure Files NFS share is guarded by the network
# alone, so root on this VM could mount it read-write (and slurm.conf and /sched/<cluster>/prolog.d/* run as root on
# every compute node). Root here is the cluster's root: docs/cluster-services.md, "the subnets are the trust boundary".
mkdir -p /sched /shared
grep -q ' /sched nfs ' /etc/fstab || echo 'stenergynfsprodscuseb80.file.core.windows.net:/stenergynfsprodscuseb80/sched /sched nfs vers=4,minorversion=1,sec=sys,nconnect=4,ro,_netdev 0 0' >> /etc/fstab
grep -q ' /shared nfs ' /etc/fstab || echo 'stenergynfsprodscuseb80.file.core.windows.net:/stenergynfsprodscuseb80/home /shared nfs vers=4,minorversion=1,sec=sys,nconnect=4,_netdev 0 0' >> /etc/fstab
mountpoint -q /sched || mount /sched
mountpoint -q /shared || mount /shared

# The cluster's own Slurm build (25.11.5), from the repository and channel cyclecloud-slurm installs it
# from, matched as it matches it: "${pkg}=${SLURM_VERSION}*" from the "stable" group
# (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/ubuntu.sh:80,104,133-136).
fetch_key https://packages.microsoft.com/keys/microsoft.asc BC528686B50D79E339D3721CEB3E94ADBE1229CF /etc/apt/keyrings/microsoft.gpg
echo 'deb [arch=amd64 signed-by=/etc/apt/keyrings/microsoft.gpg] https://packages.microsoft.com/repos/slurm-ubuntu-jammy/ stable main' > /etc/apt/sources.list.d/hpclz-slurm.list
printf 'Package: slurm, slurm-*\nPin: origin "packages.microsoft.com"\nPin-Priority: 990\n' > /etc/apt/preferences.d/hpclz-slurm
apt-get update
apt-get install -y munge 'slurm-smd=25.11.5*' 'slurm-smd-client=25.11.5*'
apt-mark hold slurm-smd slurm-smd-client

# Joining waits for the scheduler to write its config under /sched, which may come after this boot: a unit that
# retries until it is there.
cat > /opt/hpclz/bin/hpclz-portal-join <<'HPCLZ_EOF'
#!/bin/bash
# hpclz: copy the cluster's munge key and link its slurm.conf files from /sched, as cyclecloud-slurm's login
# nodes do (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py munge_key, _complete_install_all).
set -euo pipefail
cfg=/sched/energy-prod
if [ ! -s "$cfg/munge.key" ] || [ ! -s "$cfg/slurm.conf" ]; then
  echo "hpclz-portal-join: $cfg not ready yet"
  exit 1
fi
install -o munge -g munge -m 0600 "$cfg/munge.key" /etc/munge/munge.key
mkdir -p /etc/slurm
# Every link, present or not yet: the scheduler writes slurm.conf before the files it Includes, and accounting.conf
# last (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py l.529-530, l.579-645, l.1155-1158), and a link
# made now resolves once its file is written; one skipped would never be made, since this unit then succeeds.
for f in azure.conf keep_alive.conf accounting.conf site_specific.conf gres.conf cgroup.conf plugstack.conf topology.conf topology.yaml; do
  ln -sfn "$cfg/$f" "/etc/slurm/$f"
done
# The portal's own slurm.conf: the cluster's, then the ports srun and salloc listen on here, which the portal's NSG
# lets in from the cluster's subnets ("This is necessary for login nodes that are behind a firewall":
# slurm.schedmd.com/network.html, SrunPortRange). Its relative Includes resolve: the files sit beside the cluster's
# slurm.conf and are linked beside this one. mv replaces the link an earlier hpclz left here.
printf 'Include %s\nSrunPortRange=%s\n' "$cfg/slurm.conf" 60001-63000 > /etc/slurm/slurm.conf.hpclz
mv -f /etc/slurm/slurm.conf.hpclz /etc/slurm/slurm.conf
# pyxis, as the login node loads it: the cluster's plugstack.conf includes /etc/slurm/plugstack.conf.d/*
# (install.py l.631-638), where cyclecloud-slurm puts pyxis.conf on each node it installs (l.990-998), so a job
# submitted from here with `#SBATCH --container-image` needs the plugin loaded by this sbatch too, or sbatch refuses it
# ("unrecognized option"). The plugin is the one a login node built, published to /sched with the plugstack line that
# loads it (hpclz-pyxis-publish); an include whose pattern matches nothing adds nothing, so until one is published, or
# with no login node, sbatch goes on without it (slurm.schedmd.com/spank.html, include). Whoever can write /sched
# already chooses this sbatch's plugins (plugstack.conf is linked from there).
mkdir -p /etc/slurm/plugstack.conf.d
printf 'include %s\n' '/sched/energy-prod/hpclz/pyxis/*.conf' > /etc/slurm/plugstack.conf.d/pyxis.conf
systemctl restart munge
echo "hpclz-portal-join: joined cluster energy-prod"
HPCLZ_EOF
chmod 755 /opt/hpclz/bin/hpclz-portal-join
cat > /etc/systemd/system/hpclz-portal-join.service <<'HPCLZ_EOF'
[Unit]
Description=hpclz: join the Open OnDemand portal to the Slurm cluster through /sched
After=remote-fs.target network-online.target
Wants=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/opt/hpclz/bin/hpclz-portal-join
Restart=on-failure
RestartSec=60

[Install]
WantedBy=multi-user.target
HPCLZ_EOF

# The cluster's users, with its UIDs and GIDs, mirrored from the homes CycleCloud keeps on the shared file system
# (OOD runs each session as the mapped Linux user); a timer picks up the users CycleCloud adds later.
cat > /opt/hpclz/bin/hpclz-portal-users <<'HPCLZ_EOF'
#!/usr/bin/env python3
"""hpclz-portal-users: give the Open OnDemand portal the cluster's Linux users, with the cluster's UIDs and GIDs.

Open OnDemand runs each signed-in user's session as the Linux user the sign-in maps to, and that user must exist on
the portal with the same UID as on the cluster's nodes, its home on the shared file system
(learn.microsoft.com/azure/cyclecloud/how-to/ccws/open-ondemand-add-users: OOD "maps the user to a local user account
managed by CycleCloud created with the same name"). CCWS gets that by running the portal as a CycleCloud node, which
CycleCloud's user management reaches. hpclz's portal is an ARM VM outside CycleCloud, so it mirrors the users from
what CycleCloud leaves on the shared home instead: every user CycleCloud creates on the cluster has a home directory
under <mount_point>/home ("Users' home directories reside within the /shared mountpoint with the base homedir
/shared/home", Azure/cyclecloud-slurm@50e6739:templates/slurm.txt:601; specs/default/chef/site-cookbooks/slurm/
attributes/default.rb:19), owned by the user's UID and GID. Each such directory becomes a local account with
exactly that UID and GID, no password (locked: OOD signs users in through Entra ID) and that home. A name or a UID
the portal already uses otherwise is reported and left alone, never changed.

The account is named after the directory in lower case: CycleCloud names the user after the Entra ID user and
documents no rule for the case of that name, and Open OnDemand's map lower-cases the UPN's user part
(user_map_match's `:lower`, hpclz.render.portal._user_map), so `John.Smith@<domain>` signs in as `john.smith`, with the
UID and home of /shared/home/John.Smith or /shared/home/john.smith alike. A user's name on the portal is only a label:
Slurm and the shared files go by the UID. Names may hold dots and capitals, as UPNs do (`first.last`); Debian's and
Ubuntu's useradd take them.

Run by a systemd timer; Python 3.6 and the standard library only, like every node helper.
"""

import argparse
import os
import re
import subprocess
import sys

# A home directory's name: a UPN's user part as CycleCloud may keep it (letters of either case, digits, `.`, `_`, `-`),
# at most 32 characters, as Linux user names are; anything else is no user's home.
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
# Regular users start at UID_MIN (1000 in Debian's and Ubuntu's /etc/login.defs); the cluster's service accounts
# (slurm 11100, munge 11101, slurmrestd 11102: Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py l.76-89)
# are created by the portal's own boot script, never from a home directory.
UID_MIN = 1000
SERVICE_IDS = {11100, 11101, 11102}


def table(path):
    """name -> (id, gid or None) from a passwd or group file."""
    out = {}
    with open(path) as handle:
        for line in handle:
            parts = line.rstrip("\n").split(":")
            if len(parts) >= 3 and parts[2].isdigit():
                gid = int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else None
                out[parts[0]] = (int(parts[2]), gid)
    return out


def cluster_users(home):
    """(account name, uid, gid, path) of every user home under `home`, in directory name order; the account name is
    the directory's, lower-cased."""
    found = []
    for entry in sorted(os.scandir(home), key=lambda e: e.name):
        if not entry.is_dir(follow_symlinks=False) or not NAME.match(entry.name):
            continue
        info = entry.stat(follow_symlinks=False)
        if info.st_uid >= UID_MIN and info.st_uid not in SERVICE_IDS:
            found.append((entry.name.lower(), info.st_uid, info.st_gid, entry.path))
    return found


def run(command, log):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if done.returncode != 0:
        log("failed (" + str(done.returncode) + "): " + " ".join(command) + ": " + done.stdout.strip())
    return done.returncode == 0


def sync(home, prefix, log):
    """Create the missing accounts; return how many users conflict with the portal's own accounts."""
    accounts = table(os.path.join(prefix or "/", "etc/passwd"))
    groups = table(os.path.join(prefix or "/", "etc/group"))
    by_uid = {uid: name for name, (uid, _) in accounts.items()}
    group_of = {gid: name for name, (gid, _) in groups.items()}
    flags = ["-P", prefix] if prefix else []
    conflicts = 0
    for name, uid, gid, path in cluster_users(home):
        if name in accounts and accounts[name] == (uid, gid):
            continue
        clash = None
        if name in accounts:
            clash = name + " exists here as uid " + str(accounts[name][0]) + ", gid " + str(accounts[name][1])
        elif uid in by_uid:
            clash = "uid " + str(uid) + " is already " + by_uid[uid] + " here"
        elif gid not in group_of and name in groups:
            clash = "group " + name + " exists here with gid " + str(groups[name][0])
        if clash:
            log("not creating " + name + " (uid " + str(uid) + ", gid " + str(gid) + "): " + clash)
            conflicts += 1
            continue
        if gid not in group_of:
            if not run(["groupadd"] + flags + ["-g", str(gid), name], log):
                conflicts += 1
                continue
            group_of[gid] = name
        if run(["useradd"] + flags + ["-M", "-u", str(uid), "-g", str(gid), "-d", path, "-s", "/bin/bash", name], log):
            log("created " + name + " (uid " + str(uid) + ", gid " + str(gid) + ", home " + path + ")")
            by_uid[uid] = name
            accounts[name] = (uid, gid)
        else:
            conflicts += 1
    return conflicts


def main(argv):
    parser = argparse.ArgumentParser(prog="hpclz-portal-users")
    parser.add_argument("home", help="the cluster's base home directory, <mount_point>/home")
    parser.add_argument("--prefix", default="", help="apply to <prefix>/etc instead of /etc (useradd -P)")
    options = parser.parse_args(argv)

    def log(line):
        print("hpclz-portal-users: " + line, flush=True)

    if not os.path.isdir(options.home):
        log(options.home + " is not mounted yet")
        return 1
    return 1 if sync(options.home, options.prefix, log) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
HPCLZ_EOF
chmod 755 /opt/hpclz/bin/hpclz-portal-users
cat > /etc/systemd/system/hpclz-portal-users.service <<'HPCLZ_EOF'
[Unit]
Description=hpclz: the cluster's users on the Open OnDemand portal, with the cluster's UIDs
After=remote-fs.target

[Service]
Type=oneshot
ExecStart=/opt/hpclz/bin/hpclz-portal-users /shared/home
HPCLZ_EOF
cat > /etc/systemd/system/hpclz-portal-users.timer <<'HPCLZ_EOF'
[Unit]
Description=hpclz: mirror the cluster's users onto the portal every 5 minutes

[Timer]
OnBootSec=1min
OnUnitActiveSec=5min

[Install]
WantedBy=timers.target
HPCLZ_EOF

# Node.js 22 from NodeSource: the ondemand package depends on nodejs (>= 22.0, << 23.0), which
# Ubuntu 22.04 does not ship (OSC/ondemand packaging/deb/control; OSC/ood-ansible tasks/install-package.yml).
fetch_key https://deb.nodesource.com/gpgkey/nodesource-repo.gpg.key 6F71F525282841EEDAF851B42F59B5F99B1BE0B4 /etc/apt/keyrings/nodesource.gpg
echo 'deb [signed-by=/etc/apt/keyrings/nodesource.gpg] https://deb.nodesource.com/node_22.x nodistro main' > /etc/apt/sources.list.d/hpclz-nodesource.list

# Open OnDemand 4.1.4 from OSC's 4.1 repository.
fetch_key https://apt.osc.edu/ondemand/DEB-GPG-KEY-ondemand FE143EA1CB378B569BBF7C544B72FE2B92D31755 /etc/apt/keyrings/ondemand-web.gpg
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
repo=https://apt.osc.edu/ondemand/4.1/web/apt
echo "deb [signed-by=/etc/apt/keyrings/ondemand-web.gpg] $repo $codename main" > /etc/apt/sources.list.d/hpclz-ondemand-web.list
apt-get update
apt-get install -y ondemand=4.1.4
apt-mark hold ondemand
# The one interactive app the package ships, bc_desktop (/var/www/ood/apps/sys: OSC/ondemand@6b54ef1, tag v4.1.4,
# packaging/deb/rules l.64), starts a VNC desktop on a compute node (apps/bc_desktop/submit.yml.erb `template: vnc`),
# which needs a desktop, TurboVNC and websockify there that no node of this cluster has: hidden, as CCWS's portal hides
# it (Azure/cyclecloud-open-ondemand@35cf46d playbooks/ood.yml l.67-72, mode 0600). "Web applications that are
# protected by file system permissions will not show up in the Dashboard navigation menus if the current user does
# not have access to these files" (osc.github.io/ood-documentation/release-2.0/applications/dashboard.html).
chmod 0600 /var/www/ood/apps/sys/bc_desktop
# OpenID Connect and TLS for Apache: ood-ansible installs this module package on Ubuntu when OIDC is on
# (OSC/ood-ansible vars/Ubuntu.yml apache_oidc_mod_package, tasks/install-package.yml); a2enmod is idempotent.
apt-get install -y libapache2-mod-auth-openidc
a2enmod ssl auth_openidc

# A self-signed certificate, as CCWS's playbook makes (ood.yml, "Generate a Self Signed OpenSSL certificate").
mkdir -p /etc/ssl/hpclz-portal
if [ ! -s /etc/ssl/hpclz-portal/portal.crt ]; then
  openssl req -nodes -new -x509 -days 825 -keyout /etc/ssl/hpclz-portal/portal.key \
    -out /etc/ssl/hpclz-portal/portal.crt -subj /CN=ood.hpc.contosoenergy.com
  chmod 600 /etc/ssl/hpclz-portal/portal.key
fi

# Entra ID sign-in (portal.oidc) through mod_auth_openidc, with the settings of CCWS's vars-entra.yml.
umask 077
crypto=$(openssl rand -hex 32)
cat > /etc/ood/config/ood_portal.yml <<'HPCLZ_EOF'
# hpclz: from portal.*; keys: https://osc.github.io/ood-documentation/latest/reference/files/ood-portal-yml.html
servername: "ood.hpc.contosoenergy.com"
# The Bastion tunnel's host (https://localhost:<port>): without it Open OnDemand allows only the VM's addresses
# and FQDN, or servername, as OOD_ALLOWED_HOSTS, the dashboard's Rails config.hosts, and answers 403 "Blocked host"
# to the tunnel; with servername its rewrite also sends any other Host to servername (hpclz.render.portal.TUNNEL_ALIASES).
server_aliases:
  - "localhost"
  - "localhost:9443"
port: 443
ssl:
  - 'SSLCertificateFile "/etc/ssl/hpclz-portal/portal.crt"'
  - 'SSLCertificateKeyFile "/etc/ssl/hpclz-portal/portal.key"'
  - 'SSLProtocol all -SSLv2 -SSLv3 -TLSv1 -TLSv1.1'
auth:
  - 'AuthType openid-connect'
  - 'Require valid-user'
oidc_uri: /oidc
oidc_provider_metadata_url: "https://login.microsoftonline.com/b7e41d96-05a3-4f2c-8e19-6a3d2c9f7b15/v2.0/.well-known/openid-configuration"
oidc_client_id: "5e2d8b41-9c3a-4f7e-a6d1-0b8c4e2f9a73"
oidc_remote_user_claim: "upn"
oidc_scope: "openid profile"
user_map_match: "^([^@]+)@[cC][oO][nN][tT][oO][sS][oO][eE][nN][eE][rR][gG][yY]%.[oO][nN][mM][iI][cC][rR][oO][sS][oO][fF][tT]%.[cC][oO][mM]$:lower"
logout_redirect: "/oidc?logout=https%3A%2F%2Food.hpc.contosoenergy.com"
oidc_settings:
  OIDCPassIDTokenAs: serialized
  OIDCPassClaimsAs: environment
  OIDCStateMaxNumberOfCookies: "7 true"
  # No client secret: the ID-token flow CCWS's portal uses (vars-entra.yml OIDCResponseType: id_token).
  OIDCResponseType: id_token
HPCLZ_EOF
printf 'oidc_crypto_passphrase: "%s"\n' "$crypto" >> /etc/ood/config/ood_portal.yml
umask 022

# Interactive apps (none installed: an operator adds them, docs/portal.md) reach their job's node through the portal's
# reverse proxy, for the partitions' nodes only
# (host_regex, node_uri, rnode_uri: hpclz.render.portal; OSC's ood_portal_example.yml: by default it proxies to any
# host). They follow the partitions, which change after this VM exists, so they come from userData, which ARM updates
# in place, unlike this script: set now, and again by a timer whenever userData changes.
cat > /opt/hpclz/bin/hpclz-portal-proxy <<'HPCLZ_EOF'
#!/usr/bin/env python3
"""hpclz-portal-proxy CONFIG: keep Open OnDemand's interactive-app proxy settings (host_regex, node_uri, rnode_uri in
ood_portal.yml) equal to the ones this VM's userData carries.

Which hosts the proxy may reach follows the cluster's partitions (hpclz.render.portal.host_regex), and partitions
change after the portal exists. The boot script (customData) cannot change after the VM is created; userData can, in
place, and the instance metadata service serves it, base64-encoded
(learn.microsoft.com/azure/virtual-machines/user-data, "Retrieving user data"), as it does for the CycleCloud
server's cluster sync. A systemd timer runs this at boot and every few minutes.

The three keys are rewritten in place; every other line (the OIDC settings, the crypto passphrase) is kept as is.
Exit status: 0 unchanged, 2 changed (the caller regenerates Apache's config), 1 error (nothing written).
Python 3.6 and the standard library only, like every node helper.
"""

import base64
import json
import os
import re
import sys
import urllib.request

IMDS = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
USER_DATA_URL = IMDS + "/metadata/instance/compute/userData?api-version=2021-01-01&format=text"
KEYS = ("host_regex", "node_uri", "rnode_uri")
CHANGED = 2


def settings(user_data):
    """The three settings from userData's JSON document; ValueError when it is not hpclz's portal document."""
    document = json.loads(base64.b64decode(user_data.strip()).decode())
    if document.get("kind") != "hpclz-portal-proxy":
        raise ValueError("userData is not an hpclz portal proxy document")
    out = {}
    for key in KEYS:
        value = document.get(key)
        if not isinstance(value, str) or not value or "\n" in value:
            raise ValueError("userData has no usable " + key)
        out[key] = value
    try:
        re.compile(out["host_regex"])
    except re.error as error:
        raise ValueError("userData's host_regex is no regular expression: " + str(error))
    return out


def rewritten(text, wanted):
    """ood_portal.yml with the three keys set to `wanted` (JSON strings are YAML strings), every other line kept."""
    pattern = re.compile(r"^(" + "|".join(KEYS) + r"):")
    kept = [line for line in text.splitlines() if not pattern.match(line)]
    return "\n".join(kept + [key + ": " + json.dumps(wanted[key]) for key in KEYS]) + "\n"


def main(argv):
    if len(argv) != 1:
        print("usage: hpclz-portal-proxy /etc/ood/config/ood_portal.yml", file=sys.stderr)
        return 1
    path = argv[0]
    request = urllib.request.Request(USER_DATA_URL, headers={"Metadata": "true"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            wanted = settings(response.read().decode())
        with open(path) as handle:
            current = handle.read()
    except (OSError, ValueError) as error:
        print("hpclz-portal-proxy: " + str(error), file=sys.stderr)
        return 1
    text = rewritten(current, wanted)
    if text == current:
        return 0
    # Written aside with the file's own mode (it holds the OIDC secrets, root-only), then moved over it whole.
    temporary = path + ".hpclz-new"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, os.stat(path).st_mode & 0o777)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.replace(temporary, path)
    print("hpclz-portal-proxy: host_regex " + wanted["host_regex"])
    return CHANGED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
HPCLZ_EOF
chmod 755 /opt/hpclz/bin/hpclz-portal-proxy
cat > /opt/hpclz/bin/hpclz-portal-proxy-apply <<'HPCLZ_EOF'
#!/bin/bash
# hpclz: rewrite the proxy settings from userData; on a change, regenerate Apache's config and restart it if running.
set -uo pipefail
rc=0
/opt/hpclz/bin/hpclz-portal-proxy /etc/ood/config/ood_portal.yml || rc=$?
if [ "$rc" -eq 2 ]; then
  /opt/ood/ood-portal-generator/sbin/update_ood_portal -f && systemctl try-restart apache2
  exit $?
fi
exit "$rc"
HPCLZ_EOF
chmod 755 /opt/hpclz/bin/hpclz-portal-proxy-apply
cat > /etc/systemd/system/hpclz-portal-proxy.service <<'HPCLZ_EOF'
[Unit]
Description=hpclz: Open OnDemand's interactive-app proxy settings from this VM's userData
After=network-online.target
Wants=network-online.target

[Service]
Type=oneshot
ExecStart=/opt/hpclz/bin/hpclz-portal-proxy-apply
HPCLZ_EOF
cat > /etc/systemd/system/hpclz-portal-proxy.timer <<'HPCLZ_EOF'
[Unit]
Description=hpclz: apply a changed userData to the portal's proxy settings every 5 minutes

[Timer]
OnBootSec=2min
OnUnitActiveSec=5min

[Install]
WantedBy=timers.target
HPCLZ_EOF
rc=0
/opt/hpclz/bin/hpclz-portal-proxy /etc/ood/config/ood_portal.yml || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]

# The cluster, for the job composer and active jobs apps: Slurm's own client commands, its own slurm.conf.
mkdir -p /etc/ood/config/clusters.d
cat > /etc/ood/config/clusters.d/energy-prod.yml <<'HPCLZ_EOF'
# hpclz: https://osc.github.io/ood-documentation/latest/installation/resource-manager/slurm.html
v2:
  metadata:
    title: "Slurm energy-prod"
  # The shell app's "connect to a cluster login node from the Dashboard" needs login.host, the SSH server host
  # (osc.github.io/ood-documentation/latest/installation/add-cluster-config.html): the first login node, by the
  # name it takes in the VNet's DNS (hpclz.render.portal.login_host), as Microsoft's portal sets it.
  login:
    host: "energy-prod-login-1"
  job:
    # No `cluster:` (sbatch -M): that needs the cluster registered in slurmdbd, which accounting may not run.
    adapter: "slurm"
    bin: "/usr/bin"
    conf: "/etc/slurm/slurm.conf"
  # The host an interactive session publishes is the node's short host name, which is its Slurm node name and what
  # host_regex matches (ood_portal.yml). set_host is the shell the job runs to name "the host name of the compute
  # node from within a running batch job", and a cluster file's batch_connect applies to every app of the cluster
  # (https://osc.github.io/ood-documentation/latest/reference/files/submit-yml-erb.html).
  batch_connect:
    basic:
      set_host: "host=$(hostname -s)"
    vnc:
      set_host: "host=$(hostname -s)"
HPCLZ_EOF

/opt/ood/ood-portal-generator/sbin/update_ood_portal -f
systemctl daemon-reload
# Its first try may come before the scheduler wrote /sched; systemd retries it (Restart=on-failure).
systemctl enable --now hpclz-portal-join.service || true
systemctl enable --now hpclz-portal-users.timer
systemctl enable --now hpclz-portal-proxy.timer
systemctl enable apache2
systemctl restart apache2
echo "hpclz portal setup done"
