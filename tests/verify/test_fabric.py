"""HPCLZ-VFY-019: the multi-node NVLink fabric of rack-scale GPUs (ND GB200 v6, ND GB300 v6), read from the
<fabric> block of `nvidia-smi -q -x`."""

from __future__ import annotations

import re

from hpclz.verify.checks import CHECKS
from hpclz.verify.probes.facts import NodeFacts, NvidiaSmi
from hpclz.verify.probes.nvsmi import parse_xml
from hpclz.verify.thresholds import load_thresholds
from tests.conftest import REPO

# A real `nvidia-smi -q -x` of an H100 (tests/fixtures/gpu/README.md): its <fabric> block is N/A.
H100_XML = (REPO / "tests" / "fixtures" / "gpu" / "h100" / "nvidia-smi-q.xml").read_text(encoding="utf-8")
GB300 = "Standard_ND128isr_GB300_v6"
# A rack identity as cyclecloud-slurm's README prints one (Azure/cyclecloud-slurm@50e6739 README.md l.352).
RACK = ("b78ed242-7b98-426f-b194-b76b8899f4ec", "32766")


def _node(*fabrics: tuple[str, str, str, str]) -> NodeFacts:
    """A node whose GPUs are the real H100's, one per fabric given, with those <fabric> values."""
    gpu = re.search(r"\t<gpu id=.*?</gpu>\n", H100_XML, flags=re.S)
    assert gpu is not None
    gpus = []
    for state, status, clique, cluster in fabrics:
        block = re.sub(
            r"<fabric>\s*<state>N/A</state>\s*<status>N/A</status>\s*<cliqueId>N/A</cliqueId>\s*"
            r"<clusterUuid>N/A</clusterUuid>",
            f"<fabric><state>{state}</state><status>{status}</status><cliqueId>{clique}</cliqueId>"
            f"<clusterUuid>{cluster}</clusterUuid>",
            gpu.group(),
        )
        gpus.append(block)
    text = H100_XML.replace(gpu.group(), "".join(gpus))
    parsed, driver = parse_xml(text)
    return NodeFacts(node="gb1", sku=GB300, nvsmi=NvidiaSmi(responsive=True, gpus=parsed, driver_version=driver))


def _run(facts: NodeFacts, sku: str = GB300) -> tuple[str, str]:
    (spec,) = [c for c in CHECKS if c.id == "HPCLZ-VFY-019"]
    outcome = spec.run(facts, load_thresholds(sku))
    return outcome.status, outcome.message


REGISTERED = ("Completed", "Success", RACK[1], RACK[0])


def test_four_registered_gpus_in_one_domain_pass() -> None:
    status, message = _run(_node(*[REGISTERED] * 4))
    assert status == "pass" and f"ClusterUUID {RACK[0]} CliqueId {RACK[1]}" in message


def test_a_gpu_still_registering_fails() -> None:
    status, message = _run(_node(REGISTERED, REGISTERED, ("In Progress", "N/A", "N/A", "N/A"), REGISTERED))
    assert status == "fail" and "GPU 2" in message and "fabric In Progress (N/A)" in message


def test_gpus_in_two_cliques_fail() -> None:
    other = ("Completed", "Success", "32767", RACK[0])
    status, message = _run(_node(REGISTERED, REGISTERED, other, REGISTERED))
    assert status == "fail" and "2 NVLink domains" in message


def test_the_real_h100_reports_no_fabric_as_its_size_expects() -> None:
    parsed, _ = parse_xml(H100_XML)
    assert (parsed[0].fabric_state, parsed[0].fabric_clique) == ("N/A", "N/A")
    facts = NodeFacts(node="h1", sku="Standard_ND96isr_H100_v5", nvsmi=NvidiaSmi(responsive=True, gpus=parsed))
    assert _run(facts, "Standard_ND96isr_H100_v5") == (
        "pass",
        "no multi-node NVLink fabric on this size (Fabric State N/A on every GPU)",
    )
    assert _run(facts)[0] == "fail"  # the same reading on a rack-scale size: no fabric is a failure


def test_a_registered_fabric_on_a_size_without_one_is_not_judged() -> None:
    assert _run(_node(*[REGISTERED] * 4), "Standard_ND96isr_H100_v5")[0] == "not_measured"
