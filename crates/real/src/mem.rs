//! An in-memory backend with fault injection, for tests that need no file, no root and no
//! luck: the n-th I/O can come back short or fail with an errno.

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use crate::backend::{Backend, IoCompletion, IoKind, IoRequest};

/// A fault to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The I/O transfers only this many bytes (a short read or write).
    Short(usize),
    /// The I/O fails with this errno (e.g. `libc::EIO`).
    Errno(i32),
}

/// A "device" held in memory. I/O completes in submission order at the next
/// [`wait`](Backend::wait); a wait with nothing in flight sleeps for its timeout.
#[derive(Debug)]
pub struct MemBackend {
    data: Vec<u8>,
    capacity: usize,
    queue: VecDeque<IoRequest>,
    faults: Vec<(u64, Fault)>,
    seen: u64,
}

impl MemBackend {
    /// A zeroed device of `size` bytes holding up to `capacity` I/Os at once.
    pub fn new(size: usize, capacity: usize) -> MemBackend {
        MemBackend {
            data: vec![0; size],
            capacity,
            queue: VecDeque::new(),
            faults: Vec::new(),
            seen: 0,
        }
    }

    /// Make the `nth` I/O submitted (counting from 0, flushes included) suffer `fault`.
    pub fn inject(mut self, nth: u64, fault: Fault) -> MemBackend {
        self.faults.push((nth, fault));
        self
    }

    /// The device's contents.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    fn perform(&mut self, mut io: IoRequest, fault: Option<Fault>) -> IoCompletion {
        let len = io.buf.len();
        let start = io.offset as usize;
        let result = match fault {
            Some(Fault::Errno(e)) => Err(io::Error::from_raw_os_error(e)),
            _ if matches!(io.kind, IoKind::Discard { len } if start as u64 + len > self.data.len() as u64) => {
                Err(io::Error::from_raw_os_error(libc::EINVAL))
            }
            _ if matches!(io.kind, IoKind::Discard { .. }) => {
                // A discard that zeroes, as a punched hole reads back.
                if let IoKind::Discard { len } = io.kind {
                    self.data[start..start + len as usize].fill(0);
                }
                Ok(0)
            }
            _ if io.kind != IoKind::Flush && start + len > self.data.len() => {
                Err(io::Error::from_raw_os_error(libc::EINVAL))
            }
            _ => {
                let n = match fault {
                    Some(Fault::Short(n)) => n.min(len),
                    _ => len,
                };
                match io.kind {
                    IoKind::Read => io.buf[..n].copy_from_slice(&self.data[start..start + n]),
                    IoKind::Write => self.data[start..start + n].copy_from_slice(&io.buf[..n]),
                    IoKind::Flush | IoKind::Discard { .. } => {}
                }
                Ok(if io.kind == IoKind::Flush { 0 } else { n })
            }
        };
        IoCompletion {
            token: io.token,
            result,
            buf: io.buf,
        }
    }
}

impl Backend for MemBackend {
    fn size_bytes(&self) -> u64 {
        self.data.len() as u64
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn in_flight(&self) -> usize {
        self.queue.len()
    }

    fn submit(&mut self, io: IoRequest) -> io::Result<()> {
        if self.queue.len() >= self.capacity {
            return Err(io::Error::new(io::ErrorKind::WouldBlock, "backend full"));
        }
        self.queue.push_back(io);
        Ok(())
    }

    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<IoCompletion>) -> io::Result<()> {
        if self.queue.is_empty() {
            std::thread::sleep(timeout.unwrap_or(Duration::from_millis(10)));
            return Ok(());
        }
        while let Some(io) = self.queue.pop_front() {
            let n = self.seen;
            self.seen += 1;
            let fault = self.faults.iter().find(|(k, _)| *k == n).map(|(_, f)| *f);
            out.push(self.perform(io, fault));
        }
        Ok(())
    }
}
