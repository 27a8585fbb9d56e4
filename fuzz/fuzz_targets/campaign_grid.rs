//! Campaign grids on arbitrary text: each line an axis as `elevator sim --sweep` and the
//! Python API take it (`seed=1..5`, `deadline.fifo_batch=1,4`, `job.r.depth=1..8`), the grid
//! counted and bounded (`check_grid`), and a grid of a small built-in scenario built from
//! those axes with its cells' coordinates and a shard listed (no cell is run). An axis, a
//! grid or an error, never a panic and never an allocation the size of a range.
#![no_main]

use elevator_campaign::{check_grid, parse_axis, Grid, GridSpec, MAX_CELLS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut axes = Vec::new();
    for line in text.lines().take(8) {
        if let Ok(a) = parse_axis(line) {
            axes.push(a);
        }
    }
    if check_grid(2, &axes).is_err() {
        return;
    }
    let spec = GridSpec {
        scenario_toml: Some(
            "drive = \"laptop-4200\"\n[[job]]\nname = \"r\"\nkind = \"fio\"\nrw = \"randread\"\n\
             bs = 4096\nnumber_ios = 4\n"
                .into(),
        ),
        sched: vec!["deadline".into(), "bfq".into()],
        sweep: text.lines().take(8).map(String::from).collect(),
        ..GridSpec::default()
    };
    if let Ok(g) = Grid::new(&spec) {
        assert!(g.len() <= MAX_CELLS, "{} cells", g.len());
        for cell in [0, g.len() / 2, g.len().saturating_sub(1)] {
            if cell < g.len() {
                let _ = g.coordinates(cell);
            }
        }
        let _ = g.shard(1, 7);
    }
});
