//! Running a system tool (`losetup`, `mount`, `findmnt`, `fio --version` ...) for its output.

use std::process::{Command, Stdio};

/// Run `cmd` (standard input empty) to its end: its standard output, trimmed, if it exits 0;
/// otherwise an error naming the program, its arguments, its exit status and its standard
/// error (trimmed), or why it could not be started.
pub fn output_of(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{:?} {:?} failed ({}): {}",
            cmd.get_program(),
            cmd.get_args().collect::<Vec<_>>(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_gives_its_trimmed_output_or_an_error_naming_it_and_its_stderr() {
        let ok = output_of(Command::new("sh").args(["-c", "echo ' out '"]));
        assert_eq!(ok.as_deref(), Ok("out"));
        let failed =
            output_of(Command::new("sh").args(["-c", "echo oops >&2; exit 3"])).unwrap_err();
        assert!(failed.starts_with("\"sh\" [\"-c\""), "{failed}");
        assert!(
            failed.ends_with("failed (exit status: 3): oops"),
            "{failed}"
        );
        let absent = output_of(&mut Command::new("/nonexistent/tool")).unwrap_err();
        assert!(
            absent.starts_with("run \"/nonexistent/tool\": "),
            "{absent}"
        );
    }
}
