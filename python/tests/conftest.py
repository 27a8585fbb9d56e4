"""Shared fixtures: the repository's root, a small fio job, and for the Ray engine's tests
the sweep's worker processes and a sweep run with every worker stopped."""

import os
import signal
import subprocess
import threading
import time
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SMALL_FIO = """[reader]
rw=randread
bs=4k
size=16m
number_ios=300
iodepth=4
"""


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def small_fio() -> str:
    return SMALL_FIO


def _descendants_named(name: str) -> list:
    """Pids of this process's descendants whose command line starts with ``name``: Ray's
    workers retitle themselves ``ray::TASK`` while they run one. Descendants only, never
    another session's Ray workers on a shared machine; the command line's start only, never a
    process that merely names the task (a shell or ``pgrep`` whose arguments hold it)."""
    me = os.getpid()
    out = []
    for p in subprocess.run(["pgrep", "-f", name], capture_output=True, text=True).stdout.split():
        pid = int(p)
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if not f.read().startswith(name.encode()):
                    continue
        except OSError:
            continue
        while pid > 1:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                break
            if pid == me:
                out.append(int(p))
                break
    return out


@pytest.fixture
def descendants_named():
    """:func:`_descendants_named`: this process's descendants whose command line starts with
    a name (``"ray::_write_cells"``: the Ray workers running a task of the sweep)."""
    return _descendants_named


#: The longest the engine's clock is held for a task's worker to start (see
#: :class:`_HeldClock`): past it the clock runs again and the test fails saying so.
WORKER_START_LIMIT_S = 600.0


class _HeldClock:
    """The Ray engine's clock (``elevator.campaign.time``), held still while a task it
    submitted has not started: a task's bound counts from its submission, so under load a
    retry whose new worker took longer than the bound to start was cancelled before it ran,
    and the test saw one worker too few stopped (round 20's ``len(stopped) >= 3``). Held, the
    bound measures only time when every task in flight is running (here: stopped)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._held = 0.0
        self._since = None

    def hold(self, on: bool) -> float:
        """Hold the clock (``on``) or let it run; returns the seconds the present hold has
        lasted (0 when it runs)."""
        with self._lock:
            now = time.monotonic()
            if on and self._since is None:
                self._since = now
            elif not on and self._since is not None:
                self._held += now - self._since
                self._since = None
            return 0.0 if self._since is None else now - self._since

    def monotonic(self) -> float:
        """``time.monotonic()`` less every hold so far; still while held."""
        with self._lock:
            now = time.monotonic() if self._since is None else self._since
            return now - self._held

    def __getattr__(self, name):
        """The rest of the ``time`` module, as is."""
        return getattr(time, name)


@pytest.fixture
def ray_sweep_with_workers_stopped(monkeypatch):
    """Run ``camp.run(engine="ray", workers=2, **kwargs)`` in a thread while every worker that
    starts one of its tasks is stopped (SIGSTOP) at once, for the whole run: no task ever
    finishes, so the engine's bound must end the run. The engine's clock runs only while each
    task it has in flight has started (two, and one more per task it cancelled: its retry), so
    a worker slow to start under load does not count against a task's bound. Waits at most
    ``join_s`` seconds (a failure's bound, not a measure), resumes every stopped worker, and
    returns ``{"alive": the run still waiting, "outcome": {"ran": n} or {"error": e},
    "stopped": the pids stopped, "stuck": why the clock was let go, or None}``."""
    ray = pytest.importorskip("ray", reason="notice: ray is not installed; the Ray test skips")
    from elevator import campaign

    clock = _HeldClock()
    monkeypatch.setattr(campaign, "time", clock)
    cancels = []
    real_cancel = ray.cancel

    def counted_cancel(ref, *args, **kwargs):
        cancels.append(ref)
        return real_cancel(ref, *args, **kwargs)

    monkeypatch.setattr(ray, "cancel", counted_cancel)

    def go(camp, join_s: float, **kwargs) -> dict:
        stopped, stuck = [], []
        quit_ = threading.Event()

        def freezer():
            while not quit_.is_set():
                for pid in _descendants_named("ray::_write_cells"):
                    if pid not in stopped:
                        os.kill(pid, signal.SIGSTOP)
                        stopped.append(pid)
                if not stuck:
                    waiting = len(stopped) < 2 + len(cancels)
                    if clock.hold(waiting) > WORKER_START_LIMIT_S:
                        stuck.append(
                            f"{len(stopped)} workers stopped of {2 + len(cancels)} tasks "
                            f"submitted: a task's worker had not started {WORKER_START_LIMIT_S:g} "
                            "s after the engine's clock was held for it"
                        )
                        clock.hold(False)
                time.sleep(0.005)

        outcome = {}

        def run():
            try:
                outcome["ran"] = camp.run(engine="ray", workers=2, **kwargs)
            except Exception as e:  # the outcome under test
                outcome["error"] = e
                # Where it was raised, for the failure message of a test that expected another
                # (pytest shortens the message; the captured stderr it shows whole).
                outcome["traceback"] = traceback.format_exc()
                traceback.print_exc()

        threading.Thread(target=freezer, daemon=True).start()
        r = threading.Thread(target=run, daemon=True)
        r.start()
        r.join(join_s)
        quit_.set()
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        return {
            "alive": r.is_alive(),
            "outcome": outcome,
            "stopped": stopped,
            "stuck": stuck[0] if stuck else None,
        }

    return go
