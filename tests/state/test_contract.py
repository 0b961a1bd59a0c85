"""The StateBackend contract, run against both backends (local files, and Azure Blob on Azurite)."""

from __future__ import annotations

import pytest

from hpclz.config.root import LandingZoneConfig
from hpclz.errors import ExitCode
from hpclz.state.backend import StateBackend
from hpclz.state.errors import StateConflictError, StateLockedError
from hpclz.state.factory import new_state
from tests.state.conftest import OpenBackend, sample_state


def test_round_trip_keeps_every_field(open_state: OpenBackend, config: LandingZoneConfig) -> None:
    backend = open_state()
    assert backend.read() is None
    doc = sample_state(config)
    written = backend.write(doc)
    again = open_state().read()
    assert again == written
    assert again is not None
    assert again.resources[0].properties == {"addressSpace": {"addressPrefixes": ["10.40.0.0/16"]}}
    assert again.deployments["energy-network"].template_hash == "ab" * 32
    assert again.outputs["vnetId"].endswith("/vnet-energy-prod")
    assert (again.lineage, again.landing_zone, again.environment) == (doc.lineage, "energy", "prod")


def test_each_write_bumps_the_serial(open_state: OpenBackend, config: LandingZoneConfig) -> None:
    backend = open_state()
    doc = new_state(config)
    serials = []
    for _ in range(3):
        doc = backend.write(doc)
        serials.append(doc.serial)
    assert serials == [1, 2, 3]
    stored = open_state().read()
    assert stored is not None and stored.serial == 3
    assert stored.updated_at >= stored.created_at


def test_a_document_of_another_lineage_is_refused(open_state: OpenBackend, config: LandingZoneConfig) -> None:
    backend = open_state()
    first = backend.write(new_state(config))
    stranger = new_state(config).model_copy(update={"serial": first.serial})
    with pytest.raises(StateConflictError, match="lineage"):
        open_state().write(stranger)
    assert open_state().read() == first


def test_a_stale_writer_is_refused(open_state: OpenBackend, config: LandingZoneConfig) -> None:
    open_state().write(sample_state(config))
    alice, bob = open_state(), open_state()
    alice_doc, bob_doc = alice.read(), bob.read()
    assert alice_doc is not None and bob_doc is not None
    alice_doc.outputs["by"] = "alice"
    bob_doc.outputs["by"] = "bob"
    alice.write(alice_doc)
    with pytest.raises(StateConflictError, match="changed since it was read"):
        bob.write(bob_doc)
    stored = open_state().read()
    assert stored is not None and (stored.serial, stored.outputs["by"]) == (2, "alice")


def test_a_document_based_on_an_old_serial_is_refused(open_state: OpenBackend, config: LandingZoneConfig) -> None:
    """Also without a `read` on this instance: the document's own serial must be the stored one."""
    old = open_state().write(new_state(config))
    open_state().write(old)
    with pytest.raises(StateConflictError, match="serial 2 but this write is based on serial 1"):
        open_state().write(old)


def test_two_writers_creating_the_first_state_one_wins(open_state: OpenBackend, config: LandingZoneConfig) -> None:
    alice, bob = open_state(), open_state()
    assert alice.read() is None and bob.read() is None
    alice.write(new_state(config))
    with pytest.raises(StateConflictError):
        bob.write(new_state(config))


def test_previous_versions_are_kept_and_pruned(open_state: OpenBackend, config: LandingZoneConfig) -> None:
    backend = open_state(keep=3)
    doc = sample_state(config)
    for n in range(5):
        doc.outputs["round"] = n
        doc = backend.write(doc)
    assert [h.serial for h in backend.history()] == [4, 3, 2]
    second = backend.read_version(3)
    assert second is not None and (second.serial, second.outputs["round"]) == (3, 2)
    assert backend.read_version(1) is None


def test_a_second_lock_is_refused_and_told_who_holds_it(open_state: OpenBackend) -> None:
    holder, other = open_state(), open_state()
    with holder.lock("deploy") as info:
        with pytest.raises(StateLockedError) as refused, other.lock("destroy"):
            pass
        message = str(refused.value)
        assert refused.value.exit_code is ExitCode.STATE_LOCKED
        assert info.who in message and f"pid {info.pid}" in message and "'deploy'" in message
        assert info.created.strftime("%Y-%m-%d %H:%M:%S") in message
        assert "hpclz state unlock" in message and "--force" in message
        seen = other.lock_info()
        assert seen is not None and (seen.id, seen.operation) == (info.id, "deploy")
    assert other.lock_info() is None
    with other.lock("destroy") as mine:
        assert mine.operation == "destroy"


def test_force_unlock_says_who_held_it_and_stops_the_old_holder(
    open_state: OpenBackend, config: LandingZoneConfig
) -> None:
    holder, rescuer = open_state(), open_state()
    assert rescuer.force_unlock() is None
    with holder.lock("deploy") as info:
        broken = rescuer.force_unlock()
        assert broken is not None and (broken.id, broken.operation, broken.pid) == (info.id, "deploy", info.pid)
        assert rescuer.lock_info() is None
        with rescuer.lock("repair"):
            with pytest.raises(StateLockedError, match="lost the lock"):
                holder.write(new_state(config))
            seen = holder.lock_info()
            assert seen is not None and seen.operation == "repair"
    assert _stored_serial(rescuer) is None


def _stored_serial(backend: StateBackend) -> int | None:
    doc = backend.read()
    return doc.serial if doc else None


def test_a_fresh_state_reads_as_empty(open_state: OpenBackend) -> None:
    backend = open_state()
    assert (backend.read(), backend.lock_info(), backend.history(), backend.read_version(1)) == (None, None, [], None)
    assert backend.force_unlock() is None
