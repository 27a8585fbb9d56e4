//! Hostile cases of issue 17 against the DiskSim importer and drive specs: each is refused
//! with the file, line and field named, before any allocation sized by the input.

use std::path::Path;

use elevator_sim::disksim;
use elevator_sim::hdd::spec::DriveSpec;

/// The validated HP C2490A model from shared/data, copied into `dir`, or `None` (with a
/// notice) when the shared data is absent.
fn copy_hp(dir: &Path) -> Option<()> {
    let mut d = std::env::current_dir().unwrap();
    let src = loop {
        let c = d.join("shared/data/disksim-valid");
        if c.is_dir() {
            break c;
        }
        if !d.pop() {
            eprintln!("skipping: shared/data/disksim-valid not found");
            return None;
        }
    };
    for f in [
        "hp_c2490a.parv",
        "hp_c2490a.diskspecs",
        "hp_c2490a_validate.model",
        "hp_c2490a_validate.seek",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    Some(())
}

/// Import after replacing `from` by `to` in `file` of the HP model; the error text.
fn import_with(file: &str, from: &str, to: &str) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    copy_hp(dir.path())?;
    let p = dir.path().join(file);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{from:?} not in {file}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
    let err = disksim::import(dir.path().join("hp_c2490a.parv"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| panic!("accepted {to:?}"));
    assert!(err.len() < 1024, "{err}");
    Some(err)
}

#[test]
fn disksim_value_nested_50000_deep_is_refused_not_a_stack_overflow() {
    let deep = format!("{}1{}", "[".repeat(50_000), "]".repeat(50_000));
    let Some(err) = import_with(
        "hp_c2490a.diskspecs",
        "Number of buffer segments = 1",
        &format!("Number of buffer segments = {deep}"),
    ) else {
        return;
    };
    assert!(err.contains("nested deeper than 64"), "{err}");
    assert!(err.contains("hp_c2490a.diskspecs:"), "{err}");
}

#[test]
fn disksim_blocks_nested_deep_are_refused_not_a_stack_overflow() {
    let deep = format!("{}{}", "x { a = ".repeat(20_000), "1 }".repeat(20_000));
    let Some(err) = import_with(
        "hp_c2490a.diskspecs",
        "Number of buffer segments = 1",
        &format!("Number of buffer segments = {deep}"),
    ) else {
        return;
    };
    assert!(err.contains("nested deeper than 64"), "{err}");
}

#[test]
fn disksim_cylinders_4294978770_are_refused_not_wrapped_to_11474() {
    let Some(err) = import_with(
        "hp_c2490a_validate.model",
        "Number of cylinders = 2629",
        "Number of cylinders = 4294978770",
    ) else {
        return;
    };
    assert!(err.contains("Number of cylinders"), "{err}");
    assert!(err.contains("too large"), "{err}");
}

#[test]
fn disksim_buffer_segments_1e12_are_refused() {
    let Some(err) = import_with(
        "hp_c2490a.diskspecs",
        "Number of buffer segments = 1",
        "Number of buffer segments = 1e12",
    ) else {
        return;
    };
    assert!(err.contains("Number of buffer segments"), "{err}");
}

#[test]
fn disksim_more_write_segments_than_buffer_segments_are_refused() {
    let Some(err) = import_with(
        "hp_c2490a.diskspecs",
        "Maximum number of write segments = 1",
        "Maximum number of write segments = 2",
    ) else {
        return;
    };
    assert!(err.contains("Maximum number of write segments"), "{err}");
    assert!(err.contains("hp_c2490a.diskspecs:35"), "{err}");
}

#[test]
fn disksim_duplicate_key_is_refused_naming_both_lines() {
    let Some(err) = import_with(
        "hp_c2490a.diskspecs",
        "Number of buffer segments = 1",
        "Number of buffer segments = 1,\nNumber of buffer segments = 8",
    ) else {
        return;
    };
    assert!(err.contains("given twice"), "{err}");
    assert!(err.contains("first at line"), "{err}");
}

#[test]
fn disksim_seek_file_line_1e300_is_refused_before_the_table_is_built() {
    let Some(err) = import_with("hp_c2490a_validate.seek", "\n1,", "\n1e300, 12.8\n1,") else {
        return;
    };
    assert!(err.contains("hp_c2490a"), "{err}");
}

#[test]
fn dev_zero_as_a_seek_file_is_refused_without_reading_it_all() {
    let err = disksim::read_seek_file(Path::new("/dev/zero"))
        .err()
        .map(|e| e.to_string())
        .expect("refused");
    assert!(err.contains("larger than 8 MiB"), "{err}");
}

fn spec_err(text: &str) -> String {
    let e = DriveSpec::parse(text, Path::new("d.toml"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| panic!("accepted:\n{text}"));
    assert!(e.len() < 1024, "{e}");
    e
}

fn laptop_with(key: &str, from: &str, to: &str) -> String {
    let base = DriveSpec::builtin("laptop-4200").unwrap().to_toml();
    let line = base
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("{key} not in the laptop spec"))
        .to_string();
    let _ = from;
    base.replacen(&line, &format!("{key} = {to}"), 1)
}

#[test]
fn drive_spec_nan_negative_and_infinite_times_and_absurd_rpm_are_refused() {
    for (key, bad) in [
        ("rpm", "1e-300"),
        ("rpm", "1e300"),
        ("rpm", "nan"),
        ("head_switch_ms", "nan"),
        ("write_settle_ms", "inf"),
        ("read_sector_ms", "-1.0"),
        ("read_miss_after_read", "nan"),
        ("write_completion", "-inf"),
    ] {
        let e = spec_err(&laptop_with(key, "", bad));
        assert!(e.contains(key), "{key} = {bad}: {e}");
        assert!(e.contains("d.toml:"), "{key} = {bad}: {e}");
    }
}

#[test]
fn drive_spec_segments_4294967295_are_refused_before_allocation() {
    let e = spec_err(&laptop_with("segments", "", "4294967295"));
    assert!(e.contains("cache.segments"), "{e}");
}
