"""Round trips through the API: grids in, Arrow tables out, the same as the CLI's sweep."""

import json
import subprocess

import pyarrow as pa
import pytest

import elevator


def test_listings_name_schedulers_tunables_drives_and_scenarios():
    names = {s["name"]: s for s in elevator.schedulers()}
    assert {"noop", "deadline", "anticipatory", "cfq", "bfq", "mq-deadline", "kyber"} <= set(names)
    kyber = {t["name"]: t for t in names["kyber"]["tunables"]}
    assert kyber["read_lat_nsec"]["default"] == 2_000_000
    assert "samsung-980pro-1tb" in elevator.drives()
    assert "anticipatory" in elevator.scenarios()


def test_a_sweep_gives_one_row_per_job_per_cell_with_the_coordinates_as_columns():
    r = elevator.sim(
        "anticipatory-no-write",
        sched=["anticipatory", "deadline"],
        sweep={"anticipatory.antic_expire": [0, 6], "seed": range(1, 3)},
    )
    t = r.table
    assert isinstance(t, pa.Table)
    jobs = sorted(set(t.column("job").to_pylist()))
    assert t.num_rows == 2 * 2 * 2 * len(jobs)
    assert t.column_names[:5] == ["cell", "scheduler", "anticipatory.antic_expire", "seed", "device"]
    assert t.schema.field("seed").type == pa.int64()
    first = t.slice(0, 1).to_pylist()[0]
    assert (first["cell"], first["scheduler"], first["anticipatory.antic_expire"], first["seed"]) == (
        0, "anticipatory", 0, 1)
    # Deadline has no antic_expire: the same run for both values (cells 4 and 6, seed 1).
    df = r.to_polars()
    dl = df.filter((df["scheduler"] == "deadline") & (df["seed"] == 1))
    assert dl["seconds"].n_unique() == 1
    assert len(r.to_pandas()) == t.num_rows


def test_the_table_is_the_same_at_any_number_of_threads():
    kw = dict(sched="deadline,anticipatory", sweep={"seed": range(1, 5)})
    one = elevator.sim("anticipatory-no-write", threads=1, **kw).table
    two = elevator.sim("anticipatory-no-write", threads=2, **kw).table
    assert one.equals(two)


def test_python_and_the_cli_give_the_same_figures(root, tmp_path):
    binary = root / "target" / "release" / "elevator"
    if not binary.exists():
        pytest.skip(f"notice: {binary} not built; the CLI comparison needs it")
    out = tmp_path / "s.json"
    subprocess.run(
        [binary, "sim", "anticipatory-no-write", "--sched", "deadline,anticipatory",
         "--sweep", "seed=1..3", "--json", out],
        check=True, capture_output=True,
    )
    rows = json.loads(out.read_text())["rows"]
    t = elevator.sim("anticipatory-no-write", sched="deadline,anticipatory", sweep={"seed": "1..3"}).table
    compile_rows = [r for r in t.to_pylist() if r["job"] == "compile"]
    assert [r["cell"] for r in rows] == [r["cell"] for r in compile_rows]
    for cli, py in zip(rows, compile_rows):
        assert cli["metrics"]["compile.seconds"] == py["seconds"]
        assert cli["metrics"]["end_s"] == py["end_s"]


def test_a_scenario_object_runs_like_its_name(root):
    s = elevator.Scenario.builtin("anticipatory-no-write")
    assert s.name and "compile" in s.jobs
    by_obj = elevator.sim(s, sched="deadline").table
    by_name = elevator.sim("anticipatory-no-write", sched="deadline").table
    assert by_obj.drop_columns(["device"]).equals(by_name.drop_columns(["device"]))
    loaded = elevator.Scenario.load(root / "scenarios" / "anticipatory-no-write.toml")
    assert loaded.jobs == s.jobs


def test_fio_text_keeps_every_request_with_its_times(small_fio):
    r = elevator.sim(fio_text=small_fio, sched=["none", "kyber"], requests=True)
    q = r.requests
    assert q.num_rows == 2 * 300
    assert q.column_names == ["cell", "job", "process", "op", "sector", "sectors",
                              "q_ns", "i_ns", "d_ns", "c_ns", "merged", "queued", "in_flight",
                              "t_ns"]
    df = r.requests_to_polars()
    assert (df["q_ns"] <= df["d_ns"]).all() and (df["d_ns"] < df["c_ns"]).all()
    # An NVMe drive's tags are its queue: a request gets its tag when it is dispatched.
    assert (df["t_ns"] == df["d_ns"]).all()
    assert set(df["op"].cast(str).to_list()) == {"read"}
    assert set(df["sectors"].to_list()) == {8}
    assert r.table.column("read_ios").to_pylist() == [300, 300]
    assert r.table.column("device").to_pylist()[0].lower().startswith("samsung")


def test_a_fio_job_file_sweeps_a_tunable_and_the_drive(root, tmp_path, small_fio):
    job = tmp_path / "r.fio"
    job.write_text(small_fio)
    t = elevator.sim(fio=job, sched="kyber", sweep={
        "drive": ["samsung-980pro-1tb", "cheetah9lp"],
        "kyber.read_lat_nsec": [500_000, 8_000_000],
    }).table
    assert t.column("drive").to_pylist() == ["samsung-980pro-1tb"] * 2 + ["cheetah9lp"] * 2
    mean = t.column("read_mean_ms").to_pylist()
    assert mean[2] > 2 * mean[0], "the rotational drive is slower"


def test_a_trace_replays_under_every_scheduler(root):
    trace = root / "docs" / "traces" / "two-readers.trace"
    scheds = ["noop", "deadline", "anticipatory", "cfq", "bfq"]
    t = elevator.sim(trace=trace, sched=scheds, closed_loop=True, speed=4).table
    assert t.column("scheduler").to_pylist() == scheds
    assert t.column("read_ios").to_pylist() == [400] * len(scheds)
    lat = dict(zip(scheds, t.column("read_mean_ms").to_pylist()))
    # docs/replay.md: closed loop, 4x faster, anticipation pays off (1.48 ms against 2.21).
    assert lat["anticipatory"] < lat["deadline"]
    opened = elevator.sim(trace=trace, sched=["deadline", "anticipatory"], speed=4).table
    # ... and open loop it cannot: the arrivals outrun the disk (about 94 ms either way).
    assert min(opened.column("read_mean_ms").to_pylist()) > 10 * lat["anticipatory"]
