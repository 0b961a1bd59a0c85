"""HPCLZ-VFY-023 on `dcgmi diag -r 1 --json` documents of DCGM 2.x, 3.x and 4.x (corpus/dcgm, PROVENANCE.md).

No public capture of dcgmi's JSON was found, so the v*.json documents are built to the layout of that DCGM
version's dcgmi/Diag.cpp, with DCGM's own error messages (dcgmlib/dcgm_errors.h); the 4.x ones are checked against
the JSON schema DCGM's own tests use (testing/python3/dcgm_diag_schema.json, copied here). One document is
NVIDIA's own (nvidia-dcgm-per-gpu-r3.json, from DCGM's testing/TestDiagManagerStrings.h).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from hpclz.verify import perf
from hpclz.verify.checks.core import FAIL, NOT_MEASURED, PASS, WARN
from hpclz.verify.checks.perf import dcgm_diag
from hpclz.verify.probes.facts import NodeFacts, NvidiaSmi, Reading
from hpclz.verify.thresholds import Thresholds
from tests.verify.helpers import FIXTURES

DCGM = FIXTURES / "corpus" / "dcgm"


def document(name: str) -> Any:
    return json.loads((DCGM / name).read_text())


@pytest.mark.parametrize("name", sorted(p.name for p in DCGM.glob("v4-*.json") if "iterations" not in p.name))
def test_4x_documents_follow_dcgms_own_schema(name: str) -> None:
    jsonschema.Draft7Validator(document("dcgm_diag_schema.json")).validate(document(name))


# document -> (status, words in the message)
CASES = {
    "v2-r1-fail-inforom.json": (FAIL, "Inforom GPU 0,1: A corrupt InfoROM has been detected in GPU 1."),
    "v3-r1-fail-row-remap.json": (
        FAIL,
        "Page Retirement/Row Remap GPU 3: GPU 3 had memory errors and row remappings are pending",
    ),
    "v4-r1-fail-persistence.json": (FAIL, "Persistence Mode GPU 5: Persistence mode for GPU 5 is disabled."),
    "v4-r1-pass.json": (PASS, "80 DCGM r1 results passed"),
    "v4-r1-all-skipped.json": (NOT_MEASURED, "every DCGM r1 test was skipped (80)"),
    "v4-runtime-error.json": (FAIL, "dcgmi diag could not run: Host engine connection invalid/disconnected"),
    "v4-r1-warn.json": (WARN, "Page Retirement/Row Remap GPU 2: A pending retired page has been detected in GPU 2."),
    "v4-iterations-aborted.json": (FAIL, "Overall Result: DCGM GPU Diagnostic returned an error"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dcgm_verdict_per_document(name: str) -> None:
    status, words = CASES[name]
    facts = NodeFacts(node="n1", sku=None, nvsmi=NvidiaSmi(True))
    facts.dcgm = Reading(perf.dcgm_summary(document(name)))
    verdict = dcgm_diag(facts, Thresholds(None))
    assert verdict.status == status and words in verdict.message, verdict


def test_every_corpus_document_has_a_case() -> None:
    assert {p.name for p in DCGM.glob("v*.json")} == set(CASES)


def test_nvidias_own_per_gpu_document_fails_on_its_three_sm_stress_results() -> None:
    """NVIDIA/DCGM testing/TestDiagManagerStrings.h's PER_GPU_JSON (a -r 3 run of 4 GPUs in the 2.x layout:
    `gpu_ids` strings, upper-case PASS/SKIP/FAIL, ECC-off and missing-diagnostic skips), read as written there."""
    found = perf.dcgm_summary(document("nvidia-dcgm-per-gpu-r3.json"))
    assert (found["passed"], found["skipped"], len(found["failed"]), found["warned"]) == (18, 17, 3, [])
    facts = NodeFacts(node="n1", sku=None, nvsmi=NvidiaSmi(True))
    facts.dcgm = Reading(found)
    verdict = dcgm_diag(facts, Thresholds(None))
    assert verdict.status == FAIL and verdict.measured == 3
    assert verdict.message.startswith(
        "sm_stress GPU 0: Max stress level of 2128.7 did not exceed desired stress level of 3000.0 for GPU 0"
    )
    assert "sm_stress GPU 3: Max stress level of 1099.7" in verdict.message
