use elevator_sim::hdd::{DriveSpec, Hdd};
use elevator_sim::validate;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args[1].as_str() {
        "import" => {
            let s = elevator_sim::disksim::import(&args[2]).unwrap_or_else(|e| panic!("{e}"));
            print!("{}", s.to_toml());
        }
        "val" => {
            let spec = if args[2].ends_with(".parv") {
                elevator_sim::disksim::import(&args[2]).unwrap()
            } else {
                DriveSpec::resolve(&args[2]).unwrap()
            };
            let t0 = std::time::Instant::now();
            let mut h = Hdd::new(spec);
            let t1 = std::time::Instant::now();
            let tr = validate::read_trace(&args[3]).unwrap();
            let v = validate::replay(&mut h, &tr);
            eprintln!("build {:?} replay {:?}", t1 - t0, t1.elapsed());
            println!(
                "demerit {:.4} sim {:.3} meas {:.3} hitagree {:.3}",
                v.demerit_ms, v.sim_mean_ms, v.measured_mean_ms, v.hit_agreement
            );
            if args.len() > 4 {
                let mut out = String::new();
                for (i, r) in tr.iter().enumerate() {
                    out += &format!(
                        "{} {} {} {} {:.6} {:.6} {}\n",
                        i,
                        if r.read { "R" } else { "W" },
                        r.blkno,
                        r.sectors,
                        v.simulated_ms[i],
                        r.service_ms,
                        v.simulated_hit[i] as u8
                    );
                }
                std::fs::write(&args[4], out).unwrap();
            }
        }
        "dem" => {
            let a: Vec<f64> = std::fs::read_to_string(&args[2])
                .unwrap()
                .lines()
                .map(|l| l.parse().unwrap())
                .collect();
            let b: Vec<f64> = std::fs::read_to_string(&args[3])
                .unwrap()
                .lines()
                .map(|l| l.parse().unwrap())
                .collect();
            println!("{}", validate::demerit(&a, &b));
        }
        "loc" => {
            let h = Hdd::new(DriveSpec::resolve(&args[2]).unwrap());
            for a in &args[3..] {
                let l: u64 = a.parse().unwrap();
                let g = h.geometry();
                let p = g.locate(l);
                let t = g.tracks[p.track];
                println!("{l}: track {} cyl {} head {} sector {} first_lbn {} lbns {} spt {} first_sector {} angle0 {:.4}", p.track, p.cyl, p.head, p.sector, t.first_lbn, t.lbns, t.spt, t.first_sector, t.angle0);
            }
        }
        _ => {}
    }
}
#[allow(dead_code)]
fn dummy() {}
