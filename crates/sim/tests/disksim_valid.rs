//! Validation against DiskSim's measured drives, and DiskSim input errors.
//!
//! The data (shared/data/disksim-valid) is read where it lies; without it these tests print a
//! notice and pass.

use elevator_sim::disksim;
use elevator_sim::hdd::{DriveSpec, Hdd};
use elevator_sim::validate::{self, DISKSIM_FIGURES};
use std::path::{Path, PathBuf};

fn data() -> Option<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = std::env::var_os("ELEVATOR_DISKSIM_VALID")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            here.ancestors()
                .map(|a| a.join("shared/data/disksim-valid")),
        )
        .chain(
            here.ancestors()
                .map(|a| a.join("../shared/data/disksim-valid")),
        )
        .find(|d| d.join("cheetah9LP.trace").is_file());
    if found.is_none() {
        eprintln!("notice: shared/data/disksim-valid not found; DiskSim validation tests skipped");
    }
    found
}

#[test]
fn demerit_on_each_measured_drive_is_no_worse_than_disksims() {
    let Some(dir) = data() else { return };
    for (name, prefix, disksim_figure) in DISKSIM_FIGURES {
        let spec = DriveSpec::builtin(name).expect("built-in");
        let trace = validate::read_trace(dir.join(format!("{prefix}.trace"))).expect("trace");
        let v = validate::replay(&mut Hdd::new(spec), &trace);
        eprintln!(
            "{name}: demerit {:.4} ms (DiskSim {disksim_figure}), mean {:.3} / {:.3}",
            v.demerit_ms, v.sim_mean_ms, v.measured_mean_ms
        );
        assert!(
            v.demerit_ms <= *disksim_figure,
            "{name}: {} > DiskSim's {disksim_figure}",
            v.demerit_ms
        );
        assert!((v.sim_mean_ms - v.measured_mean_ms).abs() / v.measured_mean_ms < 0.03);
    }
}

#[test]
fn importing_the_parv_files_gives_the_built_in_drives() {
    let Some(dir) = data() else { return };
    for (name, prefix, _) in DISKSIM_FIGURES {
        let mut imported = disksim::import(dir.join(format!("{prefix}.parv"))).expect("import");
        let builtin = DriveSpec::builtin(name).expect("built-in");
        imported.name = builtin.name.clone();
        assert_eq!(imported, builtin, "{name}");
    }
}

#[test]
fn demerit_of_identical_traces_reproduces_rms_c_conventions() {
    // A sample against itself is 0; DiskSim's binning makes values in one bucket equal.
    let a = [1.0001, 1.0002, 2.5, 7.25];
    let b = [1.0004, 1.0007, 2.5004, 7.2504];
    assert_eq!(validate::demerit(&a, &b), 0.0);
}

/// A directory for one test's drive files, removed when the test ends.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("elevator-disksim-test-{name}-"))
        .tempdir()
        .expect("temp dir")
}

/// A minimal DiskSim drive in four files (.parv, .diskspecs, .model, .seek).
fn write_drive(dir: &Path, model_edit: &str, seek: &str, specs_edit: &str) -> PathBuf {
    // `model_edit` and `specs_edit` append lines to the model and the diskspecs blocks.
    let model = format!(
        r#"dm_disk TEST_model {{
   Number of data surfaces = 2,
   Number of cylinders = 100,
   Block count = 20000,
   Layout Model = dm_layout_g1 {{
      LBN-to-PBN mapping scheme = 0,
      Sparing scheme used = 0,
      Rangesize for sparing = 1,
      Zones = [
         dm_layout_g1_zone {{
            First cylinder number = 0,
            Last cylinder number = 99,
            Blocks per track = 100,
            Offset of first block = 0,
            Empty space at zone front = 0,
            Skew for track switch = 10,
            Skew for cylinder switch = 20,
            Number of spares = 0,
            slips = [],
            defects = []
         }}
      ]
   }},
   Mechanical Model = dm_mech_g1 {{
      Access time type = trackSwitchPlusRotation,
      Seek type = extracted,
      Full seek curve = t.seek,
      Add. write settling delay = 0.5,
      Head switch time = 0.3,
      Rotation speed (in rpms) = 6000,
      Percent error in rpms = 0.0
   }}
{model_edit}}}
"#
    );
    std::fs::write(dir.join("t.model"), model).expect("write");
    std::fs::write(dir.join("t.seek"), seek).expect("write");
    let specs = format!(
        "disksim_disk TEST {{\n   Model = source t.model,\n   Bulk sector transfer time = 0.1,\n   Number of buffer segments = 2,\n   Segment size (in blks) = 200,\n   Buffer continuous read = 3,\n   Maximum read-ahead (blks) = 100,\n   Fast write level = 0,\n{specs_edit}   Read hit over. after read = 0.1\n}}\n"
    );
    std::fs::write(dir.join("t.diskspecs"), specs).expect("write");
    let parv = "# test\nsource t.diskspecs\ninstantiate [ disk0 ] as TEST\n";
    std::fs::write(dir.join("t.parv"), parv).expect("write");
    dir.join("t.parv")
}

