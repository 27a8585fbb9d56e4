//! A DiskSim-class rotational drive model.
//!
//! - [`spec`]: the TOML drive description ([`DriveSpec`]), its loader and checks, the built-in
//!   drives.
//! - [`geometry`]: zones, skews, spares and slips; LBN to (cylinder, head, sector, angle).
//! - [`seek`]: extracted, Ruemmler-Wilkes and first-ten seek curves.
//! - [`cache`]: buffer segments.
//! - [`mechanics`]: [`Hdd`], the [`Device`](crate::Device) that puts them together.
//!
//! The model follows DiskSim 4.0 (`diskmodel/mech_g1*.c`, `layout_g1.c`,
//! `src/disksim_diskctlr.c`, `disksim_diskcache.c`); docs/disk-model.md lists what it leaves
//! out and the validation figures.

pub mod cache;
pub mod geometry;
pub mod mechanics;
pub mod seek;
pub mod spec;

pub use mechanics::Hdd;
pub use spec::DriveSpec;
