"""One stand-in's world carried into another: what a deploy left there (groups, resources, deployments, run commands,
role grants, policy's log, Graph's apps, the request log), deep-copied into a freshly started stand-in, so that tests
can start from a zone deployed once per worker while sharing nothing mutable with each other.

Each part of the new stand-in keeps the objects it made for itself: its servers, its locks and the callables that
point back at it (a guard, an operation's URL maker, a test's hook). Only data is copied, and a copy stops with an
error where the old stand-in holds a callable the new one does not own (a hook added later must be named in OWN, or
the copy would still call into the old stand-in), or where it holds anything still in flight."""

from __future__ import annotations

import copy
import dataclasses
import threading
import types
from typing import Any

from tests.support.arm_standin.graph import GraphFront
from tests.support.arm_standin.proving import ProvingGround
from tests.support.arm_standin.repair import Repairs
from tests.support.arm_standin.run_commands import VirtualMachines
from tests.support.arm_standin.server import ArmStandIn
from tests.support.arm_standin.world import World

# Per part of the stand-in, the attributes the new stand-in keeps as it made them: the parts themselves (copied
# one by one below), servers and certificates, locks, and the hooks wired to the stand-in that made them.
OWN: dict[type, frozenset[str]] = {
    ArmStandIn: frozenset({"world", "compute", "proving", "repairs", "graph", "bugs", "cert", "key", "_server"}),
    World: frozenset({"lock", "faults", "guards", "output_order", "async_ops"}),
    VirtualMachines: frozenset({"world", "blob_route", "from_vm", "in_transit"}),
    ProvingGround: frozenset({"world", "bugs"}),
    Repairs: frozenset({"world", "on_action", "_start_async", "_op_url"}),
    GraphFront: frozenset({"standin", "_server", "_lock", "scheme"}),
}
_LOCKS: dict[type, Any] = {type(threading.Lock()): threading.Lock, type(threading.RLock()): threading.RLock}
_CALLABLES = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.LambdaType)


class SnapshotError(RuntimeError):
    pass


def _parts(standin: ArmStandIn) -> list[Any]:
    return [standin, standin.world, standin.compute, standin.proving, standin.repairs, standin.graph]


def fingerprint(standin: ArmStandIn) -> Any:
    """What `carry` would overwrite in `standin`, as plain data (a lock is "lock", an event whether it is set)."""
    return [
        {name: _plain(value) for name, value in vars(part).items() if name not in OWN[type(part)]}
        for part in _parts(standin)
    ]


def _plain(value: Any) -> Any:
    if type(value) in _LOCKS:
        return "lock"
    if isinstance(value, threading.Event):
        return value.is_set()
    if isinstance(value, dict):
        return {repr(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(map(repr, map(_plain, value)))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def carry(old: ArmStandIn, new: ArmStandIn, pristine: Any) -> None:
    """Copy `old`'s world into `new`: afterwards `new` answers as `old` would have. `pristine`: `fingerprint(old)`
    before anything was done to it; `new` must still match it (a test that set something up in its stand-in first,
    a fault, a principal, a taken name, would lose it to the copy: such a test deploys for itself)."""
    if fingerprint(new) != pristine:
        raise SnapshotError("the stand-in to copy into is not as it started: deploy in it instead")
    if old.bugs:
        raise SnapshotError(f"the stand-in being copied failed: {old.bugs}")
    if old.world.faults._items:
        raise SnapshotError("the stand-in being copied still holds faults")
    if any(run.state not in ("Succeeded", "Failed", "Canceled") for run in old.world.deployments.values()):
        raise SnapshotError("the stand-in being copied has a deployment still running")
    if any(not c.done.is_set() for c in old.compute.commands.values()):
        raise SnapshotError("the stand-in being copied has a run command still running")
    memo: dict[int, Any] = {id(a): b for a, b in zip(_parts(old), _parts(new), strict=True)}
    memo[id(old.bugs)] = new.bugs
    for part, into in zip(_parts(old), _parts(new), strict=True):
        own = OWN[type(part)]
        for name, value in vars(part).items():
            if name in own:
                continue
            _fresh_sync_objects(value, memo, f"{type(part).__name__}.{name}")
            setattr(into, name, copy.deepcopy(value, memo))


def _fresh_sync_objects(value: Any, memo: dict[int, Any], where: str) -> None:
    """Seed `memo` with a new lock or event for each one in `value`; refuse callables (they would stay the old
    stand-in's)."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if id(item) in seen or id(item) in memo or item is None or isinstance(item, (str, bytes, int, float, bool)):
            continue
        seen.add(id(item))
        if type(item) in _LOCKS:
            memo[id(item)] = _LOCKS[type(item)]()
        elif isinstance(item, threading.Event):
            fresh = threading.Event()
            if item.is_set():
                fresh.set()
            memo[id(item)] = fresh
        elif isinstance(item, _CALLABLES) or (callable(item) and not isinstance(item, type)):
            raise SnapshotError(f"{where} holds {item!r}: name it in OWN if the new stand-in makes its own")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif dataclasses.is_dataclass(item):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
        elif hasattr(item, "__dict__"):
            stack.extend(vars(item).values())
