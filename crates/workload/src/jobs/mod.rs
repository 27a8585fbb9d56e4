//! The jobs: process models and replayers, one file each.

pub mod fio;

pub use fio::{FioJob, FioJobConfig, RwMode};
