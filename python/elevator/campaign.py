"""Campaigns: a grid's cells kept as Parquet files in a directory, computed only once.

A store directory holds ``grid.json`` (the grid, with its scenario or job file text inlined,
so it runs anywhere), ``cells/NNNNNNN.parquet`` (each cell's jobs table) and, when the grid
keeps requests, ``requests/NNNNNNN.parquet``. A cell's file is written to a temporary name and
renamed when whole, so a run killed at any moment leaves only whole cells; the next
:meth:`Campaign.run` computes the missing ones. Each cell file is a function of the grid and
the cell alone: the same bytes on any machine, under either engine, at any number of workers.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import pyarrow as pa
import pyarrow.parquet as pq

from . import _check, _elevator
from ._elevator import ElevatorError, InputError

PathLike = Union[str, "os.PathLike[str]"]


#: Seconds the whole probe of a Ray cluster's address (connect, greet, answer) may take.
CONNECT_TIMEOUT_S = 10.0

#: The least a Ray task may run before it is taken for frozen, when ``timeout_s`` is not given.
TASK_TIMEOUT_FLOOR_S = 120.0

#: Without ``timeout_s``: a task may run this many times its work at the cost per I/O assumed
#: or measured, and this many times the longest task already finished (see ``_task_bound``).
TASK_TIMEOUT_FACTOR = 20.0

#: Without ``timeout_s`` and before any task has finished: the seconds one I/O that a task's
#: cells imply (``Grid.implied_ios``: told from their parameters before they run) is taken to
#: cost. The slowest of 35 kinds of cell measured (3 built-in scenarios and a fio job on an HDD
#: and an SSD, 7 schedulers each, one thread, load 13 to 15) took 9.2e-6 s per implied I/O;
#: the fastest 4e-9 (docs/reliability.md, round 23).
FIRST_WAVE_S_PER_IO = 1e-5

#: Without ``timeout_s`` and before any task has finished: the most a task's bound may be. The
#: implied I/Os are an upper bound of a cell's work, loose by up to 2000x (a scenario whose
#: foreground job ends long before its ``duration_s``), so a first wave of such cells would
#: otherwise wait hours for a frozen worker.
FIRST_WAVE_MAX_S = 1800.0

#: What an HTTP/2 client sends first (RFC 9113 section 3.4), then an empty SETTINGS frame
#: (length 0, type 4, no flags, stream 0). Ray's GCS and its client server are gRPC servers,
#: which answer a greeting with a SETTINGS frame of their own.
_HTTP2_GREETING = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])

#: The type of an HTTP/2 SETTINGS frame, the fourth byte of its 9-byte header.
_SETTINGS = 4


def _reachable(address: str) -> None:
    """Refuse a cluster address (``HOST:PORT`` or ``ray://HOST:PORT``) where no gRPC server
    (what Ray's GCS and its client server are) answers within :data:`CONNECT_TIMEOUT_S`, the
    connect, the HTTP/2 greeting and the first frame of the answer together: ``ray.init``
    retried an address that accepts no connection for more than five minutes, and one that
    accepts TCP but is not Ray (``nc -l``, an HTTP server) without end. With ``RAY_USE_TLS``
    set the cluster speaks TLS first, so only the connection is tried. ``auto`` and ``local``
    are Ray's to resolve."""
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return
    host = host.strip("[]") or "127.0.0.1"
    tls = os.environ.get("RAY_USE_TLS", "0").strip().lower() in ("1", "true", "yes")
    deadline = time.monotonic() + CONNECT_TIMEOUT_S

    def refuse(why: str) -> ElevatorError:
        return _check.error(
            "address",
            f"{address!r}: no Ray cluster answers there ({why}); start one (`ray start --head`) "
            "or leave address=None for a local cluster",
        )

    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S) as s:
            if tls:
                return
            s.settimeout(max(deadline - time.monotonic(), 0.001))
            s.sendall(_HTTP2_GREETING)
            head = b""
            while len(head) < 9:
                s.settimeout(max(deadline - time.monotonic(), 0.001))
                part = s.recv(9 - len(head))
                if not part:
                    break
                head += part
    except socket.timeout:
        raise refuse(
            f"it accepted a connection but sent no gRPC answer within {CONNECT_TIMEOUT_S:g} s"
        ) from None
    except (OSError, ValueError, OverflowError) as e:
        raise refuse(str(e)) from None
    if len(head) < 9 or head[3] != _SETTINGS:
        got = _check.shown(head.decode("latin-1")) if head else "nothing"
        raise refuse(f"it answered an HTTP/2 greeting with {got}, not a gRPC server's SETTINGS")


def _task_bound(ios: int, longest: float, s_per_io: Optional[float]) -> tuple:
    """The seconds a Ray task whose cells imply ``ios`` I/Os may run without ``timeout_s``,
    and the rule that set them, in words: :data:`TASK_TIMEOUT_FACTOR` times its I/Os at
    ``s_per_io`` seconds each (the slowest of the finished tasks'), or at
    :data:`FIRST_WAVE_S_PER_IO` while none has finished (``s_per_io`` None), then at most
    :data:`FIRST_WAVE_MAX_S`; once one has, at least the factor times the longest finished
    task (``longest`` seconds); never less than :data:`TASK_TIMEOUT_FLOOR_S`."""
    if s_per_io is None:
        rate, whose = FIRST_WAVE_S_PER_IO, "assumed while no task has finished"
    else:
        rate, whose = s_per_io, "the slowest finished task's"
    by_work = TASK_TIMEOUT_FACTOR * ios * rate
    work = f"{TASK_TIMEOUT_FACTOR:g} x the {ios} I/Os its cells imply at {rate:.3g} s each"
    rules = [
        (by_work, f"{work}, {whose}"),
        (TASK_TIMEOUT_FLOOR_S, f"the floor TASK_TIMEOUT_FLOOR_S = {TASK_TIMEOUT_FLOOR_S:g} s"),
    ]
    if s_per_io is None and by_work > FIRST_WAVE_MAX_S:
        rules[0] = (
            FIRST_WAVE_MAX_S,
            f"the first wave's cap FIRST_WAVE_MAX_S = {FIRST_WAVE_MAX_S:g} s ({work}, {whose}, "
            f"is {by_work:.0f} s)",
        )
    if s_per_io is not None:
        rules.append(
            (
                TASK_TIMEOUT_FACTOR * longest,
                f"{TASK_TIMEOUT_FACTOR:g} x the longest finished task, {longest:.2f} s",
            )
        )
    return max(rules, key=lambda r: r[0])


def _node_of(ray: Any) -> Optional[str]:
    """The id of the Ray node this process is connected through, or None if Ray cannot say
    (a Ray Client connection)."""
    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:
        return None


def _write_cells(spec_json: str, cells: list, store: str, note: str) -> list:
    """One Ray task: build the grid and write ``cells`` into ``store`` on one thread. While it
    runs, the file ``note`` holds the worker's host name and pid, so that the driver can kill
    a worker that is frozen (``ray.cancel`` asks the worker itself, which a stopped one never
    hears)."""
    from elevator import _elevator as native

    try:
        with open(note, "w") as f:
            f.write(f"{socket.gethostname()} {os.getpid()}\n")
        return native.Grid(spec_json).write_cells(cells, store, 1)
    finally:
        try:
            os.unlink(note)
        except OSError:
            pass


def _cancel(ray: Any, ref: Any) -> None:
    """``ray.cancel(ref, force=True)``, best effort. Ray sometimes no longer knows the task
    (``TypeError: No owner found for object``, raised for the other task still in flight when
    a sweep gave up on a frozen one: round 20's test, 3 of 3 whole-suite runs, 2026-12-02),
    which escaped in place of the sweep's own error; such a task has nothing left to cancel,
    and a worker noted on this host is killed by :func:`_kill_noted` all the same."""
    try:
        ray.cancel(ref, force=True)
    except (TypeError, ValueError):
        pass


def _kill_noted(note: str) -> None:
    """SIGKILL the worker ``note`` names if it runs on this host (elsewhere only
    ``ray.cancel`` can reach it), and remove the note."""
    try:
        with open(note) as f:
            host, pid = f.read().split()
        if host == socket.gethostname():
            os.kill(int(pid), signal.SIGKILL)
    except (OSError, ValueError):
        pass
    try:
        os.unlink(note)
    except OSError:
        pass


class Campaign:
    """A grid run into a store directory, cell by cell.

    ``grid``: a dict from :func:`elevator.grid_spec` (or ``None`` to reopen the store's own
    grid). ``store``: the directory. A store keeps one grid: opening it with another raises
    :class:`ElevatorError`.

    Example::

        grid = elevator.grid_spec("anticipatory", sched=["deadline", "anticipatory"],
                                  sweep={"seed": range(1, 6)})
        c = elevator.Campaign(grid, store="runs/morton")
        c.run()                  # or c.run(engine="ray")
        df = c.to_polars()
    """

    def __init__(self, grid: Optional[Mapping[str, Any]] = None, *, store: PathLike):
        self.store = Path(_check.path("store", store))
        try:
            self._open_store(grid)
        except OSError as e:
            # A path the system refuses (ENAMETOOLONG for a 60 KB name, EACCES, EROFS ...):
            # the OSError escaped, naming neither the argument nor the package.
            raise _check.error(
                "store", f"{_check.shown_text(str(self.store))}: {e.strerror or e}"
            ) from None

    def _open_store(self, grid: Optional[Mapping[str, Any]]) -> None:
        """Check or make the store for ``grid`` (``None``: the store's own grid)."""
        if self.store.exists() and not self.store.is_dir():
            raise _check.error("store", f"{self.store} is not a directory")
        saved = self.store / "grid.json"
        if grid is None:
            if not saved.is_file():
                raise ElevatorError(f"{saved}: no grid.json: not a campaign store (give a grid)")
            spec_json = self._read_saved(saved)
            try:
                self._grid = _elevator.Grid(spec_json)
            except ValueError as e:
                raise ElevatorError(f"{saved}: not a campaign's grid.json: {e}") from None
        else:
            if not isinstance(grid, Mapping):
                raise _check.error(
                    "grid", f"expected a dict from elevator.grid_spec(), got {_check.shown(grid)}"
                )
            try:
                given = json.dumps(dict(grid), allow_nan=False)
            except (TypeError, ValueError) as e:
                raise _check.error("grid", f"not a grid from elevator.grid_spec(): {e}") from None
            try:
                self._grid = _elevator.Grid(given)
            except ValueError as e:
                raise _check.error("grid", f"not a grid from elevator.grid_spec(): {e}") from None
            spec_json = self._canonical(self._grid.portable_spec_json())
            if saved.exists():
                if self._canonical(self._read_saved(saved)) != spec_json:
                    raise ElevatorError(
                        f"{saved}: the store holds another grid; use a new store directory"
                    )
            else:
                self.store.mkdir(parents=True, exist_ok=True)
                tmp = saved.with_suffix(f".json.tmp.{os.getpid()}")
                try:
                    tmp.write_text(spec_json)
                    os.replace(tmp, saved)
                finally:
                    tmp.unlink(missing_ok=True)
        self._spec_json = self._canonical(spec_json)
        self._keeps_requests = bool(json.loads(self._spec_json).get("requests"))

    @staticmethod
    def _read_saved(saved: Path) -> str:
        """The text of a store's grid.json, read up to 64 MiB (a grid inlines its scenario or
        job file; /dev/zero linked there is refused, not read until memory runs out)."""
        cap = 64 * 1024 * 1024
        try:
            with open(saved, "rb") as f:
                data = f.read(cap + 1)
        except OSError as e:
            raise ElevatorError(f"{saved}: cannot read: {e}") from None
        if len(data) > cap:
            raise ElevatorError(f"{saved}: larger than 64 MiB: not a campaign's grid.json")
        try:
            text = data.decode("utf-8")
            json.loads(text)
        except ValueError as e:
            raise ElevatorError(f"{saved}: not a campaign's grid.json: {e}") from None
        return text

    @staticmethod
    def _canonical(spec_json: str) -> str:
        return json.dumps(json.loads(spec_json), sort_keys=True, indent=1) + "\n"

    def __len__(self) -> int:
        return len(self._grid)

    def cell_path(self, cell: int) -> Path:
        """The Parquet file of cell ``cell``'s jobs table."""
        # Checked as ``coordinates`` checks it: -1 gave ``-000001.parquet``, nan
        # ``0000nan.parquet``, 2**70 a cell the grid does not have.
        cell = _check.integer("cell", cell, 0, max(0, len(self) - 1))
        return self.store / "cells" / f"{cell:07}.parquet"

    def done(self) -> list[int]:
        """The cells already in the store, in order."""
        d = self.store / "cells"
        if not d.is_dir():
            return []
        out = []
        for name in os.listdir(d):
            if name.endswith(".parquet") and name[:-8].isdigit():
                c = int(name[:-8])
                if c < len(self):
                    out.append(c)
        return sorted(out)

    def missing(self) -> list[int]:
        """The cells not yet in the store, in order."""
        have = set(self.done())
        return [c for c in range(len(self)) if c not in have]

    def coordinates(self, cell: int) -> dict:
        """Cell ``cell``'s scheduler and value on each axis."""
        return self._grid.coordinates(_check.integer("cell", cell, 0, max(0, len(self) - 1)))

    def run(
        self,
        engine: str = "local",
        *,
        threads: Optional[int] = None,
        address: Optional[str] = None,
        workers: Optional[int] = None,
        cells_per_task: int = 1,
        timeout_s: Optional[float] = None,
    ) -> int:
        """Compute the missing cells and store each as it finishes; returns how many ran.

        ``engine="local"``: on this machine, ``threads`` threads (all cores by default).
        ``engine="ray"``: each task of ``cells_per_task`` cells is a Ray task of one CPU; on
        the cluster Ray is already connected to, else ``ray.init(address=address)``, else a
        local cluster of ``workers`` CPUs (all cores by default), shut down at the end. Every
        node needs this package installed and the store directory reachable at the same path
        (a shared filesystem).

        ``timeout_s`` (Ray only): the seconds a task may run. A task past it (a worker stopped
        by SIGSTOP, or stuck in the kernel, never returns and Ray has no task timeout) is
        cancelled, its worker killed, and run once more; past it again, ``run`` stops the other
        tasks and raises an error naming the cells and their coordinates, and which rule set
        the bound. By default a task's bound follows from its work: the I/Os its cells imply,
        told from their parameters before they run (``Grid.implied_ios``), times
        :data:`TASK_TIMEOUT_FACTOR`, at :data:`FIRST_WAVE_S_PER_IO` seconds each and at most
        :data:`FIRST_WAVE_MAX_S` until a task finishes, then at the slowest finished task's
        measured seconds per I/O and at least the factor times the longest finished task;
        never less than :data:`TASK_TIMEOUT_FLOOR_S`. At most one task per CPU of the cluster
        is in flight, so a task's clock starts when it can run.
        """
        if engine not in ("local", "ray"):
            raise _check.error("engine", f"{_check.shown(engine)}: expected 'local' or 'ray'")
        threads = _check.threads("threads", threads)
        workers = _check.threads("workers", workers)
        per_task = _check.integer("cells_per_task", cells_per_task, 1, 1_000_000)
        if timeout_s is not None:
            timeout_s = _check.real("timeout_s", timeout_s, 1e-3, 1e9)
        if address is not None:
            address = _check.text("address", address)
        todo = self.missing()
        if not todo:
            return 0
        store = os.fspath(self.store)
        if engine == "local":
            return len(self._grid.write_cells(todo, store, threads))
        return self._run_ray(todo, store, address, workers, per_task, timeout_s)

    def _run_ray(
        self,
        todo: list[int],
        store: str,
        address: Optional[str],
        workers: Optional[int],
        per_task: int,
        timeout_s: Optional[float],
    ) -> int:
        try:
            import ray
        except ImportError:
            raise ElevatorError("engine='ray' needs ray: pip install 'ray>=2.9'") from None
        started = False
        if not ray.is_initialized():
            try:
                if address is not None:
                    _reachable(address)
                    ray.init(address=address)
                else:
                    ray.init(num_cpus=workers, include_dashboard=False)
            except ElevatorError:
                raise
            except Exception as e:
                # Ray's own ConnectionError (`address="auto"` with no cluster running),
                # ValueError (a port that is not a number) ... escaped as Ray's.
                if address is not None:
                    raise _check.error(
                        "address",
                        f"{_check.shown_text(address)}: Ray could not connect: "
                        f"{_check.shown_text(str(e), 300)}",
                    ) from e
                raise ElevatorError(
                    f"engine='ray': a local Ray cluster did not start: "
                    f"{_check.shown_text(str(e), 300)}"
                ) from e
            started = True
        try:
            task = ray.remote(num_cpus=1)(_write_cells)
            chunks = [todo[i : i + per_task] for i in range(0, len(todo), per_task)]
            chunks.reverse()
            # At most one task per CPU in flight: a task's clock starts when it can run.
            slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
            started_at: dict = {}
            cells_of: dict = {}
            ios_of: dict = {}
            tries: dict = {}
            pending: list = []
            # The longest finished task's seconds, and the most seconds per implied I/O a
            # finished task took (None until one has finished).
            longest = 0.0
            s_per_io: Optional[float] = None

            notes: dict = {}
            node = _node_of(ray)

            def shut_down() -> bool:
                """Whether Ray was shut down since the sweep began: not initialized, or
                initialized anew (Ray's calls start a local cluster when none is)."""
                if not ray.is_initialized():
                    return True
                return node is not None and _node_of(ray) != node

            def submit(chunk: list, attempt: int) -> None:
                note = os.path.join(store, f".task-{chunk[0]:07}-{attempt}.{os.getpid()}")
                ref = task.remote(self._spec_json, chunk, store, note)
                notes[ref] = note
                started_at[ref] = time.monotonic()
                cells_of[ref] = chunk
                ios_of[ref] = sum(self._grid.implied_ios(c) for c in chunk)
                tries[ref] = attempt
                pending.append(ref)

            def bound(ref) -> tuple:
                """Task ``ref``'s bound in seconds, and the rule that set it."""
                if timeout_s is not None:
                    return timeout_s, f"timeout_s={timeout_s:g}"
                return _task_bound(ios_of[ref], longest, s_per_io)

            ran = 0
            while pending or chunks:
                while chunks and len(pending) < slots:
                    submit(chunks.pop(), 1)
                ready = []
                try:
                    now = time.monotonic()
                    wait = max(0.0, min(started_at[r] + bound(r)[0] for r in pending) - now)
                    ready, pending[:] = ray.wait(pending, num_returns=1, timeout=wait)
                    done = ray.get(ready)
                except Exception as e:
                    if shut_down():
                        # `ray.shutdown()` from another thread between the wait and the get:
                        # the get started a new local cluster and raised Ray's ValueError
                        # ("owners not found"), and cancelling the others Ray's TypeError
                        # ("No owner found for object").
                        raise self._shut_down(ran, len(todo)) from e
                    # A bad cell: stop the others and raise the cell's own error (an
                    # ElevatorError naming the input), not Ray's wrapper of it.
                    for p in pending:
                        _cancel(ray, p)
                    cause = getattr(e, "cause", None)
                    if isinstance(cause, ElevatorError):
                        raise cause from None
                    # Unpickled in this process, the worker's exception may be of another
                    # class object of the same name: rebuilt as ours, attributes and all.
                    kind = type(cause).__name__ if cause is not None else ""
                    if kind in ("ElevatorError", "InputError"):
                        err = (InputError if kind == "InputError" else ElevatorError)(str(cause))
                        for k in ("file", "line", "field", "message"):
                            if hasattr(cause, k):
                                setattr(err, k, getattr(cause, k))
                        raise err from None
                    # Anything else (a worker that crashed: a panic that aborts, a signal,
                    # memory; Ray's own failures) escaped as Ray's exception.
                    raise self._ray_failed(e, [c for r in ready for c in cells_of[r]], ran) from e
                except SystemExit as e:
                    # `ray.shutdown()` from another thread mid-sweep ended the wait with
                    # SystemExit(0): the interpreter exited 0 with the sweep unfinished.
                    if ray.is_initialized():
                        raise
                    raise self._shut_down(ran, len(todo)) from e
                now = time.monotonic()
                for r, cells in zip(ready, done):
                    ran += len(cells)
                    took = now - started_at.pop(r)
                    longest = max(longest, took)
                    s_per_io = max(s_per_io or 0.0, took / max(1, ios_of[r]))
                for r in [r for r in pending if now - started_at[r] >= bound(r)[0]]:
                    # Frozen (SIGSTOP, stuck in the kernel) or far slower than its peers:
                    # its worker is killed; run once more, then given up with a name.
                    pending.remove(r)
                    _cancel(ray, r)
                    _kill_noted(notes[r])
                    if tries[r] < 2:
                        submit(cells_of[r], tries[r] + 1)
                        continue
                    for p in pending:
                        _cancel(ray, p)
                        _kill_noted(notes[p])
                    where = "; ".join(
                        f"cell {c} {_check.shown(self.coordinates(c))}" for c in cells_of[r][:5]
                    )
                    limit, rule = bound(r)
                    raise ElevatorError(
                        f"engine='ray': the Ray task of {where} ran past its bound of "
                        f"{limit:.1f} s twice (a worker stopped or stuck?); the bound was "
                        f"{rule}; set timeout_s to allow more; {ran} cells were written and "
                        "are kept in the store: run() again computes the rest"
                    )
            return ran
        finally:
            if started:
                ray.shutdown()

    @staticmethod
    def _shut_down(ran: int, total: int) -> ElevatorError:
        """The package's error for Ray shut down (from another thread) during a sweep."""
        return ElevatorError(
            f"engine='ray': Ray was shut down during the sweep ({ran} of {total} cells "
            "written, each kept in the store); run() again computes the rest"
        )

    def _ray_failed(self, e: BaseException, cells: list, ran: int) -> ElevatorError:
        """The package's error for a Ray task that failed other than by a cell's error."""
        which = f"cells {_check.shown(cells)}" if cells else "a task"
        return ElevatorError(
            f"engine='ray': the Ray task of {which} failed ({type(e).__name__}: "
            f"{_check.shown_text(str(e), 300)}); {ran} cells were written and are kept in the "
            "store: run() again computes the rest"
        )

    def results(self) -> pa.Table:
        """Every stored cell's jobs table, in cell order (missing cells are absent)."""
        files = [os.fspath(self.cell_path(c)) for c in self.done()]
        if not files:
            raise ElevatorError(f"{self.store}: no cells stored yet: call run() first")
        return pa.concat_tables([pq.read_table(f) for f in files])

    def requests(self) -> pa.Table:
        """Every stored cell's requests table, in cell order (the grid must keep requests)."""
        if not self._keeps_requests:
            raise ElevatorError("the grid keeps no requests: make it with requests=True")
        files = [
            os.fspath(self.store / "requests" / f"{c:07}.parquet") for c in self.done()
        ]
        if not files:
            # pyarrow's own "Must pass at least one table" said nothing of the campaign.
            raise ElevatorError(f"{self.store}: no cells stored yet: call run() first")
        return pa.concat_tables([pq.read_table(f) for f in files])

    def to_polars(self):
        """:meth:`results` as a polars DataFrame."""
        import polars as pl

        return pl.from_arrow(self.results())

    def to_pandas(self):
        """:meth:`results` as a pandas DataFrame."""
        return self.results().to_pandas()

    def __repr__(self) -> str:
        return f"Campaign({os.fspath(self.store)!r}, {len(self.done())}/{len(self)} cells)"
