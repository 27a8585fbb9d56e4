"""Hostile cases of issue 32's eighteenth round against the package: results handed between
processes (a multiprocessing pool, a Ray task's return value) must pickle, and a real target
on a file system that refuses O_DIRECT must be refused without leaving a file."""

import concurrent.futures
import os
import pickle
import subprocess
import tempfile

import pytest

import elevator


def _sim_in_a_worker(fio_text):
    # Runs in a process pool's worker: what it returns crosses back pickled.
    return elevator.sim(fio_text=fio_text, sched="none,kyber", requests=True)


def test_results_pickle_with_their_tables_and_cross_a_process_pool(small_fio):
    """``Results`` held the native output behind its tables, which cannot be pickled: a
    Results returned from a ``ProcessPoolExecutor`` worker (or ``multiprocessing``, or a Ray
    task) raised "cannot pickle 'elevator._elevator.Output' object". Now it pickles as its
    jobs table and, when kept, its requests table."""
    r = elevator.sim(fio_text=small_fio, sched="none,kyber", requests=True)
    back = pickle.loads(pickle.dumps(r))
    assert back.table.equals(r.table)
    assert back.requests is not None and back.requests.equals(r.requests)
    plain = elevator.sim(fio_text=small_fio, sched="none")
    back = pickle.loads(pickle.dumps(plain))
    assert back.table.equals(plain.table) and back.requests is None
    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as pool:
        remote = pool.submit(_sim_in_a_worker, small_fio).result(timeout=120)
    assert remote.table.equals(r.table)
    assert remote.requests.num_rows == r.requests.num_rows


def test_a_new_target_on_ramfs_is_refused_and_not_left(small_fio):
    """``run(target=...)`` of a file that does not exist on a file system without O_DIRECT
    (ramfs): the kernel created the file before refusing the flag, and the empty file stayed;
    the message blamed tmpfs. Now the file is removed and ramfs named. Needs root and
    unshare(1) (a ramfs mount in a private mount namespace); skipped otherwise."""
    if os.geteuid() != 0 or subprocess.run(["unshare", "--version"], capture_output=True).returncode:
        pytest.skip("notice: needs root and unshare(1) for a ramfs mount")
    with tempfile.TemporaryDirectory() as d:
        mnt = os.path.join(d, "ram")
        os.mkdir(mnt)
        script = (
            "import elevator, os, sys\n"
            "try:\n"
            f"    elevator.run(fio_text={small_fio!r}, target={mnt!r} + '/t', sched='none')\n"
            "except elevator.ElevatorError as e:\n"
            "    print('ERR', e.field, e)\n"
            f"print('LEFT', os.listdir({mnt!r}))\n"
        )
        out = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             f'mount -t ramfs ramfs "$1" && exec "$2" -c "$3"', "sh", mnt,
             __import__("sys").executable, script],
            capture_output=True, text=True, timeout=120,
        )
        assert "ERR target" in out.stdout and "ramfs" in out.stdout, out.stdout + out.stderr
        assert "LEFT []" in out.stdout, out.stdout + out.stderr
