//! The Linux native AIO backend (`io_setup`, `io_submit`, `io_getevents`): what fio's `libaio`
//! engine drives, and so what the kernel tree's `tools/cgroup/iocost_coef_gen.py` measures a
//! device with (`run_fio`: `--ioengine=libaio`, each I/O in its own `io_submit` at fio's default
//! `iodepth_batch` of 1).
//!
//! **Why a second engine.** On a device whose submission may block (a loop device over a
//! file: 80-97% of nonblocking attempts failed on this VM's 6.18 kernel, docs/iocost.md),
//! io_uring's first, nonblocking attempt fails and the request is handed to an io-wq worker
//! thread, which submits it blocking; several workers then submit at once. `io_submit` instead
//! submits in the calling thread, blocking it where the block layer blocks, one I/O after
//! another. The two measure the same loop device differently (fio's io_uring engine reached
//! 1.3-2.0x its libaio engine's 4 KiB IOPS there, docs/iocost.md), so `calibrate --iocost`,
//! whose figures are compared with that script's, submits through this backend.
//!
//! No maintained crate wraps the kernel's AIO calls (the ones published are unmaintained
//! bindgen bindings of 2018-2019, one GPL-3.0), so this module declares the two structures of
//! the kernel's ABI (`include/uapi/linux/aio_abi.h`) and makes the four system calls through
//! `libc::syscall`. The glibc-level `libaio` library adds nothing the executor uses.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use crate::backend::{Backend, IoCompletion, IoKind, IoRequest};
use crate::buf::AlignedBuf;

/// `IOCB_CMD_PREAD`.
const CMD_PREAD: u16 = 0;
/// `IOCB_CMD_PWRITE`.
const CMD_PWRITE: u16 = 1;
/// `IOCB_CMD_FDSYNC`.
const CMD_FDSYNC: u16 = 3;

/// The kernel's `struct iocb` (64 bytes on every architecture; the key and the per-I/O flags
/// swap places on big-endian machines).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Iocb {
    data: u64,
    #[cfg(target_endian = "little")]
    key: u32,
    rw_flags: i32,
    #[cfg(target_endian = "big")]
    key: u32,
    lio_opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const _: () = assert!(std::mem::size_of::<Iocb>() == 64);
const _: () = assert!(std::mem::size_of::<IoEvent>() == 32);

/// One I/O the kernel holds: its buffer and its control block, which must both stay put
/// until the completion is reaped.
struct Held {
    buf: AlignedBuf,
    _iocb: Box<Iocb>,
}

/// An AIO context on one open file or block device.
pub struct AioBackend {
    ctx: libc::c_ulong,
    file: File,
    size: u64,
    entries: u32,
    owned: HashMap<u64, Held>,
    events: Vec<IoEvent>,
    limits: crate::queue_limits::QueueLimits,
}

fn check(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl AioBackend {
    /// A context for `entries` I/Os at once over `file` (usable size `size` bytes), which
    /// should be opened with O_DIRECT: without it the kernel completes AIO synchronously.
    pub fn new(file: File, size: u64, entries: u32) -> io::Result<AioBackend> {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the context id into `ctx`, which lives across the call.
        check(unsafe {
            libc::syscall(
                libc::SYS_io_setup,
                libc::c_long::from(entries.max(1)),
                &mut ctx as *mut libc::c_ulong,
            )
        })?;
        let limits = crate::queue_limits::of(&file);
        Ok(AioBackend {
            ctx,
            file,
            size,
            entries: entries.max(1),
            owned: HashMap::with_capacity(entries as usize),
            events: vec![IoEvent::default(); entries.max(1) as usize],
            limits,
        })
    }

    /// Collect what has completed: at least `min` events, waiting at most `timeout` (`None`:
    /// no limit). An expired timeout or a signal is not an error.
    fn reap(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<IoCompletion>,
    ) -> io::Result<()> {
        let mut ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
        });
        let tsp = ts
            .as_mut()
            .map_or(std::ptr::null_mut(), |t| t as *mut libc::timespec);
        // SAFETY: `events` has room for `len` events; `tsp` is null or points at `ts`.
        let n = unsafe {
            libc::syscall(
                libc::SYS_io_getevents,
                self.ctx,
                min as libc::c_long,
                self.events.len() as libc::c_long,
                self.events.as_mut_ptr(),
                tsp,
            )
        };
        let n = match check(n) {
            Ok(n) => n as usize,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => 0,
            Err(e) => return Err(e),
        };
        for ev in &self.events[..n] {
            let Some(held) = self.owned.remove(&ev.data) else {
                continue;
            };
            let result = if ev.res < 0 {
                Err(io::Error::from_raw_os_error(-ev.res as i32))
            } else {
                Ok(ev.res as usize)
            };
            out.push(IoCompletion {
                token: ev.data,
                result,
                buf: held.buf,
            });
        }
        Ok(())
    }
}