const SEEK: &str = "Seek distances measured: 3\n1, 1.0\n10, 2.0\n99, 5.0\n";

#[test]
fn a_small_disksim_drive_imports_and_runs() {
    let scratch = scratch("ok");
    let dir = scratch.path();
    let spec = disksim::import(write_drive(dir, "", SEEK, "")).expect("import");
    assert_eq!(spec.rpm, 6000.0);
    assert_eq!(spec.layout.zones[0].track_skew, 10);
    let mut h = Hdd::new(spec);
    assert_eq!(h.geometry().blocks, 20_000);
    let (done, _) = h.serve(true, 5000, 8, 0.0);
    assert!(done > 0.0);
}

#[test]
fn disksim_flags_import_as_disksim_4_applies_them() {
    // DiskSim 4.0 reads the flag but never sets up the dedicated segment.
    let scratch = scratch("wseg");
    let dir = scratch.path();
    let specs = "   Use separate write segment = 1,\n   Extra write disconnect = 1,\n   Read any free blocks = 1,\n";
    let spec = disksim::import(write_drive(dir, "", SEEK, specs)).expect("import");
    assert!(!spec.cache.separate_write_segment);
    assert!(spec.bus.extra_write_disconnect);
    assert!(spec.cache.read_any_free_blocks);
}

#[test]
fn malformed_parv_model_seek_and_specs_name_file_line_and_field() {
    let scratch = scratch("bad");
    let dir = scratch.path();
    // A seek file line that is not `distance, ms`.
    let e = disksim::import(write_drive(
        dir,
        "",
        "Seek distances measured: 2\n1, 1.0\n10; 2.0\n",
        "",
    ))
    .unwrap_err();
    assert!(e.file.ends_with("t.seek"), "{e}");
    assert_eq!(e.line(), Some(3));
    assert_eq!(e.field, "distance, time");

    // A model value that is not a number.
    let bad_model = write_drive(dir, "", SEEK, "");
    let text = std::fs::read_to_string(dir.join("t.model")).expect("model");
    std::fs::write(
        dir.join("t.model"),
        text.replace("Blocks per track = 100", "Blocks per track = many"),
    )
    .expect("write");
    let e = disksim::import(&bad_model).unwrap_err();
    assert!(e.file.ends_with("t.model"), "{e}");
    assert_eq!(e.field, "Blocks per track");
    assert_eq!(e.line(), Some(13));

    // An unknown sparing scheme.
    let p = write_drive(dir, "", SEEK, "");
    let text = std::fs::read_to_string(dir.join("t.model")).expect("model");
    std::fs::write(
        dir.join("t.model"),
        text.replace("Sparing scheme used = 0", "Sparing scheme used = 42"),
    )
    .expect("write");
    let e = disksim::import(&p).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.line()),
        ("Sparing scheme used", Some(7))
    );

    // A diskspecs value out of range.
    let p = write_drive(dir, "", SEEK, "");
    let text = std::fs::read_to_string(dir.join("t.diskspecs")).expect("specs");
    std::fs::write(
        dir.join("t.diskspecs"),
        text.replace("Fast write level = 0", "Fast write level = 7"),
    )
    .expect("write");
    let e = disksim::import(&p).unwrap_err();
    assert!(e.file.ends_with("t.diskspecs"), "{e}");
    assert_eq!(e.field, "Fast write level");
    assert_eq!(e.line(), Some(8));

    // A .parv syntax error: a parameter without `=`.
    std::fs::write(
        dir.join("t.parv"),
        "disksim_global G {\n  Init Seed 42\n}\n",
    )
    .expect("write");
    let e = disksim::import(dir.join("t.parv")).unwrap_err();
    assert!(e.file.ends_with("t.parv"), "{e}");
    assert_eq!(e.line(), Some(3));
    assert_eq!(e.field, "Init Seed 42");

    // A missing include.
    std::fs::write(dir.join("t.parv"), "source nothere.diskspecs\n").expect("write");
    let e = disksim::import(dir.join("t.parv")).unwrap_err();
    assert!(e.file.ends_with("nothere.diskspecs"), "{e}");
}
