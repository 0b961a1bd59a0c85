"""Which fault a failed verify check is, and what to try before filing it with Azure.

The fault class is the check's aznhc fault code (`CheckResult.nhc_code`; verify sets one per check, and per Xid for
HPCLZ-VFY-006). Each code maps to the Guest Health Report category aznhc's own reporter files for it
(Azure/azurehpc-health-checks triggerGHR/config/nhc_fault_dictionary.cfg @40e5333, lines 1-22); every category is
one Azure lists (MicrosoftDocs/azure-compute-docs articles/azure-impact-reporting/guest-health-impact-categories.md
@883ff7b), all "marked as out for repair".

What comes before the report:
- nothing, where the fault is in the hardware and Azure must take the node: Xid 79, 94, 95 and 48 (NHC2011-2014),
  a row-remap failure ("an official end of life condition: decommission the GPU", guest-health-impact-report.md
  @01f777c, "GPU row remapping"), DBE and page retirement over the limit (NHC2018/2019), InfoROM corruption
  (NHC2008), and a flapping IB port (NHC2005: flaps over 24 h are the evidence; a reboot erases none of it);
- a reboot, where the category's own words say the fault must persist before it is reported ("IB port is
  persistently down", NHC2004; "Nvidia-smi hang and may not recover", NHC2015) or where verify's fix for the
  check says reboot first (missing GPU NHC2009, NVLink NHC2016, missing NVMe NHC2023: hpclz.verify.checks);
- a reboot, then a reimage, for everything else (a generic failure NHC2001 may be the image's, not the host's).
"""

from __future__ import annotations

from dataclasses import dataclass

REBOOT, REIMAGE, REPORT = "reboot", "reimage", "report"

CATEGORY = {
    "NHC2001": "Resource.Hpc.Unhealthy.HpcGenericFailure",
    "NHC2002": "Resource.Hpc.Unhealthy.MissingIB",
    "NHC2003": "Resource.Hpc.Unhealthy.IBPerformance",
    "NHC2004": "Resource.Hpc.Unhealthy.IBPortDown",
    "NHC2005": "Resource.Hpc.Unhealthy.IBPortFlapping",
    "NHC2006": "Resource.Hpc.Unhealthy.HpcGpuDcgmDiagFailure",
    "NHC2007": "Resource.Hpc.Unhealthy.HpcRowRemapFailure",
    "NHC2008": "Resource.Hpc.Unhealthy.HpcInforomCorruption",
    "NHC2009": "Resource.Hpc.Unhealthy.HpcMissingGpu",
    "NHC2010": "Resource.Hpc.Unhealthy.ManualInvestigation",
    "NHC2011": "Resource.Hpc.Unhealthy.XID95UncontainedECCError",
    "NHC2012": "Resource.Hpc.Unhealthy.XID94ContainedECCError",
    "NHC2013": "Resource.Hpc.Unhealthy.XID79FallenOffBus",
    "NHC2014": "Resource.Hpc.Unhealthy.XID48DoubleBitECC",
    "NHC2015": "Resource.Hpc.Unhealthy.UnhealthyGPUNvidiasmi",
    "NHC2016": "Resource.Hpc.Unhealthy.NvLink",
    "NHC2017": "Resource.Hpc.Unhealthy.HpcDcgmiThermalReport",
    "NHC2018": "Resource.Hpc.Unhealthy.ECCPageRetirementTableFull",
    "NHC2019": "Resource.Hpc.Unhealthy.DBEOverLimit",
    "NHC2020": "Resource.Hpc.Unhealthy.HpcGpuDcgmDiagFailure",
    "NHC2021": "Resource.Hpc.Unhealthy.GPUMemoryBWFailure",
    "NHC2022": "Resource.Hpc.Unhealthy.CPUPerformance",
}
# A missing NVMe is "HpcGenericFailure (missing NVMe)" in aznhc's table, which has no NHC2023 line.
CATEGORY["NHC2023"] = CATEGORY["NHC2001"]
GENERIC = "NHC2001"

REPORT_AT_ONCE = frozenset(
    {"NHC2005", "NHC2007", "NHC2008", "NHC2011", "NHC2012", "NHC2013", "NHC2014", "NHC2018", "NHC2019"}
)
REBOOT_FIRST = frozenset({"NHC2002", "NHC2004", "NHC2009", "NHC2015", "NHC2016", "NHC2023"})


@dataclass(frozen=True)
class FaultClass:
    code: str  # the aznhc fault code
    category: str  # the Guest Health Report category
    ladder: tuple[str, ...]  # actions in order; the last is always REPORT

    @property
    def first(self) -> str:
        return self.ladder[0]


def classify(nhc_code: str | None) -> FaultClass:
    """The fault class of a failed check; an unknown or missing code is a generic failure."""
    code = nhc_code if nhc_code in CATEGORY else GENERIC
    assert code is not None
    if code in REPORT_AT_ONCE:
        ladder: tuple[str, ...] = (REPORT,)
    elif code in REBOOT_FIRST:
        ladder = (REBOOT, REPORT)
    else:
        ladder = (REBOOT, REIMAGE, REPORT)
    return FaultClass(code, CATEGORY[code], ladder)


def worst(codes: list[str | None]) -> FaultClass:
    """One class for a node with several failed checks: the one with the shortest ladder (the surest hardware
    fault) wins, so a node with an Xid 79 and a slow NCCL run is reported, not rebooted."""
    classes = [classify(code) for code in codes] or [classify(None)]
    return min(classes, key=lambda c: (len(c.ladder), c.code))
