#!/usr/bin/env python3
"""hpclz-slurmdbd-storagepass CONF: give a running slurmdbd the rotated Slurm accounting password.

`hpclz deploy` runs this on the scheduler VM (a managed Run Command, as root) after it wrote a rotated password to Key
Vault and to the MySQL server, the new value in the protected parameter HPCLZ_STORAGE_PASS, which reaches the script as
an environment variable and which ARM never returns (learn.microsoft.com/azure/virtual-machines/linux/
run-command-managed). Why it is needed: cyclecloud-slurm writes the password into slurmdbd.conf once, at cluster-init
(`_accounting_primary`: `StoragePass={s.acct_pass}` into /sched/<cluster>/slurmdbd.conf, owner slurm, through
templates/slurmdbd.conf.template; `_accounting_all` links /etc/slurm/slurmdbd.conf to it and enables the slurmdbd
unit: Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.366-449, l.451-478), and a cluster-init script
does not run again on a later converge (learn.microsoft.com/azure/cyclecloud/how-to/projects, Run files).

Only the StoragePass= lines change; every other byte, the file's owner, group and mode stay. The new file is written
beside the old one and renamed over it (rename(2) replaces the name atomically), so slurmdbd never reads half a file.
slurmdbd reads StoragePass when it starts, so it is restarted (`systemctl restart slurmdbd`, as cyclecloud-slurm's
installlib.py l.336-337 restarts a service) only when the file changed. The password is never printed.
"""

import os
import re
import stat
import subprocess
import sys
import tempfile

ENV = "HPCLZ_STORAGE_PASS"
# A key in any case: "The contents of the file are case insensitive except for the names of nodes and partitions"
# (slurm.conf(5), Debian 12's slurm-client 22.05.8; slurmdbd.conf goes through the same src/common/parse_config.c).
KEY = re.compile(r"^[ \t]*StoragePass[ \t]*=", re.IGNORECASE)
# What slurmdbd.conf's parser cuts or drops in an unquoted value (hpclz.deploy.slurmdbd_password cites
# parse_config.c): deploy refuses such a password before anything; refused here again, so no line is ever injected.
BREAKS = set("#\\ \t\n\v\f\r")


def rewritten(lines, password):
    """The file's lines with each StoragePass= line set to the password; None when it holds no such line."""
    found = False
    out = []
    for line in lines:
        if KEY.match(line):
            found = True
            line = "StoragePass=" + password + ("\n" if line.endswith("\n") else "")
        out.append(line)
    return out if found else None


def replace(path, text):
    """`text` as `path`, atomically, with the old file's owner, group and mode."""
    info = os.stat(path)
    folder = os.path.dirname(path)
    fd, temporary = tempfile.mkstemp(prefix=".slurmdbd.conf.", dir=folder)  # created 0600: nobody reads it meanwhile
    try:
        with os.fdopen(fd, "w") as handle:
            os.fchown(handle.fileno(), info.st_uid, info.st_gid)
            os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def main(argv):
    if len(argv) != 2:
        print("usage: hpclz-slurmdbd-storagepass CONF (the password in $" + ENV + ")", file=sys.stderr)
        return 2
    password = os.environ.get(ENV, "")
    if not password:
        print("hpclz-slurmdbd-storagepass: $" + ENV + " is empty: nothing changed", file=sys.stderr)
        return 2
    if BREAKS & set(password) or (len(password) >= 2 and password[0] == password[-1] == '"'):
        print("hpclz-slurmdbd-storagepass: the password holds what slurmdbd.conf cannot carry: nothing changed",
              file=sys.stderr)
        return 2
    path = os.path.realpath(argv[1])  # /etc/slurm/slurmdbd.conf is a link: the file itself is replaced
    try:
        with open(path) as handle:
            lines = handle.readlines()
    except OSError as exc:
        print("hpclz-slurmdbd-storagepass: cannot read " + path + ": " + exc.strerror + ": nothing changed",
              file=sys.stderr)
        return 3
    new = rewritten(lines, password)
    if new is None:
        print("hpclz-slurmdbd-storagepass: " + path + " has no StoragePass= line: nothing changed", file=sys.stderr)
        return 3
    if new == lines:
        print("slurmdbd.conf already holds this password: " + path + " unchanged, slurmdbd not restarted")
        return 0
    replace(path, "".join(new))
    print("StoragePass rewritten in " + path + " (owner, group and mode kept)")
    done = subprocess.run(["systemctl", "restart", "slurmdbd"])
    if done.returncode != 0:
        print("hpclz-slurmdbd-storagepass: systemctl restart slurmdbd failed (" + str(done.returncode) + ")",
              file=sys.stderr)
        return 4
    print("slurmdbd restarted")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
