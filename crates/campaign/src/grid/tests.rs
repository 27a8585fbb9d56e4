//! The grid's axes, numbering, bounds and runs.

use super::*;

fn spec(sweep: &[&str]) -> GridSpec {
    GridSpec {
        scenario: Some("anticipatory-no-write".into()),
        sched: vec!["anticipatory".into(), "deadline".into()],
        sweep: sweep.iter().map(|s| s.to_string()).collect(),
        ..GridSpec::default()
    }
}

#[test]
fn axes_parse_ranges_lists_tunables_and_job_fields() {
    assert_eq!(parse_axis("seed=1..3").unwrap(), Axis::Seed(vec![1, 2, 3]));
    assert_eq!(
        parse_axis("anticipatory.antic_expire=0,2,4,8").unwrap(),
        Axis::Tunable {
            sched: "anticipatory".into(),
            name: "antic_expire".into(),
            values: vec![0, 2, 4, 8]
        }
    );
    let Axis::Job { job, field, values } = parse_axis("job.writer.nr_requests=64,128").unwrap()
    else {
        panic!("a job axis");
    };
    assert_eq!((job.as_str(), field.as_str()), ("writer", "nr_requests"));
    assert_eq!(
        values,
        vec![toml::Value::Integer(64), toml::Value::Integer(128)]
    );
    for bad in [
        "seed",
        "seed=5..1",
        "seed=a",
        "anticipatory.no_such=1",
        "nosuch.antic_expire=1",
        "a.b.c.d=1",
        "seed=",
    ] {
        assert!(parse_axis(bad).is_err(), "{bad}");
    }
}

#[test]
fn cells_are_numbered_scheduler_first_last_axis_fastest() {
    let g = Grid::new(&spec(&["seed=1..2", "drive=cheetah9lp,ibm18es,atlas10k"])).unwrap();
    assert_eq!(g.len(), 12);
    let c = |i| g.coordinates(i);
    assert_eq!(
        c(0),
        (
            "anticipatory".into(),
            vec![Coord::Int(1), Coord::Text("cheetah9lp".into())]
        )
    );
    assert_eq!(c(1).1[1], Coord::Text("ibm18es".into()));
    assert_eq!(c(3).1[0], Coord::Int(2));
    assert_eq!(c(6).0, "deadline");
    assert_eq!(c(11).1, vec![Coord::Int(2), Coord::Text("atlas10k".into())]);
}

/// A job file's work depends on its drive: 4 KiB reads of the whole device are 2.2 x 10^6
/// I/Os on the Cheetah 9LP and 2.4 x 10^8 on the 980 PRO. A `drive=` axis was bounded by
/// the base drive's cell only; now every cell's drive is told before any runs.
#[test]
fn a_drive_axis_is_bounded_by_every_cell_not_the_first() {
    let whole = GridSpec {
        fio_text: Some("[whole]\nrw=read\nbs=4k\n".into()),
        drive: Some("cheetah9lp".into()),
        sched: vec!["noop".into()],
        ..GridSpec::default()
    };
    let one = Grid::new(&whole).expect("2.2 x 10^6 I/Os on the Cheetah: under the bound");
    assert_eq!(one.len(), 1);
    let swept = GridSpec {
        sweep: vec!["drive=cheetah9lp,samsung-980pro-1tb".into()],
        ..whole
    };
    let e = Grid::new(&swept).unwrap_err().to_string();
    assert!(e.contains("size") && e.contains("--max-ios"), "{e}");
}

#[test]
fn shards_partition_the_grid() {
    let g = Grid::new(&spec(&["seed=1..5"])).unwrap();
    let mut all: Vec<u64> = (0..3).flat_map(|i| g.shard(i, 3).unwrap()).collect();
    all.sort();
    assert_eq!(all, (0..10).collect::<Vec<_>>());
    assert_eq!(g.shard(1, 3).unwrap(), vec![1, 4, 7]);
    assert!(g.shard(3, 3).is_err());
    assert!(g.shard(0, 0).is_err());
}

#[test]
fn a_cell_runs_the_same_alone_or_among_others() {
    let g = Grid::new(&spec(&["anticipatory.antic_expire=0,6", "seed=1..2"])).unwrap();
    let all = g.run_cells(&(0..g.len()).collect::<Vec<_>>()).unwrap();
    for i in [0, 3, 5] {
        assert_eq!(g.run_cell(i).unwrap(), all[i as usize]);
    }
    // Deadline has no antic_expire: the same run for both values.
    assert_eq!(all[4].jobs, all[6].jobs);
    assert_ne!(all[0].jobs, all[2].jobs, "antic_expire changes AS");
}

