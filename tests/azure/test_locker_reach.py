"""hpclz's locker upload (hpclz.azure.locker.upload_once) against a locker behind its network
(tests/support/arm_standin/reach.py): from outside the VNet the upload is refused with Storage's AuthorizationFailure
and hpclz says so in one line with what to do; through the private endpoint from inside it goes in once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hpclz.azure.locker import CONNECTION_STRING_ENV, LockerError, upload_once
from tests.azure.test_standin_reach import ACCOUNT_ID, VM, _account, _private_endpoint
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.data_planes import BlobFront
from tests.support.arm_standin.reach import WORKSTATION, Origin
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, shared_azurite
from tests.support.locker import locker_env


@pytest.fixture
def arm(tmp_path: Path) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin") as standin:
        _account(standin)
        _private_endpoint(standin, ACCOUNT_ID, "blob")
        yield standin


def _through(arm: ArmStandIn, origin: Origin, monkeypatch: pytest.MonkeyPatch) -> BlobFront:
    locker_env()  # the wheel container exists, as the storage deployment makes it
    front = BlobFront(arm, ACCOUNT_ID, shared_azurite().account_url, origin).start()
    monkeypatch.setenv(CONNECTION_STRING_ENV, front.connection_string(ACCOUNT, ACCOUNT_KEY))
    return front


def test_from_outside_the_upload_is_refused_in_one_line_that_says_where_to_deploy_from(
    arm: ArmStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = tmp_path / "w.whl"
    wheel.write_bytes(b"wheel")
    front = _through(arm, WORKSTATION, monkeypatch)
    try:
        with pytest.raises(LockerError) as refused:
            upload_once("stlocker", "hpclz", "outside/w.whl", wheel)
    finally:
        front.stop()
    assert str(refused.value) == (
        "cannot upload hpclz/outside/w.whl in the CycleCloud locker stlocker: AuthorizationFailure; "
        "the locker accepts its private endpoint only: deploy from inside the landing zone's network"
    )
    assert front.refused == ["public network access is disabled"]


def test_from_inside_it_goes_in_once(arm: ArmStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = tmp_path / "w.whl"
    wheel.write_bytes(b"wheel")
    front = _through(arm, VM, monkeypatch)
    try:
        assert upload_once("stlocker", "hpclz", "inside/w.whl", wheel) is True
        assert upload_once("stlocker", "hpclz", "inside/w.whl", wheel) is False
    finally:
        front.stop()
    assert front.refused == []
