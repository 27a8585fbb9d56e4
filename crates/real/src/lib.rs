//! # elevator-real: the io_uring executor (not yet implemented)

#![deny(missing_docs)]