#[test]
fn bad_grids_are_refused_naming_the_argument() {
    let e = |s: GridSpec| Grid::new(&s).unwrap_err().to_string();
    // 99,999 seeds on each of three drives: past MAX_CELLS, refused before any is built.
    let big = spec(&["seed=1..99999", "drive=cheetah9lp,ibm18es,atlas10k"]);
    assert!(e(big).contains("cells"));
    let mut s = spec(&[]);
    s.sched = vec!["nosuch".into()];
    assert!(e(s).contains("nosuch"));
    let mut s = spec(&[]);
    s.set.insert("antic_expire".into(), -5);
    assert!(e(s).contains("antic_expire"), "an out-of-range tunable");
    let s = GridSpec {
        fio_text: Some("[a]\nrw=randread\nbs=4k\nsize=1m\n".into()),
        sweep: vec!["job.a.bs=1".into()],
        ..GridSpec::default()
    };
    assert!(e(s).contains("scenarios only"));
    let s = GridSpec {
        scenario_toml: Some(
            "name = \"x\"\ndrive = \"nosuch\"\n\n[[job]]\nname = \"c\"\nkind = \"compile\"\n"
                .into(),
        ),
        origin: Some("mine.toml".into()),
        ..GridSpec::default()
    };
    let Err(Error::Input(ie)) = Grid::new(&s) else {
        panic!("an input error")
    };
    assert_eq!(ie.file, "mine.toml");
    assert_eq!(ie.field, "drive");
    assert_eq!(ie.line(), Some(2));
}

