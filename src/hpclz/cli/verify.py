from __future__ import annotations

import dataclasses
from enum import StrEnum
from pathlib import Path

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded


class Engine(StrEnum):
    megatron = "megatron"
    cpu = "cpu"


class Via(StrEnum):
    slurm = "slurm"
    run_command = "run-command"
    ssh = "ssh"


def verify(
    config: Path = typer.Argument(..., metavar="CONFIG", help="Landing-zone config (YAML)."),
    partition: str | None = typer.Option(
        None, "--partition", "-p", metavar="NAME", help="Slurm partition (default: the config's)."
    ),
    nodes: str | None = typer.Option(
        None, "--nodes", "-w", metavar="HOSTLIST", help="Only these nodes, a Slurm hostlist: gpu[001-016]."
    ),
    nccl: bool = typer.Option(
        False,
        "--nccl",
        help="Also run all-reduce: ring pairs of nodes, then all nodes (rack-scale sizes: each rack, then across racks).",
    ),
    drain: bool = typer.Option(
        False, "--drain", help="Drain failing nodes (reason 'hpclz: ...'); resume nodes hpclz drained that now pass."
    ),
    junit: Path | None = typer.Option(None, "--junit", metavar="FILE", help="Write a JUnit XML report here, for CI."),
    plot: Path | None = typer.Option(
        None,
        "--plot",
        metavar="FILE",
        help="Write the bandwidth plot here (HTML with inline SVG; a PNG too if matplotlib is there).",
    ),
    local: bool = typer.Option(False, "--local", help="Check this machine only, without Slurm."),
    slurm_conf: Path | None = typer.Option(
        None, "--slurm-conf", metavar="FILE", help="slurm.conf to use (default: $SLURM_CONF)."
    ),
    budget: int | None = typer.Option(
        None,
        "--budget",
        min=10,
        metavar="SECONDS",
        help="Seconds each node may take (default: twice verify.check_timeout_seconds).",
    ),
    work_dir: Path | None = typer.Option(
        None,
        "--work-dir",
        metavar="DIR",
        help="Folder for job scripts and per-node results, shared with the nodes (default: ./.hpclz/verify/<time>). "
        "With --via run-command: the folder on the scheduler the run's own folder is made in and removed from "
        "(default: <shared mount>/.hpclz-verify).",
    ),
    python: str | None = typer.Option(
        None,
        "--python",
        metavar="PATH",
        help="A Python with hpclz that every node has, if you installed one there (default: python3 with the node "
        "bundle, --bundle).",
    ),
    bundle: str | None = typer.Option(
        None,
        "--bundle",
        metavar="PATH",
        help="The single-file node bundle as the nodes see it (default: /sched/<cluster>/hpclz/hpclz-node.pyz, "
        "where the scheduler installs it with the health gate).",
    ),
    scheduler_python: str | None = typer.Option(
        None,
        "--scheduler-python",
        metavar="PATH",
        help="With --via run-command: the scheduler's Python that has hpclz (default: /opt/hpclz/venv/bin/python).",
    ),
    suppress: list[str] = typer.Option(
        [],
        "--suppress",
        metavar="ID",
        help="Verify check ID to report without failing or draining (repeatable); adds to the config's.",
    ),
    via: Via | None = typer.Option(
        None,
        "--via",
        help="slurm: through this machine's Slurm. run-command: on the scheduler VM through Azure Run Command "
        "(the default where this machine has no Slurm). ssh: print the Bastion command to run it there yourself.",
    ),
    scheduler: str | None = typer.Option(
        None,
        "--scheduler",
        metavar="VM_RESOURCE_ID",
        help="The scheduler VM (default: the VM CycleCloud tagged as the cluster's scheduler).",
    ),
    report_account: str | None = typer.Option(
        None,
        "--report-account",
        metavar="URL",
        help="Blob account the scheduler writes its report to (default: the state's account).",
    ),
    time_limit: int | None = typer.Option(
        None,
        "--time-limit",
        min=60,
        max=86400,
        metavar="SECONDS",
        help="With --via run-command: the Run Command's time limit (default: derived from the partitions' sizes, "
        "--budget and --nccl).",
    ),
    workload: bool = typer.Option(
        False,
        "--workload",
        help="Also prove the cluster trains: a short Megatron-LM GPT run per node and across all nodes, through "
        "Slurm and pyxis, judged on tokens/s per GPU, MFU, weak scaling and the loss (docs/verify-workload.md).",
    ),
    workload_engine: Engine = typer.Option(
        Engine.megatron,
        "--workload-engine",
        help="megatron: Megatron-LM in the NGC PyTorch container on the GPUs. cpu: the gloo stand-in (needs a Python "
        "with hpclz and torch on the nodes, --python).",
    ),
    workload_data: list[Path] = typer.Option(
        [],
        "--workload-data",
        metavar="FILE",
        help="Documents to train on: JSON lines with a text or content field, or text files (repeatable; default: "
        "hpclz's own Python sources).",
    ),
    workload_iters: int = typer.Option(
        200, "--workload-iters", min=20, max=100000, metavar="N", help="Iterations per run."
    ),
    workload_image: str | None = typer.Option(
        None,
        "--workload-image",
        metavar="IMAGE",
        help="enroot image with PyTorch for Megatron-LM (default: NGC PyTorch pinned by digest).",
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Check every node through Slurm, name the failing ones and why; optionally drain them."""
    with guarded("verify", output):
        from hpclz.services.verify import VerifyOptions, write_artifacts
        from hpclz.services.verify import verify as run_verify

        options = VerifyOptions(
            config=config,
            partition=partition,
            nodes=nodes,
            nccl=nccl,
            drain=drain,
            local=local,
            slurm_conf=slurm_conf,
            work_dir=work_dir,
            python=python,
            bundle=bundle,
            node_budget_s=budget,
            suppress=tuple(suppress),
            via=via.value if via else None,
            scheduler=scheduler,
            report_account=report_account,
            time_limit_s=time_limit,
            workload=workload,
            workload_engine=workload_engine.value,
            workload_data=tuple(workload_data),
            workload_iters=workload_iters,
            workload_image=workload_image,
            progress=lambda line: typer.echo(line, err=True),
        )
        if scheduler_python:
            options = dataclasses.replace(options, remote_python=scheduler_python)
        from hpclz.cli.views import verify as view

        result = run_verify(options)
        write_artifacts(result.payload.report, junit=junit, plot=plot)
        finish(result, output, view.show)
