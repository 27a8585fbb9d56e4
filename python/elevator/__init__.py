"""elevator: Linux block I/O schedulers in a deterministic simulator, from Python.

The package is a thin layer over the same Rust library as the ``elevator`` command line
(``elevator sim --sweep``): a grid of cells (a scenario, a fio job file or a block trace, crossed
with schedulers, tunables, drives and seeds) is run in Rust, without the GIL, on every core, and
comes back as Arrow tables.

- :func:`sim` runs a grid at once and returns :class:`Results` (``.table``: one row per job per
  cell with the sweep's coordinates as columns; ``.requests``: one row per request when asked).
- :class:`Campaign` keeps a grid's cells as Parquet files in a directory as they finish; a
  rerun computes only the missing cells; ``engine="ray"`` runs them as Ray tasks.
- :func:`run` runs a fio job file on a real file or device through the same io_uring executor
  as ``elevator run`` (the library, not the binary), returning the same table shape.
- Bad input raises :class:`InputError` (``file``, ``line``, ``field``, ``message``); other
  failures :class:`ElevatorError`.

Example::

    import elevator
    r = elevator.sim("anticipatory", sched=["deadline", "anticipatory"], sweep={"seed": [1, 2]})
    r.to_polars().select("scheduler", "seed", "job", "seconds")
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import pyarrow as pa

from . import _check, _elevator
from ._elevator import ElevatorError, InputError
from .campaign import Campaign

__all__ = [
    "Campaign",
    "ElevatorError",
    "InputError",
    "Results",
    "Scenario",
    "drives",
    "grid_spec",
    "merge",
    "run",
    "scenarios",
    "schedulers",
    "sim",
]

__version__ = _elevator.__version__

PathLike = Union[str, "os.PathLike[str]"]


def schedulers() -> list[dict]:
    """Every scheduler: ``name``, ``aliases``, ``summary`` and ``tunables`` (each with ``name``
    as in sysfs, ``unit``, ``default``, ``min``, ``max``, ``doc``)."""
    return _elevator.schedulers()


def drives() -> list[str]:
    """The built-in drive models' names (rotational drives and SSDs)."""
    return _elevator.drives()


def scenarios() -> list[str]:
    """The built-in scenarios' names."""
    return [name for name, _ in _elevator.scenarios()]


class Scenario:
    """A scenario: a drive, groups, tunables and jobs (TOML, see scenarios/ in the repository).

    Make one with :meth:`builtin`, :meth:`load` or :meth:`from_toml`; pass it to :func:`sim` or
    :class:`Campaign`. ``name``, ``description``, ``drive``, ``seed`` and ``jobs`` describe it.
    """

    def __init__(self, text: str, origin: str = "<input>", directory: Optional[str] = None):
        if not isinstance(text, str):
            raise _check.error("text", f"expected the scenario's TOML text, got {_check.shown(text)}")
        origin = _check.text("origin", origin)
        if directory is not None:
            directory = _check.path("directory", directory)
        self.text = _check.unicode("text", text)
        self.origin = origin
        self.directory = directory
        info = _elevator.scenario_info(text, origin, directory)
        self.name: str = info["name"]
        self.description: str = info["description"]
        self.drive: str = info["drive"]
        self.seed: int = info["seed"]
        self.jobs: list[str] = info["jobs"]

    @classmethod
    def builtin(cls, name: str) -> "Scenario":
        """The built-in scenario ``name`` (see :func:`scenarios`)."""
        if not isinstance(name, str):
            raise _check.error("name", f"expected a built-in scenario's name, got {_check.shown(name)}")
        for n, text in _elevator.scenarios():
            if n == name:
                return cls(text, f"builtin:{n}")
        raise ElevatorError(f"no built-in scenario {_check.shown(name)} (known: {', '.join(scenarios())})")

    @classmethod
    def load(cls, path: PathLike) -> "Scenario":
        """The scenario file at ``path`` (its drive paths resolve against its directory)."""
        p = Path(_check.path("path", path))
        shown = _check.shown_text(str(p))
        try:
            # Opened without waiting: open() of a FIFO nothing writes waited for ever, so a
            # FIFO (or a socket) is refused. Read through the native bounded reader's cap
            # (4 MiB): /dev/zero is refused, not read until memory runs out.
            with open(p, "rb", opener=_open_nonblocking) as f:
                kind = _check.waits_for_a_writer(os.fstat(f.fileno()).st_mode)
                if kind is not None:
                    raise ElevatorError(
                        f"{shown}: {kind}, not a scenario file: read it yourself and give "
                        "Scenario.from_toml(text)"
                    )
                os.set_blocking(f.fileno(), True)
                data = f.read(4 * 1024 * 1024 + 1)
            if len(data) > 4 * 1024 * 1024:
                raise ElevatorError(f"{shown}: larger than 4 MiB: not a scenario")
            text = data.decode("utf-8")
        except OSError as e:
            raise ElevatorError(f"{shown}: cannot read: {e.strerror or e}") from None
        except UnicodeDecodeError as e:
            raise ElevatorError(f"{shown}: not UTF-8 text (byte {e.start}): not a scenario") from None
        return cls(text, str(p), str(p.parent))

    @classmethod
    def from_toml(cls, text: str, origin: str = "<input>") -> "Scenario":
        """A scenario from its TOML text; ``origin`` names it in errors."""
        return cls(text, origin)

    def __repr__(self) -> str:
        return f"Scenario({self.name!r}, drive={self.drive!r}, jobs={self.jobs!r})"