impl Backend for AioBackend {
    fn size_bytes(&self) -> u64 {
        self.size
    }

    /// The context's entries, or on a block device its hardware queue's tags if fewer.
    fn capacity(&self) -> usize {
        let n = self.entries as usize;
        self.limits.depth.map_or(n, |d| n.min(d.max(1) as usize))
    }

    fn queue_limits(&self) -> crate::queue_limits::QueueLimits {
        self.limits
    }

    fn in_flight(&self) -> usize {
        self.owned.len()
    }

    /// Hands the I/O to the kernel at once, in its own `io_submit`, which may block the
    /// calling thread where the block layer blocks (as fio's libaio engine submits).
    fn submit(&mut self, mut io: IoRequest) -> io::Result<()> {
        if self.owned.contains_key(&io.token) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("token {} is already in flight", io.token),
            ));
        }
        if self.owned.len() >= self.entries as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "more than the {} I/Os the AIO context was set up for",
                    self.entries
                ),
            ));
        }
        let opcode = match io.kind {
            IoKind::Read => CMD_PREAD,
            IoKind::Write => CMD_PWRITE,
            IoKind::Flush => CMD_FDSYNC,
            // Native AIO has no discard (fio's libaio engine trims by BLKDISCARD itself).
            IoKind::Discard { .. } => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "native AIO has no discard: use the io_uring backend",
                ))
            }
        };
        let (buf, nbytes) = match io.kind {
            IoKind::Flush => (0, 0),
            _ => (io.buf.as_mut_ptr() as u64, io.buf.len() as u64),
        };
        let offset = i64::try_from(io.offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset past 2^63"))?;
        let mut iocb = Box::new(Iocb {
            data: io.token,
            lio_opcode: opcode,
            fildes: self.file.as_raw_fd() as u32,
            buf,
            nbytes,
            offset,
            // `aio_rw_flags`: pwritev2's RWF_* (RWF_DSYNC for an O_DSYNC write).
            rw_flags: io.rw_flags,
            ..Iocb::default()
        });
        let mut list = [&mut *iocb as *mut Iocb];
        // SAFETY: the control block and the buffer it points at are kept in `owned` until
        // their completion is reaped, and Drop waits for every outstanding completion.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_submit,
                self.ctx,
                1 as libc::c_long,
                list.as_mut_ptr(),
            )
        };
        match check(r)? {
            1 => {}
            n => {
                return Err(io::Error::other(format!(
                    "io_submit took {n} of 1 control blocks"
                )))
            }
        }
        self.owned.insert(
            io.token,
            Held {
                buf: io.buf,
                _iocb: iocb,
            },
        );
        Ok(())
    }

    /// One: `io_submit` may block (docs of [`Backend::submit_burst`]).
    fn submit_burst(&self) -> Option<usize> {
        Some(1)
    }

    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<IoCompletion>) -> io::Result<()> {
        let before = out.len();
        // What has already completed, without blocking.
        self.reap(0, Some(Duration::ZERO), out)?;
        if timeout == Some(Duration::ZERO) {
            return Ok(());
        }
        if out.len() == before && !self.owned.is_empty() {
            self.reap(1, timeout, out)?;
        } else if out.len() == before {
            if let Some(t) = timeout {
                std::thread::sleep(t);
            }
        }
        Ok(())
    }
}

