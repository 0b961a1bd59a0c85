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
mkdir -p /sched /shared
grep -q ' /sched nfs ' /etc/fstab || echo 'staitrainnfsprodeus2a1.file.core.windows.net:/staitrainnfsprodeus2a1/sched /sched nfs vers=4,minorversion=1,sec=sys,nconnect=4,_netdev 0 0' >> /etc/fstab
grep -q ' /shared nfs ' /etc/fstab || echo 'staitrainnfsprodeus2a1.file.core.windows.net:/staitrainnfsprodeus2a1/home /shared nfs vers=4,minorversion=1,sec=sys,nconnect=4,_netdev 0 0' >> /etc/fstab
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
# nodes do (Azure/cyclecloud-slurm@b26ab06:slurm/install/install.py munge_key, _complete_install_all).
set -euo pipefail
cfg=/sched/aitrain-prod
if [ ! -s "$cfg/munge.key" ] || [ ! -s "$cfg/slurm.conf" ]; then
  echo "hpclz-portal-join: $cfg not ready yet"
  exit 1
fi
install -o munge -g munge -m 0600 "$cfg/munge.key" /etc/munge/munge.key
mkdir -p /etc/slurm
for f in slurm.conf azure.conf keep_alive.conf accounting.conf gres.conf cgroup.conf; do
  if [ -e "$cfg/$f" ]; then ln -sfn "$cfg/$f" "/etc/slurm/$f"; fi
done
systemctl restart munge
echo "hpclz-portal-join: joined cluster aitrain-prod"
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

# Open OnDemand 4.1.4 from OSC's 4.1 repository.
fetch_key https://apt.osc.edu/ondemand/DEB-GPG-KEY-ondemand FE143EA1CB378B569BBF7C544B72FE2B92D31755 /etc/apt/keyrings/ondemand-web.gpg
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
repo=https://apt.osc.edu/ondemand/4.1/web/apt
echo "deb [signed-by=/etc/apt/keyrings/ondemand-web.gpg] $repo $codename main" > /etc/apt/sources.list.d/hpclz-ondemand-web.list
apt-get update
apt-get install -y ondemand=4.1.4
apt-mark hold ondemand
# OpenID Connect and TLS for Apache: ood-ansible installs this module package on Ubuntu when OIDC is on
# (OSC/ood-ansible vars/Ubuntu.yml apache_oidc_mod_package, tasks/install-package.yml); a2enmod is idempotent.
apt-get install -y libapache2-mod-auth-openidc
a2enmod ssl auth_openidc

# A self-signed certificate, as CCWS's playbook makes (ood.yml, "Generate a Self Signed OpenSSL certificate").
mkdir -p /etc/ssl/hpclz-portal
if [ ! -s /etc/ssl/hpclz-portal/portal.crt ]; then
  openssl req -nodes -new -x509 -days 825 -keyout /etc/ssl/hpclz-portal/portal.key \
    -out /etc/ssl/hpclz-portal/portal.crt -subj /CN=localhost
  chmod 600 /etc/ssl/hpclz-portal/portal.key
fi

# Entra ID sign-in (portal.oidc) through mod_auth_openidc, with the settings of CCWS's vars-entra.yml.
umask 077
crypto=$(openssl rand -hex 32)
cat > /etc/ood/config/ood_portal.yml <<'HPCLZ_EOF'
# hpclz: from portal.*; keys: https://osc.github.io/ood-documentation/latest/reference/files/ood-portal-yml.html
port: 443
ssl:
  - 'SSLCertificateFile "/etc/ssl/hpclz-portal/portal.crt"'
  - 'SSLCertificateKeyFile "/etc/ssl/hpclz-portal/portal.key"'
  - 'SSLProtocol all -SSLv2 -SSLv3 -TLSv1 -TLSv1.1'
auth:
  - 'AuthType openid-connect'
  - 'Require valid-user'
oidc_uri: /oidc
oidc_provider_metadata_url: "https://login.microsoftonline.com/0c6a3d1e-4b2f-4e8a-9d37-8f2b5a1c6e90/v2.0/.well-known/openid-configuration"
oidc_client_id: "3c1f9a52-7d4e-4b8a-9e21-5f6d0c8b2a17"
oidc_remote_user_claim: "upn"
oidc_scope: "openid profile"
user_map_match: "^([^@]+)@example\\.com$"
logout_redirect: "/oidc?logout=https%3A%2F%2Flocalhost%3A9443"
oidc_settings:
  OIDCPassIDTokenAs: serialized
  OIDCPassClaimsAs: environment
  OIDCStateMaxNumberOfCookies: "7 true"
  # No client secret: the ID-token flow CCWS's portal uses (vars-entra.yml OIDCResponseType: id_token).
  OIDCResponseType: id_token
HPCLZ_EOF
printf 'oidc_crypto_passphrase: "%s"\n' "$crypto" >> /etc/ood/config/ood_portal.yml
umask 022

# The cluster, for the job composer and active jobs apps: Slurm's own client commands, its own slurm.conf.
mkdir -p /etc/ood/config/clusters.d
cat > /etc/ood/config/clusters.d/aitrain-prod.yml <<'HPCLZ_EOF'
# hpclz: https://osc.github.io/ood-documentation/latest/installation/resource-manager/slurm.html
v2:
  metadata:
    title: "Slurm aitrain-prod"
  job:
    # No `cluster:` (sbatch -M): that needs the cluster registered in slurmdbd, which accounting may not run.
    adapter: "slurm"
    bin: "/usr/bin"
    conf: "/etc/slurm/slurm.conf"
HPCLZ_EOF

/opt/ood/ood-portal-generator/sbin/update_ood_portal -f
systemctl daemon-reload
# Its first try may come before the scheduler wrote /sched; systemd retries it (Restart=on-failure).
systemctl enable --now hpclz-portal-join.service || true
systemctl enable apache2
systemctl restart apache2
echo "hpclz portal setup done"