def _open_nonblocking(path: str, flags: int) -> int:
    """``os.open`` for ``open(opener=...)`` without waiting: a FIFO opens at once, whether or
    not anything writes it (its kind is then refused)."""
    return os.open(path, flags | os.O_NONBLOCK)


def grid_spec(
    scenario: Union[None, str, Scenario, PathLike] = None,
    *,
    fio: Optional[PathLike] = None,
    fio_text: Optional[str] = None,
    trace: Union[None, PathLike, Sequence[PathLike]] = None,
    trace_format: Optional[str] = None,
    closed_loop: bool = False,
    max_requests: Optional[int] = None,
    speed: Optional[float] = None,
    drive: Optional[str] = None,
    sched: Union[str, Sequence[str]] = "deadline",
    set: Optional[Mapping[str, int]] = None,
    sweep: Union[None, Mapping[str, Any], Sequence[str]] = None,
    seed: Optional[int] = None,
    wakeup_us: Optional[int] = None,
    requests: bool = False,
    max_ios: Optional[int] = None,
) -> dict:
    """The grid :func:`sim` and :class:`Campaign` run, as a plain dict (JSON-able).

    Exactly one source: ``scenario`` (a :class:`Scenario`, a built-in name or a TOML path),
    ``fio`` (a job file's path), ``fio_text`` (its text) or ``trace`` (one or more trace files;
    ``trace_format`` when detection is not enough; ``closed_loop``; ``max_requests``; ``speed``
    divides the recorded times).
    ``drive``: the drive of a job file or trace (a built-in name or a drive TOML). ``sched``:
    one or more schedulers (``"a,b"`` or a list). ``set``: tunables, ``{"NAME": v}`` for every
    scheduler that has it or ``{"SCHED.NAME": v}``. ``sweep``: axes, ``{"seed": range(1, 6),
    "kyber.read_lat_nsec": [...], "drive": [...], "job.NAME.FIELD": [...]}`` (or the CLI's
    ``"KEY=VALUES"`` strings), crossed in the order given, the last turning fastest.
    ``requests``: keep every request's record. ``max_ios``: a job file's or a scenario's bound on
    the I/Os its jobs imply by their sizes, by a ``runtime`` (a scenario's ``duration_s``)
    at the rate the run starts at, and by the share of their work compile, dependent-reader
    and stream-writer jobs do first; and the bound on what all the cells of a sweep imply
    together (each cell's I/Os, a trace's requests, and 1000 for each cell's set-up; default
    10**8).
    """
    spec: dict[str, Any] = {}
    sources = [scenario is not None, fio is not None, fio_text is not None, trace is not None]
    if sum(sources) != 1:
        raise ElevatorError("give exactly one of scenario, fio, fio_text or trace")
    if isinstance(scenario, Scenario):
        spec["scenario_toml"] = scenario.text
        spec["origin"] = scenario.origin
        if scenario.directory is not None:
            spec["dir"] = scenario.directory
    elif scenario is not None:
        spec["scenario"] = _check.path("scenario", scenario)
    if fio is not None:
        spec["fio"] = _check.path("fio", fio)
    if fio_text is not None:
        if not isinstance(fio_text, str):
            raise _check.error("fio_text", f"expected a job file's text, got {_check.shown(fio_text)}")
        spec["fio_text"] = _check.unicode("fio_text", fio_text)
    if trace is not None:
        spec["trace"] = _check.paths("trace", trace)
    else:
        # What only a trace replay reads is refused, not ignored (`speed=2.0` on a job file
        # ran at the job's own pace without a word).
        for name, v in [
            ("trace_format", trace_format),
            ("closed_loop", closed_loop or None),
            ("max_requests", max_requests),
            ("speed", speed),
        ]:
            if v is not None:
                raise _check.error(name, "applies to a trace replay (trace=...) only")
    if trace_format is not None:
        spec["trace_format"] = _check.text("trace_format", trace_format)
    if _check.flag("closed_loop", closed_loop):
        spec["closed_loop"] = True
    if max_requests is not None:
        spec["max_requests"] = _check.integer("max_requests", max_requests, 1, _check.U64[1])
    if speed is not None:
        spec["speed"] = _check.real("speed", speed, 0.001, 1e6)
    if drive is not None:
        spec["drive"] = _check.path("drive", drive)
    spec["sched"] = _check.names("sched", sched)
    if set is not None:
        checked = _check.settings("set", set)
        if checked:
            spec["set"] = checked
    if sweep is not None:
        if isinstance(sweep, Mapping):
            axes = []
            for k, v in sweep.items():
                if not isinstance(k, str) or not k.strip():
                    raise _check.error("sweep", f"expected axis names (strings), got the key {_check.shown(k)}")
                _check.unicode("sweep", k)
                axes.append(f"{k}={_check.axis_values(k, v)}")
            spec["sweep"] = axes
        elif isinstance(sweep, str):
            spec["sweep"] = [_check.text("sweep", sweep)]
        elif isinstance(sweep, Iterable):
            axes = _check.bounded("sweep", sweep, "axes")
            spec["sweep"] = [_check.text(f"sweep[{i}]", a) for i, a in enumerate(axes)]
        else:
            raise _check.error("sweep", f"expected a mapping of axes to values, got {_check.shown(sweep)}")
        if not spec["sweep"]:
            del spec["sweep"]
    if seed is not None:
        spec["seed"] = _check.integer("seed", seed, *_check.U64)
    if wakeup_us is not None:
        spec["wakeup_us"] = _check.integer("wakeup_us", wakeup_us, 0, 2**32 - 1)
    if _check.flag("requests", requests):
        spec["requests"] = True
    if max_ios is not None:
        spec["max_ios"] = _check.integer("max_ios", max_ios, 1, _check.U64[1])
    return spec


