//! `elevator list`: schedulers with their tunables, built-in drives, host CPU models and
//! scenarios.

use elevator_core::registry;
use elevator_sim::hdd::{DriveSpec, Hdd};
use elevator_sim::Device;

use crate::output::say;

use crate::scenarios;

/// Arguments of `elevator list`.
#[derive(clap::Args)]
pub struct Args {
    /// List only this: schedulers, drives, hosts or scenarios.
    #[arg(value_parser = ["schedulers", "drives", "hosts", "scenarios"])]
    what: Option<String>,
}

/// Print the lists.
pub fn run(args: Args) -> anyhow::Result<()> {
    let all = args.what.is_none();
    let want = |w: &str| all || args.what.as_deref() == Some(w);
    if want("schedulers") {
        say!("Schedulers (tunables as in /sys/block/<dev>/queue/iosched/):");
        for info in registry::all() {
            let aliases = if info.aliases.is_empty() {
                String::new()
            } else {
                format!(" (also: {})", info.aliases.join(", "))
            };
            say!("  {}{} - {}", info.name, aliases, info.summary);
            for t in info.tunables {
                say!(
                    "      {:<22} {:>8} {:<8} [{}..={}]  {}",
                    t.name,
                    t.default,
                    t.unit.label(),
                    t.min,
                    t.max,
                    t.doc
                );
            }
        }
        say!("  Stacking: `ioband+NAME` runs dm-ioband's weight policy over any policy above;");
        say!("  its tunables and the inner policy's are set by name together.");
        say!();
    }
    if want("drives") {
        say!("Built-in drives (or give a drive TOML file):");
        // One column for every name, the SSDs' longer ones too (they pushed their rows'
        // kind and size out of line with the disks').
        let width = DriveSpec::builtin_names()
            .into_iter()
            .chain(elevator_sim::ssd::SsdSpec::builtin_names())
            .map(str::len)
            .max()
            .unwrap_or(0);
        for name in DriveSpec::builtin_names() {
            let d = DriveSpec::builtin(name).expect("listed drives exist");
            let gb = Hdd::new(d.clone()).capacity_sectors() as f64 * 512.0 / 1e9;
            say!(
                "  {:<width$} {:>6.0} rpm {:>6.1} GB  {}",
                name,
                d.rpm,
                gb,
                d.description
            );
        }
        for name in elevator_sim::ssd::SsdSpec::builtin_names() {
            let d = elevator_sim::ssd::SsdSpec::builtin(name).expect("listed drives exist");
            let gb = d.capacity_sectors() as f64 * 512.0 / 1e9;
            say!(
                "  {:<width$} {:>10} {:>6.1} GB  {}",
                name,
                "SSD",
                gb,
                d.description
            );
        }
        say!();
    }
    if want("hosts") {
        say!("Built-in host CPU models (elevator sim JOB.fio --host NAME, or a host TOML file):");
        for name in elevator_sim::cpu::CpuSpec::builtin_names() {
            let h = elevator_sim::cpu::CpuSpec::builtin(name).expect("listed hosts exist");
            say!("  {:<14} {:>3} cores  {}", name, h.cores, h.description);
        }
        say!();
    }
    if want("scenarios") {
        say!("Built-in scenarios (elevator sim NAME --sched ...):");
        for (name, text) in scenarios::BUILTIN {
            let first = text
                .lines()
                .find_map(|l| l.strip_prefix("# "))
                .unwrap_or("");
            say!("  {name:<22} {first}");
        }
    }
    Ok(())
}
