"""Azurite (the Azure Storage emulator) on a free loopback port, for tests of the Blob state backend.

Use the `azurite` fixture (session scope): it yields the account's connection string and blob
endpoint, and stops the emulator afterwards. Under CI=true a missing azurite-blob fails the run.
Flags and pitfalls: docs/local-services.md.
"""

from __future__ import annotations

import atexit
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, require
from tests.support.local_http import free_ports

# Azurite's published development account (not a secret: it is in Microsoft's docs and every emulator).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
START_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Azurite:
    host: str
    port: int

    @property
    def account_url(self) -> str:
        return f"http://{self.host}:{self.port}/{ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={self.account_url};"
        )


def find_azurite() -> str | None:
    local = REPO / ".tools" / "node_modules" / ".bin" / "azurite-blob"
    return shutil.which("azurite-blob") or (str(local) if local.exists() else None)


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Until Azurite itself says it listens on `port`. A connect alone is not proof: the port was free when chosen,
    and another test process (a pytest-xdist worker) may bind it before Azurite does; Azurite then exits with
    "listen EADDRINUSE" while the connect reaches the other process's server."""
    listening = f"successfully listens on http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AzuriteExited(f"azurite-blob exited with {process.returncode}: {log.read_text()[-2000:]}")
        if listening in log.read_text(errors="replace"):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
        time.sleep(0.1)
    raise RuntimeError(f"azurite-blob did not listen on port {port} within {START_TIMEOUT_S} s")


class AzuriteExited(RuntimeError):
    """Azurite ended before it listened (a port taken between choosing it and binding it): start it again."""


def start_azurite(binary: str, workdir: Path) -> tuple[subprocess.Popen[bytes], Azurite]:
    for attempt in range(3):
        try:
            return _start_on_a_free_port(binary, workdir)
        except AzuriteExited:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_on_a_free_port(binary: str, workdir: Path) -> tuple[subprocess.Popen[bytes], Azurite]:
    [port] = free_ports(1)
    log = workdir / "azurite.log"
    # --skipApiVersionCheck: azure-storage-blob sends a newer service version than Azurite knows.
    # No --location: with --inMemoryPersistence it makes Azurite exit. cwd keeps its debug files out of the repo.
    command = [
        binary,
        "--blobHost", "127.0.0.1",
        "--blobPort", str(port),
        "--inMemoryPersistence",
        "--skipApiVersionCheck",
        "--disableTelemetry",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_listening(process, port, log)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process, Azurite("127.0.0.1", port)


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    binary = find_azurite()
    require(binary is not None, "Azurite (azurite-blob on PATH or in .tools/node_modules/.bin)")
    assert binary is not None
    with tempfile.TemporaryDirectory(prefix="hpclz-azurite-") as workdir:
        process, service = start_azurite(binary, Path(workdir))
        try:
            yield service
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


_shared: Azurite | None = None


def shared_azurite() -> Azurite:
    """One Azurite for the whole test process, started on first use and stopped at exit: for harnesses (the ARM
    stand-in's deploys upload hpclz's wheel to the locker) that are not pytest fixtures themselves."""
    global _shared
    if _shared is None:
        binary = find_azurite()
        require(binary is not None, "Azurite (azurite-blob on PATH or in .tools/node_modules/.bin)")
        assert binary is not None
        workdir = tempfile.TemporaryDirectory(prefix="hpclz-azurite-")
        process, _shared = start_azurite(binary, Path(workdir.name))

        def stop() -> None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            workdir.cleanup()

        atexit.register(stop)
    return _shared
