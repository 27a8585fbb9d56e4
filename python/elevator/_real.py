"""``elevator.run``: real I/O through the ``elevator run`` executor (io_uring).

The real executor's run (target safety checks, layout of a new file, Ctrl-C handling) lives in
the command line's ``elevator run``; this module runs that binary with ``--output-format json``
and turns its fio-compatible JSON into an Arrow table. (The simulator side of the package calls
the library directly; moving ``elevator run``'s driver into a library the package can call is
open work, see docs/python.md.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Mapping, Optional, Sequence, Union

import pyarrow as pa

from ._elevator import ElevatorError


def _binary(given: Optional[str]) -> str:
    b = given or os.environ.get("ELEVATOR_BIN") or shutil.which("elevator")
    if not b:
        raise ElevatorError(
            "elevator.run needs the elevator binary: cargo build --release, then set "
            "ELEVATOR_BIN=target/release/elevator or put it on PATH"
        )
    return b


def _dir(d: dict, prefix: str) -> dict:
    lat = d.get("lat_ns", {})
    pct = lat.get("percentile", {})
    return {
        f"{prefix}_ios": int(d.get("total_ios", 0)),
        f"{prefix}_bytes": int(d.get("io_bytes", 0)),
        f"{prefix}_iops": float(d.get("iops", 0.0)),
        f"{prefix}_mb_s": float(d.get("bw_bytes", 0)) / 1e6,
        f"{prefix}_mean_ms": float(lat.get("mean", 0.0)) / 1e6,
        f"{prefix}_p99_ms": float(pct.get("99.000000", 0)) / 1e6,
    }


def run_real(
    job: Any,
    *,
    target: Any,
    sched: Union[str, Sequence[str]],
    set: Optional[Mapping[str, int]],
    seed: int,
    allow_overwrite: bool,
    elevator_bin: Optional[str],
) -> pa.Table:
    scheds = sched if isinstance(sched, str) else ",".join(sched)
    cmd = [_binary(elevator_bin), "run", os.fspath(job), "--target", os.fspath(target),
           "--sched", scheds, "--seed", str(int(seed)), "--output-format", "json"]
    for k, v in (set or {}).items():
        cmd += ["--set", f"{k}={int(v)}"]
    if allow_overwrite:
        cmd.append("--allow-overwrite")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        err = p.stderr.strip().splitlines()
        raise ElevatorError(err[0] if err else f"elevator run exited {p.returncode}")
    doc = json.loads(p.stdout)
    runs = doc.get("runs", [doc])
    rows = []
    for r in runs:
        for j in r.get("jobs", []):
            row = {
                "scheduler": r["elevator"]["scheduler"],
                "job": j["jobname"],
                "group": j.get("elevator", {}).get("group", "/"),
                "seconds": float(j.get("job_runtime", 0)) / 1000.0,
            }
            row.update(_dir(j.get("read", {}), "read"))
            row.update(_dir(j.get("write", {}), "write"))
            rows.append(row)
    return pa.Table.from_pylist(rows)
