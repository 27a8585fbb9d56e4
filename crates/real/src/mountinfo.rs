//! The one reader of `/proc/PID/mountinfo` (proc_pid_mountinfo(5)) lines, for every place that
//! looks a mount up: a device's mounts in every namespace ([`holders`](crate::holders)), an
//! overlay's upper layer ([`fidelity`](crate::fidelity)), a dead run's tmpfs
//! ([`leftovers`](crate::leftovers)), and in `elevator-mount` the device and type of a FUSE
//! mount and the elevator mounts a backing directory lies under.

use std::ffi::OsString;
use std::path::Path;

/// A mount, as one line of the table describes it.
#[derive(Debug, PartialEq, Eq)]
pub struct Mount<'a> {
    /// The device's `MAJOR:MINOR` (field 3).
    pub devno: &'a str,
    /// The mount point, its octal escapes decoded (field 5).
    pub point: OsString,
    /// The filesystem type (first field after ` - `).
    pub fstype: &'a str,
    /// The mount source (second field after ` - `).
    pub source: &'a str,
    /// The superblock's options (third field after ` - `), still escaped.
    pub super_options: &'a str,
}

/// The mount `line` describes, or `None` for a line not of the table's shape.
pub fn parse(line: &str) -> Option<Mount<'_>> {
    let (left, right) = line.split_once(" - ")?;
    let mut l = left.split(' ');
    let devno = l.nth(2)?;
    let point = unescape(l.nth(1)?);
    let mut r = right.split(' ');
    Some(Mount {
        devno,
        point,
        fstype: r.next()?,
        source: r.next()?,
        super_options: r.next().unwrap_or(""),
    })
}

/// The mount mounted last on `point` in the mount table `table` (it hides those mounted on
/// `point` before it), or `None` where nothing is mounted there. `point` is compared with each
/// line's decoded mount point, byte for byte.
pub fn last_on<'a>(table: &'a str, point: &Path) -> Option<Mount<'a>> {
    table
        .lines()
        .rev()
        .filter_map(parse)
        .find(|m| m.point == point.as_os_str())
}

/// A mount table field with its octal escapes (`\040` for a space, `\054` for a comma in an
/// option) decoded.
pub fn unescape(s: &str) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |v, c| v.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An upper layer's path as mountinfo prints it: spaces, commas and backslashes in
    /// octal; a backslash not followed by three octal digits stays as it is.
    #[test]
    fn escapes_are_decoded() {
        assert_eq!(
            unescape(r"/a\040b\054c\134d\9"),
            OsString::from("/a b,c\\d\\9")
        );
    }

    #[test]
    fn a_line_gives_its_device_point_type_source_and_options() {
        let line = "36 35 0:44 / /mnt/a\\040b rw,relatime shared:1 - overlay ovl \
                    rw,lowerdir=/l,upperdir=/u,workdir=/w";
        let m = parse(line).unwrap();
        assert_eq!(m.devno, "0:44");
        assert_eq!(m.point, OsString::from("/mnt/a b"));
        assert_eq!((m.fstype, m.source), ("overlay", "ovl"));
        assert_eq!(m.super_options, "rw,lowerdir=/l,upperdir=/u,workdir=/w");
        assert_eq!(parse("no separator here"), None);
    }

    /// Of two mounts on one point the later hides the earlier; the point is matched decoded.
    #[test]
    fn the_last_mount_on_a_point_is_found() {
        let table = "22 1 253:0 / / rw - ext4 /dev/vda rw\n\
                     90 22 0:41 / /t/a\\040b rw - tmpfs one rw\n\
                     91 90 0:42 / /t/a\\040b rw - tmpfs two rw\n";
        let on = |p: &str| last_on(table, Path::new(p)).map(|m| m.source);
        assert_eq!(on("/t/a b"), Some("two"));
        assert_eq!(on("/"), Some("/dev/vda"));
        assert_eq!(on("/t/a\\040b"), None);
        assert_eq!(on("/t"), None);
    }
}
