"""Beam runner options and results shared by the pipelines: short runner names, counters where a
runner has them, and a progress line per unit of work.

Beam accepts ``--runner NAME`` for the runners it ships as ``apache_beam.runners.NAME`` modules
(DirectRunner, DataflowRunner, FlinkRunner, SparkRunner, ...); the Dask runner lives deeper
(``apache_beam.runners.dask.dask_runner.DaskRunner``), so ``RUNNER_ALIASES`` maps its short name.
Some runners (Dask, as of Beam 2.77) raise ``NotImplementedError: collecting metrics will come
later!`` from ``result.metrics()``: ``counters`` returns None there and the pipelines go on.
"""

from __future__ import annotations

import sys

RUNNER_ALIASES = {
    "DaskRunner": "apache_beam.runners.dask.dask_runner.DaskRunner",
}


def expand_runner(beam_args: list[str]) -> list[str]:
    """``beam_args`` with a short ``--runner`` name of RUNNER_ALIASES replaced by its full path."""
    out = list(beam_args)
    for i, arg in enumerate(out):
        if arg == "--runner" and i + 1 < len(out) and out[i + 1] in RUNNER_ALIASES:
            out[i + 1] = RUNNER_ALIASES[out[i + 1]]
        elif arg.startswith("--runner=") and arg.split("=", 1)[1] in RUNNER_ALIASES:
            out[i] = "--runner=" + RUNNER_ALIASES[arg.split("=", 1)[1]]
    return out


def pipeline_options(beam_args: list[str]):
    from apache_beam.options.pipeline_options import PipelineOptions

    return PipelineOptions(expand_runner(beam_args))


def counters(result, namespace: str) -> dict | None:
    """{counter name: value} of ``namespace``; None when the runner collects no metrics."""
    try:
        found = result.metrics().query()["counters"]
    except NotImplementedError:
        return None
    return {c.key.metric.name: c.committed if c.committed is not None else c.attempted
            for c in found if c.key.metric.namespace == namespace}


def progress(stage: str, message: str):
    """One progress line on stderr (on a distributed runner: in the worker's log)."""
    print(f"{stage}: {message}", file=sys.stderr, flush=True)


def close(result):
    """Closes what a runner left open: the Dask runner's client (its connection to the scheduler)."""
    client = getattr(result, "client", None)
    if client is not None and hasattr(client, "close"):
        client.close()