def _table(export: Any) -> pa.Table:
    batch = pa.RecordBatch._import_from_c(export.array_addr, export.schema_addr)
    return pa.Table.from_batches([batch])


class Results:
    """What :func:`sim` returns.

    ``table``: a ``pyarrow.Table``, one row per job per cell, the sweep's coordinates as
    columns (``cell``, ``scheduler``, each axis, ``seed``, ``device``, ``end_s``, ``job``,
    ``group``, ``finished``, ``seconds``, ``read_*`` and ``write_*``: ``ios``, ``bytes``,
    ``iops``, ``mb_s``, ``mean_ms``, ``p50_ms``, ``p90_ms``, ``p99_ms``, ``max_ms``).
    ``requests``: with ``requests=True``, a ``pyarrow.Table`` with one row per request
    (``cell``, ``job``, ``process``, ``op``, ``sector``, ``sectors``, ``q_ns``, ``i_ns``,
    ``d_ns``, ``c_ns``, ``merged``, ``queued``, ``in_flight``, ``t_ns``: when it got its
    tag, ``d_ns`` unless a disk's host tags it earlier), built on first use without
    copying the records; else ``None``.
    """

    def __init__(self, output: Any, keeps_requests: bool, table: Optional[pa.Table] = None):
        if table is not None and not isinstance(table, pa.Table):
            raise _check.error("table", f"expected a pyarrow.Table, got {_check.shown(table)}")
        if table is None and not callable(getattr(output, "jobs", None)):
            raise _check.error(
                "output",
                f"expected a run's native output (sim() and run() make Results), got {_check.shown(output)}",
            )
        self._output = output
        self.table: pa.Table = table if table is not None else _table(output.jobs())
        self._keeps = _check.flag("keeps_requests", keeps_requests)
        self._requests: Optional[pa.Table] = None

    @property
    def requests(self) -> Optional[pa.Table]:
        if not self._keeps:
            return None
        if self._requests is None:
            self._requests = _table(self._output.take_requests())
        return self._requests

    def to_arrow(self) -> pa.Table:
        """The jobs table."""
        return self.table

    def to_polars(self):
        """The jobs table as a polars DataFrame (no copy)."""
        import polars as pl

        return pl.from_arrow(self.table)

    def to_pandas(self):
        """The jobs table as a pandas DataFrame."""
        return self.table.to_pandas()

    def requests_to_polars(self):
        """The requests table as a polars DataFrame (no copy of the numeric columns)."""
        import polars as pl

        if self.requests is None:
            raise ElevatorError("the grid kept no requests: pass requests=True")
        return pl.from_arrow(self.requests)

    def __repr__(self) -> str:
        return f"Results({self.table.num_rows} rows, columns={self.table.column_names})"

    def __reduce__(self):
        # Pickled as its tables (the requests table built first, when kept): the native
        # output behind them cannot be pickled, so a Results returned from a
        # multiprocessing worker, a concurrent.futures process pool or a Ray task raised
        # "cannot pickle 'elevator._elevator.Output' object".
        return (_results_of_tables, (self.table, self.requests, self._keeps))