impl Drop for AioBackend {
    fn drop(&mut self) {
        // The kernel may still write into buffers we own: wait for every completion first.
        let mut sink = Vec::new();
        while !self.owned.is_empty() {
            if self.reap(1, None, &mut sink).is_err() {
                // The context is unusable; leaking the buffers is the only safe choice.
                std::mem::forget(std::mem::take(&mut self.owned));
                break;
            }
            sink.clear();
        }
        // SAFETY: the context was set up in `new` and nothing of ours is in flight on it.
        unsafe {
            libc::syscall(libc::SYS_io_destroy, self.ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};

    fn buf_of(byte: u8, len: usize) -> AlignedBuf {
        let mut b = AlignedBuf::new(len);
        b.fill(byte);
        b
    }

    /// Writes land where their offsets say and reads bring them back, through the kernel's
    /// AIO on an ordinary file (buffered: the kernel completes those in `io_submit`, but the
    /// completions still come through `io_getevents`).
    #[test]
    fn writes_land_at_their_offsets_and_reads_return_them() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&vec![0u8; 64 << 10]).unwrap();
        let mut b = AioBackend::new(f.try_clone().unwrap(), 64 << 10, 8).unwrap();
        for (token, byte) in [(1u64, 0xaa), (2, 0xbb)] {
            b.submit(IoRequest {
                rw_flags: 0,
                token,
                kind: IoKind::Write,
                offset: (token - 1) * 4096 + 8192,
                buf: buf_of(byte, 4096),
            })
            .unwrap();
        }
        let mut done = Vec::new();
        while done.len() < 2 {
            b.wait(Some(Duration::from_secs(5)), &mut done).unwrap();
        }
        let mut tokens: Vec<u64> = done.iter().map(|c| c.token).collect();
        tokens.sort_unstable();
        assert_eq!(tokens, [1, 2]);
        assert!(done.iter().all(|c| matches!(c.result, Ok(4096))));
        let mut back = vec![0u8; 3 * 4096];
        f.seek(SeekFrom::Start(4096)).unwrap();
        f.read_exact(&mut back).unwrap();
        assert!(back[..4096].iter().all(|&x| x == 0));
        assert!(back[4096..8192].iter().all(|&x| x == 0xaa));
        assert!(back[8192..].iter().all(|&x| x == 0xbb));

        b.submit(IoRequest {
            rw_flags: 0,
            token: 3,
            kind: IoKind::Read,
            offset: 12288,
            buf: AlignedBuf::new(4096),
        })
        .unwrap();
        let mut done = Vec::new();
        while done.is_empty() {
            b.wait(Some(Duration::from_secs(5)), &mut done).unwrap();
        }
        assert_eq!(done[0].token, 3);
        assert!(done[0].buf.iter().all(|&x| x == 0xbb));
        assert_eq!(b.in_flight(), 0);
    }

    /// What the kernel refuses in `io_submit` itself (a write on a descriptor opened
    /// read-only: EBADF) fails `submit` and leaves nothing in flight; what it completes comes
    /// back through `wait` with the kernel's result (a read past the end of the file: 0 bytes).
    #[test]
    fn refusals_fail_submit_and_results_come_back_in_completions() {
        let path = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(path.path(), vec![0u8; 8192]).unwrap();
        let ro = File::open(path.path()).unwrap();
        let mut b = AioBackend::new(ro, 8192, 4).unwrap();
        let r = b.submit(IoRequest {
            rw_flags: 0,
            token: 7,
            kind: IoKind::Write,
            offset: 0,
            buf: buf_of(1, 4096),
        });
        // The kernel refuses a write on a read-only descriptor in io_submit itself.
        let e = r.unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
        assert_eq!(b.in_flight(), 0);
        b.submit(IoRequest {
            rw_flags: 0,
            token: 8,
            kind: IoKind::Read,
            offset: 1 << 20,
            buf: AlignedBuf::new(4096),
        })
        .unwrap();
        let mut done = Vec::new();
        while done.is_empty() {
            b.wait(Some(Duration::from_secs(5)), &mut done).unwrap();
        }
        assert_eq!(done[0].token, 8);
        assert!(matches!(done[0].result, Ok(0)));
    }

    /// A token still in flight is refused, as the io_uring backend refuses it.
    #[test]
    fn a_token_in_flight_twice_is_refused() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(1 << 20).unwrap();
        let mut b = AioBackend::new(f, 1 << 20, 4).unwrap();
        // The first is not reaped before the second comes with the same token.
        b.submit(IoRequest {
            rw_flags: 0,
            token: 1,
            kind: IoKind::Read,
            offset: 0,
            buf: AlignedBuf::new(4096),
        })
        .unwrap();
        let e = b
            .submit(IoRequest {
                rw_flags: 0,
                token: 1,
                kind: IoKind::Read,
                offset: 4096,
                buf: AlignedBuf::new(4096),
            })
            .unwrap_err();
        assert!(e.to_string().contains("already in flight"), "{e}");
    }
}
