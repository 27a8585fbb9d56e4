//! The ranges a kernel's process ids and CPU numbers lie in, checked wherever a trace the
//! kernel wrote carries them (blktrace, blkparse, tracefs text: `kernel-diff`'s recordings).
//!
//! A value past them was not written by a kernel: the file was edited, corrupted or made by
//! another tool. It is refused, naming the file, the line (or byte) and the field, instead of
//! being read as given: a pid of 2^32 - 1 would be replayed as the context the replay shares
//! among the processes past its 4096th (`jobs::replay::OTHERS_PID`), and every distinct CPU
//! number holds per-CPU state in the readers (tracefs's order check, the scheduler tags'
//! per-CPU hints), so CPU numbers without bound would hold state without bound.
//!
//! Block-level traces (MSR, SPC, Alibaba, Tencent, DiskSim, MQSim) carry no pids: their
//! "process" is a disk, volume or ASU number, valid as given; fio's iolog names files.

/// The largest process id a 64-bit kernel hands out: `PID_MAX_LIMIT` (include/linux/threads.h,
/// 4 x 1024 x 1024), the most `kernel.pid_max` can be set to (`pid_max_max`); `alloc_pid`
/// allocates below `pid_max`. Pid 0 is the idle task, which interrupt-context events (a
/// completion) show.
pub const PID_MAX_LIMIT: u32 = 1 << 22;

/// The most CPUs a kernel is built for: `NR_CPUS` at its largest, x86_64's `MAXSMP` (8192,
/// arch/x86/Kconfig `NR_CPUS_RANGE_END`). An event's CPU is `smp_processor_id()`, below
/// `nr_cpu_ids`, itself at most `NR_CPUS`.
pub const MAX_CPUS: u32 = 8192;

/// A pid as a trace carries it, or why no kernel wrote it.
pub fn check_pid(pid: u32) -> Result<u32, String> {
    if pid > PID_MAX_LIMIT {
        return Err(format!(
            "{pid} is past the largest process id a kernel hands out ({PID_MAX_LIMIT}, \
             PID_MAX_LIMIT)"
        ));
    }
    Ok(pid)
}

/// A CPU number as a trace carries it, or why no kernel wrote it.
pub fn check_cpu(cpu: u32) -> Result<u32, String> {
    if cpu >= MAX_CPUS {
        return Err(format!(
            "CPU {cpu} is past the most CPUs a kernel is built for ({MAX_CPUS}, NR_CPUS)"
        ));
    }
    Ok(cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_and_cpus_past_the_kernels_maximums_are_refused_at_their_bounds() {
        assert_eq!(check_pid(0), Ok(0));
        assert_eq!(check_pid(PID_MAX_LIMIT), Ok(PID_MAX_LIMIT));
        assert!(check_pid(PID_MAX_LIMIT + 1)
            .unwrap_err()
            .contains("PID_MAX_LIMIT"));
        assert!(check_pid(u32::MAX).is_err());
        assert_eq!(check_cpu(MAX_CPUS - 1), Ok(MAX_CPUS - 1));
        assert!(check_cpu(MAX_CPUS).unwrap_err().contains("NR_CPUS"));
        assert!(check_cpu(u32::MAX).is_err());
    }
}