#[test]
fn io_controller_axes_parse_as_cgroup_files() {
    let a = parse_axis("/a/b/io.weight=100,500").unwrap();
    assert_eq!(a.key(), "/a/b/io.weight");
    assert!(a.is_int());
    assert_eq!(a.coord(1), Coord::Int(500));
    let a = parse_axis("/a/io.max=rbps=1048576 wiops=50,rbps=max").unwrap();
    assert_eq!(a.key(), "/a/io.max");
    assert!(!a.is_int());
    assert_eq!(a.coord(0), Coord::Text("rbps=1048576 wiops=50".into()));
    assert_eq!(a.coord(1), Coord::Text("rbps=max".into()));
    let a = parse_axis("io.cost.qos=enable=1 ctrl=user min=50.00 max=100.00").unwrap();
    assert_eq!(a.key(), "io.cost.qos");
    assert_eq!(
        a,
        parse_axis("/io.cost.qos=enable=1 ctrl=user min=50.00 max=100.00").unwrap()
    );
    assert_eq!(parse_axis("/a/io.latency=2000..2001").unwrap().len(), 2);
    for (bad, says) in [
        ("/io.weight=100", "root"),
        ("/a/io.cost.qos=enable=1", "root"),
        ("/a/io.prio=1", "not a swept io file"),
        ("/a/io.weight=0", "below 1"),
        ("/a/io.latency=soon", "not an integer"),
    ] {
        let e = parse_axis(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

/// Two sequential readers in groups /a and /b of a fio job file on the SSD.
fn two_groups(sweep: &[&str]) -> GridSpec {
    GridSpec {
        fio_text: Some(
            "[a]\nrw=read\nbs=64k\nsize=4m\nelevator_cgroup=/a\n\
             [b]\nrw=read\nbs=64k\nsize=4m\noffset=1g\nelevator_cgroup=/b\n"
                .into(),
        ),
        sched: vec!["none".into(), "mq-deadline".into()],
        sweep: sweep.iter().map(|s| s.to_string()).collect(),
        ..GridSpec::default()
    }
}

#[test]
fn an_io_max_axis_throttles_its_group_under_every_scheduler() {
    let g = Grid::new(&two_groups(&["/a/io.max=rbps=1048576,rbps=max"])).unwrap();
    assert_eq!(g.len(), 4);
    let all = g.run_cells(&[0, 1, 2, 3]).unwrap();
    let mb_s = |r: &CellResult, job: &str| r.jobs.iter().find(|j| j.name == job).unwrap().read.mb_s;
    for (limited, free) in [(&all[0], &all[1]), (&all[2], &all[3])] {
        // blk-throttle (tg_may_dispatch): /a's reads wait for their bytes-per-second budget;
        // 4 MiB at 1 MiB/s take about 4 s (the first slice's budget is spent at once).
        let a = mb_s(limited, "a");
        assert!(a < 1.2 * 1.048_576, "{} /a at {a} MB/s", limited.scheduler);
        assert!(
            mb_s(free, "a") > 20.0 * a,
            "unlimited /a: {}",
            mb_s(free, "a")
        );
        // /b has no limit in either cell.
        assert!(mb_s(limited, "b") > 20.0 * a);
    }
}

#[test]
fn io_controller_axes_are_checked_before_any_cell_runs() {
    let e = |sweep: &[&str]| Grid::new(&two_groups(sweep)).unwrap_err().to_string();
    assert!(e(&["/c/io.weight=100"]).contains("no group \"/c\""));
    assert!(e(&["/a/io.max=rbps=fast"]).contains("rbps=fast"));
    assert!(e(&["/a/io.weight=20000"]).contains("io.weight"));
    // A scenario: its own parser checks the value, naming the scenario and the axis.
    let s = GridSpec {
        scenario_toml: Some(
            "name = \"x\"\ndrive = \"laptop-4200\"\nduration_s = 2\n\n[[group]]\npath = \"/a\"\n\n\
             [[job]]\nname = \"r\"\nkind = \"dependent-reader\"\ngroup = \"/a\"\n"
                .into(),
        ),
        origin: Some("mine.toml".into()),
        sched: vec!["deadline".into()],
        sweep: vec!["/a/io.bfq.weight=5000".into()],
        ..GridSpec::default()
    };
    let Err(Error::Input(ie)) = Grid::new(&s) else {
        panic!("an input error")
    };
    assert!(
        ie.file.starts_with("mine.toml with /a/io.bfq.weight=5000"),
        "{}",
        ie.file
    );
    assert_eq!(ie.field, "group.io_bfq_weight");
    let mut s2 = s.clone();
    s2.sweep = vec!["/b/io.weight=100".into()];
    assert!(Grid::new(&s2)
        .unwrap_err()
        .to_string()
        .contains("no group \"/b\""));
}

#[test]
fn a_scenario_io_max_axis_limits_its_group() {
    let s = GridSpec {
        scenario_toml: Some(
            "name = \"x\"\ndrive = \"laptop-4200\"\nduration_s = 4\n\n\
             [[job]]\nname = \"r\"\nkind = \"dependent-reader\"\ngroup = \"/a\"\n"
                .into(),
        ),
        sched: vec!["deadline".into()],
        sweep: vec!["/a/io.max=riops=10,riops=max".into()],
        ..GridSpec::default()
    };
    // /a has no [[group]] table: the axis adds one.
    let g = Grid::new(&s).unwrap();
    let r = g.run_cells(&[0, 1]).unwrap();
    let ios = |c: &CellResult| c.jobs[0].read.ios;
    // blk-throttle's IOPS budget (tg_within_iops_limit): 10 per second over a 4 s run.
    assert!(ios(&r[0]) <= 60, "{} reads at riops=10", ios(&r[0]));
    assert!(
        ios(&r[1]) > 2 * ios(&r[0]),
        "{} reads unlimited",
        ios(&r[1])
    );
}

#[test]
fn fio_text_runs_on_the_default_ssd_with_requests_kept() {
    let s = GridSpec {
        fio_text: Some("[r]\nrw=randread\nbs=4k\nsize=4m\nnumber_ios=200\n".into()),
        sched: vec!["none".into(), "kyber".into()],
        requests: true,
        ..GridSpec::default()
    };
    let g = Grid::new(&s).unwrap();
    let r = g.run_cell(1).unwrap();
    assert_eq!(r.scheduler, "kyber");
    let req = r.requests.unwrap();
    assert_eq!(req.records.len(), 200);
    assert_eq!(req.jobs, vec!["r".to_string()]);
    assert!(req
        .records
        .iter()
        .all(|q| q.inserted <= q.dispatched && q.dispatched <= q.completed));
}

/// What a cell costs, told before it runs: the base's I/Os for the cells an axis leaves alike
/// (scheduler, seed), each drive's own for a `drive=` axis, and the set-up's on top.
#[test]
fn implied_ios_follow_each_cells_work() {
    let g = Grid::new(&spec(&["seed=1..2"])).unwrap();
    let base = g.implied_ios(0);
    assert!(base > CELL_OVERHEAD_IOS, "{base}");
    assert!((1..g.len()).all(|c| g.implied_ios(c) == base));
    // 4 KiB reads of 64 MiB: 16384 I/Os by size on either drive, plus none by time.
    let reads = GridSpec {
        fio_text: Some("[r]\nrw=read\nbs=4k\nsize=64m\n".into()),
        sched: vec!["noop".into()],
        sweep: vec!["drive=cheetah9lp,samsung-980pro-1tb".into()],
        ..GridSpec::default()
    };
    let g = Grid::new(&reads).unwrap();
    assert_eq!(g.implied_ios(0), 16384 + CELL_OVERHEAD_IOS);
    // A job-field axis: a compile of more files implies more.
    let g = Grid::new(&spec(&["job.compile.files=100,350"])).unwrap();
    assert!(
        g.implied_ios(1) > g.implied_ios(0),
        "{} {}",
        g.implied_ios(0),
        g.implied_ios(1)
    );
}
