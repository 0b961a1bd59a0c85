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