def _results_of_tables(table: pa.Table, requests: Optional[pa.Table], keeps: bool) -> Results:
    """A :class:`Results` unpickled: its tables, without the native output."""
    if keeps and not isinstance(requests, pa.Table):
        raise _check.error("requests", f"expected a pyarrow.Table, got {_check.shown(requests)}")
    r = Results(None, keeps, table=table)
    r._requests = requests if keeps else None
    return r


def sim(
    scenario: Union[None, str, Scenario, PathLike] = None,
    *,
    threads: Optional[int] = None,
    **grid: Any,
) -> Results:
    """Run a grid in the simulator, every cell on ``threads`` threads (all cores by default),
    each distinct simulation once; see :func:`grid_spec` for the arguments. The same grid gives
    the same table on any machine, at any number of threads."""
    spec = grid_spec(scenario, **grid)
    threads = _check.threads("threads", threads)
    g = _elevator.Grid(json.dumps(spec, allow_nan=False))
    return Results(g.run(None, threads), bool(spec.get("requests")))


def merge(inputs: Sequence[PathLike], out: PathLike) -> None:
    """Join Parquet shards of one sweep (``elevator sim --sweep ... --shard I/N --parquet F``)
    into ``out``, sorted by cell; overlapping shards or different columns raise."""
    _elevator.merge(_check.paths("inputs", inputs), _check.path("out", out))


def run(
    job: Optional[PathLike] = None,
    *,
    fio_text: Optional[str] = None,
    target: Optional[PathLike] = None,
    sched: Union[str, Sequence[str]] = "none",
    set: Optional[Mapping[str, int]] = None,
    seed: int = 1,
    allow_overwrite: bool = False,
    verify: bool = False,
    requests: bool = False,
) -> Results:
    """Run a fio job file (``job``, a path, or ``fio_text``) on the real file or block device
    ``target`` (default: the job file's ``filename``) under each scheduler in turn, through the
    io_uring executor ``elevator run`` uses (the same library, called in this process), with its
    safety rules: a new file is laid out; an existing file elevator did not lay out, or a device
    carrying data, is refused for writing unless ``allow_overwrite``; a mounted device never.
    ``verify`` stamps and checks every written sector. ``requests``: keep every request's
    record, as :func:`sim` does (``Results.requests``; times from the run's start on the
    executor's clock).

    Returns :class:`Results` whose ``table`` has the columns of :func:`sim`'s (no axes): one row
    per job per scheduler, ``cell`` the scheduler's index, ``device`` the target, ``end_s`` the
    run's wall time. Everything is checked before the first I/O; bad input raises
    :class:`InputError` (file, line, field), a refused target :class:`ElevatorError` with
    ``field`` ``"target"``. Ctrl-C stops the run (what is in flight completes) and raises
    ``KeyboardInterrupt``."""
    if (job is None) == (fio_text is None):
        raise ElevatorError("give exactly one of job (a job file's path) or fio_text")
    spec: dict[str, Any] = {
        "sched": _check.names("sched", sched),
        "seed": _check.integer("seed", seed, *_check.U64),
        "allow_overwrite": _check.flag("allow_overwrite", allow_overwrite),
        "verify": _check.flag("verify", verify),
    }
    if job is not None:
        spec["fio"] = _check.path("job", job)
    else:
        if not isinstance(fio_text, str):
            raise _check.error("fio_text", f"expected a job file's text, got {_check.shown(fio_text)}")
        spec["fio_text"] = _check.unicode("fio_text", fio_text)
    if target is not None:
        spec["target"] = _check.path("target", target)
    if set is not None:
        checked = _check.settings("set", set)
        if checked:
            spec["set"] = checked
    if _check.flag("requests", requests):
        spec["requests"] = True
    jobs, reqs = _elevator.run_real(json.dumps(spec, allow_nan=False))
    results = Results(None, reqs is not None, _table(jobs))
    if reqs is not None:
        results._requests = _table(reqs)
    return results
