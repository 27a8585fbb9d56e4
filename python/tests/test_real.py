"""elevator.run: real I/O on a temporary regular file through the io_uring executor (no root)."""

import errno
import os
from pathlib import Path

import pyarrow as pa
import pytest

import elevator

JOB = """[writer]
rw=write
bs=64k
size=2m
iodepth=4

[reader]
rw=randread
bs=4k
size=2m
offset=2m
number_ios=200
iodepth=2
"""


def _o_direct_dir(candidates):
    """The first directory whose filesystem takes O_DIRECT (tmpfs does not), else None."""
    for d in candidates:
        d = Path(d)
        try:
            d.mkdir(parents=True, exist_ok=True)
            probe = d / ".o_direct_probe"
            fd = os.open(probe, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o600)
            os.close(fd)
            probe.unlink()
            return d
        except OSError as e:
            if e.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.EACCES, errno.EROFS):
                raise
    return None


@pytest.fixture
def target_dir(tmp_path, root):
    # pytest's tmp_path first; the repository's target/ when /tmp is a tmpfs.
    d = _o_direct_dir([tmp_path, root / "target" / "pytest-real-io"])
    if d is None:
        pytest.skip("notice: no directory here supports O_DIRECT; the real-I/O test skips")
    yield d
    for leftover in d.glob("elevator-run-*"):
        leftover.unlink()


def test_run_on_a_new_file_gives_the_simulators_table_shape(target_dir):
    target = target_dir / f"elevator-run-{os.getpid()}"
    r = elevator.run(fio_text=JOB, target=target, sched=["none", "mq-deadline"], seed=3)
    t = r.table
    sim = elevator.sim(fio_text=JOB, sched="none").table
    # The same columns, in the same order, of the same types as a simulated grid without axes.
    assert t.schema == sim.schema
    assert t.num_rows == 4
    rows = t.to_pylist()
    assert [(x["cell"], x["scheduler"], x["job"]) for x in rows] == [
        (0, "none", "writer"), (0, "none", "reader"),
        (1, "mq-deadline", "writer"), (1, "mq-deadline", "reader"),
    ]
    for x in rows:
        assert x["device"] == str(target)
        assert x["seed"] == 3
        assert x["finished"]
        if x["job"] == "writer":
            assert (x["write_bytes"], x["write_ios"], x["read_ios"]) == (2 << 20, 32, 0)
        else:
            assert (x["read_ios"], x["read_bytes"], x["write_ios"]) == (200, 200 * 4096, 0)
        assert x["end_s"] > 0
    # The executor laid the file out: it is as large as the jobs' regions.
    assert target.stat().st_size == 4 << 20
    assert isinstance(r.to_polars().height, int) and len(r.to_pandas()) == 4
    # The file is elevator's now: a second run writes over it without allow_overwrite.
    again = elevator.run(fio_text=JOB, target=target, sched="none")
    assert again.table.num_rows == 2


def test_run_keeps_every_requests_record_in_the_simulators_shape(target_dir):
    target = target_dir / f"elevator-run-req-{os.getpid()}"
    r = elevator.run(fio_text=JOB, target=target, sched="mq-deadline", requests=True)
    q = r.requests
    sim = elevator.sim(fio_text=JOB, sched="none", requests=True).requests
    assert q.schema == sim.schema
    rows = q.to_pylist()
    # Every bio completes once: the writer's 32 of 64 KiB and the reader's 200 of 4 KiB.
    writes = [x for x in rows if x["op"] == "write"]
    reads = [x for x in rows if x["op"] == "read"]
    assert sum(x["sectors"] for x in writes) == (2 << 20) // 512
    assert len(reads) == 200 and all(x["sectors"] == 8 for x in reads)
    for x in rows:
        assert x["q_ns"] <= x["i_ns"] <= x["d_ns"] <= x["c_ns"]
        assert x["in_flight"] >= 1
    assert elevator.run(fio_text=JOB, target=target, sched="none").requests is None


def test_run_refuses_a_file_it_did_not_lay_out(target_dir):
    target = target_dir / f"elevator-run-{os.getpid()}-theirs"
    target.write_bytes(b"someone's data" * 400_000)
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run(fio_text=JOB, target=target)
    assert e.value.field == "target"
    assert str(target) in str(e.value)
    assert target.read_bytes().startswith(b"someone's data"), "nothing was written"


def test_run_errors_carry_file_line_and_field(tmp_path):
    job = tmp_path / "bad.fio"
    job.write_text("[a]\nrw=read\nbs=4k\nsize=1m\niodepth=lots\n")
    with pytest.raises(elevator.InputError) as e:
        elevator.run(job, target=tmp_path / "t")
    assert (e.value.file, e.value.line, e.value.field) == (str(job), 5, "iodepth")
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run(fio_text=JOB, target=tmp_path / "t", sched="nosuch")
    assert e.value.field == "--sched"
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run(fio_text="[a]\nrw=read\nbs=4k\nsize=1m\n")
    assert "no filename" in str(e.value)
    assert not (tmp_path / "t").exists(), "nothing was laid out"
