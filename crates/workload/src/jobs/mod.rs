//! The jobs: process models and replayers, one file each.

pub mod block_sizes;
pub mod cmdprio;
pub mod compile;
pub mod dependent_reader;
pub mod distribution;
pub mod fio;
pub mod interleaved;
pub mod replay;
pub mod startup;
pub mod stream_writer;
pub mod trace_replay;

pub use block_sizes::{BlockSizes, SizeMix};
pub use cmdprio::CmdPrio;
pub use compile::{CompileConfig, CompileJob};
pub use dependent_reader::{DependentReader, DependentReaderConfig};
pub use distribution::{RandomDistribution, Zone};
pub use fio::{FioJob, FioJobConfig, RandomGenerator, RwMode, RwSequencer, SyncIo};
pub use interleaved::{InterleavedReaders, InterleavedReadersConfig};
pub use replay::{ReplayJob, ReplayOptions, ReplayOutcome};
pub use startup::{StartupConfig, StartupJob, StartupOrder, StartupPlacement};
pub use stream_writer::{StreamWriter, StreamWriterConfig};
pub use trace_replay::{TraceReplay, TraceReplayConfig};
