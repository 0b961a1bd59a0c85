"""What the Azure HPC image gives NCCL on the host, given to every enroot container on the node too.

The image's `sku-customizations` service runs at every boot, asks the instance metadata service for the VM size,
and for some sizes writes /etc/nccl.conf and links topology files under /opt/microsoft
(Azure/azhpc-images@8e9d055f components/setup_sku_customizations.sh l.8-10, the case on the size l.27-37 and the
script it runs l.41-51; components/customizations/<family>.sh). A container started by pyxis sees neither: its
/etc and /opt are the image's. So for the same sizes, the node's cloud-init writes enroot's system-wide
configuration, which enroot applies to every container it starts (NVIDIA/enroot@v4.0.1 doc/configuration.md
l.22-38: `environ.d/*.env` and `mounts.d/*.fstab` under ENROOT_SYSCONF_PATH, /etc/enroot by default, l.13;
cyclecloud-slurm 4.0.9 writes /etc/enroot/enroot.conf and leaves ENROOT_SYSCONF_PATH alone,
Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.958-967, templates/enroot.conf.template):
- the same NCCL variables as environment variables, not a mounted /etc/nccl.conf: NCCL reads /etc/nccl.conf from
  the file system it runs in (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, "set statically in
  /etc/nccl.conf"), and mounting the host's over it would hide the one a container image ships. An environment
  variable also outranks any nccl.conf: NCCL loads the files with `setenv(name, value, 0)`, which keeps a variable
  already set (NVIDIA/nccl src/include/param.h, setEnvFile);
- /opt/microsoft read-only, whole: the image's <family>/topo.xml is an absolute link to
  /opt/microsoft/<family>-topo.xml (customizations/ndv5.sh l.8), which resolves inside the container only when
  its target is mounted as well.

Precedence (who wins), from enroot's runtime (NVIDIA/enroot@v4.0.1 src/runtime.sh l.32-62, 64-83, 112-128): the
environment file is the image's /etc/environment, then /etc/enroot/environ.d, then the user's own
$ENROOT_CONFIG_PATH/environ.d (~/.config/enroot unless set, enroot.in l.74, 81) and `enroot start --env`, and
enroot-switchroot sets each line with overwrite, so a later line wins (bin/common.h load_environment l.148-179,
`setenv(buf, ptr, 1)`). Pyxis keeps a container's value over the job's exported one unless the job names it with
`--container-env` (NVIDIA/pyxis@5164d82 tests/env.bats, "--container-env overriding container variable"). So
these values replace the same variable set by the image (its ENV, which enroot's import writes to /etc/environment,
src/docker.sh l.350-351) and are replaced by the user's. The system mounts are made first (fs_passno -1, in
_do_mounts_init), a job's `--container-mounts` after them (_do_mounts_fini), so a user's mount on /opt/microsoft
covers this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

ENVIRON_FILE = "/etc/enroot/environ.d/50-hpclz-nccl.env"
MOUNTS_FILE = "/etc/enroot/mounts.d/50-hpclz-nccl.fstab"
TOPOLOGY_DIR = "/opt/microsoft"
# As enroot's own read-only configuration mounts (NVIDIA/enroot@v4.0.1 conf/mounts/20-config.fstab), without
# x-create=file: /opt/microsoft is a directory. nofail: an image without it starts the container, enroot-mount
# printing the failure instead of stopping (bin/enroot-mount.c l.507, `fatal = !hasmntopt(mnt, "nofail")`).
MOUNT_OPTIONS = "x-create=dir,bind,ro,nosuid,nodev,noexec,private,nofail"
# (publisher, offer) of the marketplace images built by Azure/azhpc-images (README.md@8e9d055f l.18-25).
AZURE_HPC_IMAGES = frozenset({("microsoft-dsvm", "ubuntu-hpc"), ("almalinux", "almalinux-hpc")})


@dataclass(frozen=True)
class ImageNccl:
    """One size family of setup_sku_customizations.sh with what its customization script sets for NCCL."""

    family: str
    patterns: tuple[str, ...]  # the shell case patterns, lower-cased sizes as the script lower-cases them
    environ: tuple[tuple[str, str], ...]  # /etc/nccl.conf's lines, in the script's order
    topology: bool  # whether NCCL_TOPO_FILE/NCCL_GRAPH_FILE name files under /opt/microsoft

    def environ_text(self) -> str:
        lines = [f"# hpclz: /etc/nccl.conf of the Azure HPC image for {self.family} sizes, for containers"]
        lines += [f"{name}={value}" for name, value in self.environ]
        return "\n".join(lines) + "\n"

    def fstab_text(self) -> str | None:
        if not self.topology:
            return None
        return (
            f"# hpclz: the Azure HPC image's NCCL topology files for {self.family} sizes, read-only\n"
            f"{TOPOLOGY_DIR} {TOPOLOGY_DIR} none {MOUNT_OPTIONS} 0 -1\n"
        )


# Azure/azhpc-images@8e9d055f components/setup_sku_customizations.sh l.27-37 (NVIDIA branch), in its order, and
# the /etc/nccl.conf each family's script writes. Families whose script writes no /etc/nccl.conf are left out:
# ncv5 (customizations/ncv5.sh reloads modules only), hbv4 (hbv4.sh, nothing), gb-family
# (Standard_ND128is*_GB[2-3]00_v6, ndv6.sh: a directory and nvidia-peermem, no nccl.conf and no topology file).
FAMILIES: tuple[ImageNccl, ...] = (
    ImageNccl(
        "ncv4",
        ("standard_nc96ads_a100_v4",),
        # customizations/ncv4.sh l.12-16
        (
            ("NCCL_TOPO_FILE", "/opt/microsoft/ncv4/topo.xml"),
            ("NCCL_GRAPH_FILE", "/opt/microsoft/ncv4/graph.xml"),
            ("NCCL_IGNORE_CPU_AFFINITY", "1"),
        ),
        topology=True,
    ),
    ImageNccl(
        "ndv4",
        ("standard_nd*v4",),
        # customizations/ndv4.sh l.11-15
        (
            ("NCCL_IB_PCI_RELAXED_ORDERING", "1"),
            ("NCCL_TOPO_FILE", "/opt/microsoft/ndv4/topo.xml"),
            ("NCCL_IGNORE_CPU_AFFINITY", "1"),
        ),
        topology=True,
    ),
    ImageNccl(
        "ndv2",
        ("standard_nd40rs_v2",),
        # customizations/ndv2.sh l.11-14
        (("NCCL_TOPO_FILE", "/opt/microsoft/ndv2/topo.xml"), ("NCCL_IGNORE_CPU_AFFINITY", "1")),
        topology=True,
    ),
    ImageNccl(
        "ndv5",
        ("standard_nd96is*_h[1-2]00_v5",),
        # customizations/ndv5.sh l.11-15
        (
            ("NCCL_IB_PCI_RELAXED_ORDERING", "1"),
            ("NCCL_TOPO_FILE", "/opt/microsoft/ndv5/topo.xml"),
            ("NCCL_IGNORE_CPU_AFFINITY", "1"),
        ),
        topology=True,
    ),
    ImageNccl(
        "ncv6",
        ("standard_nc*_rtxpro6000bse_v6",),
        # customizations/ncv6.sh l.11-13: no topology file for its PCIe-only GPUs (l.7)
        (("NCCL_SOCKET_IFNAME", "eth0"),),
        topology=False,
    ),
)


def image_nccl(vm_size: str) -> ImageNccl | None:
    """The family whose NCCL settings the image applies on `vm_size`, or None.

    The script's `case` takes the first pattern that matches, so this does too; bash's case patterns (`*`,
    `[1-2]`) mean what fnmatch's do for these names. No size matches both a family left out (ncv5, hbv4, gb-family)
    and one kept, so leaving those out changes no answer (tests/render/test_nccl.py checks the known sizes).
    """
    size = vm_size.lower()
    for family in FAMILIES:
        if any(fnmatchcase(size, pattern) for pattern in family.patterns):
            return family
    return None


def azure_hpc_image(image: str) -> bool:
    """Whether `image` (a marketplace URN) is one of the Azure HPC images azhpc-images builds, the ones that carry
    sku-customizations (AZURE_HPC_IMAGES). A gallery image or another publisher's is not known to, so its
    containers get nothing: NCCL_TOPO_FILE naming a file the host lacks would help no one."""
    parts = image.lower().split(":")
    return len(parts) == 4 and (parts[0], parts[1]) in AZURE_HPC_IMAGES


def container_files(vm_size: str, image: str) -> dict[str, str]:
    """enroot's system-wide files for a node of `vm_size` booting `image`: path -> content; empty where the image
    sets nothing for that size."""
    family = image_nccl(vm_size)
    if family is None or not azure_hpc_image(image):
        return {}
    files = {ENVIRON_FILE: family.environ_text()}
    fstab = family.fstab_text()
    if fstab is not None:
        files[MOUNTS_FILE] = fstab
    return files
