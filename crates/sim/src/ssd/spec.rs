//! SSD specifications: the TOML format, its loader and its checks.
//!
//! A spec is data only; [`Ssd::new`](super::Ssd::new) turns it into timelines and an FTL.
//! Times are in microseconds (`_us`), bandwidths in MB/s (10^6 bytes per second, `_mb_s`),
//! sizes in bytes. The parameters follow MQSim's `ssdconfig.xml` (CMU-SAFARI/MQSim,
//! `src/exec/Device_Parameter_Set.cpp`, `Flash_Parameter_Set.cpp`) under plain names;
//! docs/ssd-model.md documents each field and what is fitted.

use serde::{Deserialize, Serialize};
use std::path::Path;

use elevator_workload::InputError;

use crate::spec_file::{fault, placed, toml_error, BuiltinSpec};

/// Longest time any one field may give, us (an hour).
pub const MAX_TIME_US: f64 = 3_600_000_000.0;
/// Most flash planes accepted (channels x chips x dies x planes).
pub const MAX_PLANES: u64 = 1 << 16;
/// Most physical mapping units accepted (addresses are 32-bit).
pub const MAX_UNITS: u64 = u32::MAX as u64 - 1;

/// A complete SSD description. `kind = "ssd"` tells it from a rotational drive spec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdSpec {
    /// Always `"ssd"`.
    pub kind: SsdKind,
    /// Short name used on the command line (`samsung-980pro-1tb`).
    pub name: String,
    /// Free text: model, source of the figures, what is fitted.
    #[serde(default)]
    pub description: String,
    /// The state the drive starts in.
    #[serde(default)]
    pub precondition: Precondition,
    /// The NVMe host interface.
    pub host: Host,
    /// The flash back end.
    pub flash: Flash,
    /// The flash translation layer.
    #[serde(default)]
    pub ftl: Ftl,
    /// The DRAM write buffer.
    pub write_buffer: WriteBuffer,
    /// Garbage collection.
    #[serde(default)]
    pub gc: Gc,
    /// Firmware housekeeping stalls triggered by host writes (off by default).
    #[serde(default, skip_serializing_if = "Housekeeping::is_off")]
    pub housekeeping: Housekeeping,
}

/// Firmware housekeeping stalls (`[housekeeping]`): ours, not MQSim's. The drive takes host
/// writes into its buffer and drains them in the background at `drain_mb_s`; host bytes
/// beyond that drain are counted, and each `every_bytes` of them costs a drive-wide stall of
/// `stall_us` during which no command is served: a command arriving in a stall starts at its
/// end, and a completion falling in it is posted at its end (the flash work already placed goes
/// on). Only host writes count, so a read-only run never stalls. Off while `every_bytes` is 0
/// (the default). docs/ssd-model.md, "Issue 28, the drive's write tail", has the evidence and
/// the fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Housekeeping {
    /// Host bytes written beyond the background drain between two stalls; 0: no stalls.
    pub every_bytes: u64,
    /// How long one stall holds the drive, us.
    pub stall_us: f64,
    /// The rate the drive drains host writes at in the background without stalling, MB/s;
    /// 0: every byte written counts.
    pub drain_mb_s: f64,
}

impl Housekeeping {
    /// Whether stalls are off (`every_bytes` is 0).
    pub fn is_off(&self) -> bool {
        self.every_bytes == 0
    }
}

/// The only kind of this spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SsdKind {
    /// A flash SSD.
    Ssd,
}

/// The state the drive starts a simulation in. Set directly (mapping and valid counts), never
/// by simulating writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precondition {
    /// Fresh from a secure erase: nothing mapped, every block free. Reads of unwritten data
    /// touch no flash.
    None,
    /// Every logical page written once, in order: blocks full and fully valid, the
    /// over-provisioned blocks free.
    Sequential,
    /// Steady state after random overwrites: every logical page mapped, the blocks' valid
    /// counts falling linearly from full to what greedy GC leaves, and just enough free blocks
    /// that the next writes start GC at `gc.threshold`.
    #[default]
    Steady,
}

/// The host interface (MQSim's `HostInterface_Type = NVME`, `IO_Queue_Depth`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// NVMe I/O submission queues; a request goes to queue `context id mod queues` (Linux maps
    /// each CPU, hence each process pinned to one, to its own queue pair).
    pub queues: u32,
    /// Commands the device holds at once ([`Device::depth`](crate::Device::depth)).
    pub queue_depth: u32,
    /// Time each command holds its submission queue, us: fetch, doorbell, completion entry
    /// and interrupt for one queue, served one command at a time. It caps one queue at
    /// `1 / command_us` commands per second.
    pub command_us: f64,
    /// Time every command holds the controller's front end, us, one command at a time across
    /// all queues (0: no shared limit).
    #[serde(default)]
    pub controller_command_us: f64,
    /// Fixed firmware latency added to every command, us (pipelined: not a shared resource).
    pub firmware_us: f64,
    /// Host link (PCIe) payload bandwidth, MB/s, shared by all data transfers.
    pub link_mb_s: f64,
    /// Command slots of the controller's in-order front end (0: no such stage). Commands are
    /// handed to the back end in the order they were fetched, and a write is handed over only
    /// once its data is in the write buffer, so a read waits for the writes fetched before it
    /// that wait for buffer room: at most `front_end_slots - 1` of them, as a queue with a
    /// command waiting gets the next slot freed (round robin). See docs/ssd-model.md.
    #[serde(default)]
    pub front_end_slots: u32,
    /// Commands the in-order front end serves at once (default 1). A write is served until
    /// its data is in the write buffer; a read is handed over as soon as fewer than this many
    /// writes fetched before it are still being served, so with `front_end_servers = S` a read
    /// waits for all but the last `S - 1` of the writes ahead of it, and not at all beside
    /// fewer than `S` (a virtual disk that serves a read beside one write at once). See
    /// docs/ssd-model.md.
    #[serde(default = "one")]
    pub front_end_servers: u32,
    /// Which writes a command in the in-order front end waits for: `drive` (default) those
    /// fetched before it from every submission queue (one in-order stage for the whole
    /// controller), or `queue` (the built-in 980 PRO specs) only those of its own submission
    /// queue (NVMe fetches each queue in order and arbitrates between queues round robin, and
    /// nothing in NVMe orders one queue's commands behind another's); across queues it then
    /// waits only for a free slot. See docs/ssd-model.md.
    #[serde(default)]
    pub front_end_scope: FrontEndScope,
}

/// Which writes a command in the in-order front end waits for (`host.front_end_scope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrontEndScope {
    /// Those fetched before it from any submission queue.
    #[default]
    Drive,
    /// Those of its own submission queue only (and a free slot).
    Queue,
}

/// The flash back end (MQSim's `Flash_Channel_Count` ... `Flash_Parameter_Set`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flash {
    /// Independent channels.
    pub channels: u32,
    /// Chips (ways) sharing each channel.
    pub chips_per_channel: u32,
    /// Dies per chip.
    pub dies_per_chip: u32,
    /// Planes per die.
    pub planes_per_die: u32,
    /// Erase blocks per plane.
    pub blocks_per_plane: u32,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Bytes per flash page (a multiple of `ftl.unit_bytes`).
    pub page_bytes: u32,
    /// Whether a small read (see `small_read_bytes`) holds only its own plane (asynchronous
    /// independent plane reads); otherwise it holds the whole die.
    #[serde(default)]
    pub independent_plane_reads: bool,
    /// Whether a full-page read holds only its own plane (reads on a die's planes overlap, as
    /// MQSim's multi-plane reads do); otherwise it holds the whole die. Programs and erases
    /// always hold only their plane (multi-plane program and erase).
    #[serde(default)]
    pub multi_plane_reads: bool,
    /// Whether a program or erase under way on any plane of a die holds back a host read of
    /// the die's other planes (default false: only the work of the planes the read holds).
    /// Programs and erases here stand for multi-plane commands (the die's planes program and
    /// erase together), and a NAND die is busy for the whole of one: ONFI's LUN reports busy
    /// until the array operation ends, independent plane reads overlap reads only, and MQSim
    /// starts a read only on an idle chip (`TSU_OutOfOrder`, `ChipStatus::IDLE`). With
    /// `suspend`, the read suspends each such operation as it would its own plane's.
    #[serde(default)]
    pub die_busy_programs: bool,
    /// Page types by read time (bits per cell: 1 SLC, 2 MLC, 3 TLC, 4 QLC): page `n` of a
    /// block is of type `n mod page_types` (MQSim's LSB/CSB/MSB pages).
    #[serde(default = "one")]
    pub page_types: u32,
    /// Extra array read time per page type above the first, us: a type-`k` page reads in
    /// `read_us + k * read_step_us` (a small read of each unit in
    /// `small_read_us + k * read_step_us`).
    #[serde(default)]
    pub read_step_us: f64,
    /// Channel transfer rate, MB/s.
    pub channel_mb_s: f64,
    /// Array read of a page (tR), us.
    pub read_us: f64,
    /// Array read of one mapping unit (`ftl.unit_bytes`) of a page (a "snap" or partial-page
    /// read), us; 0: every read takes `read_us`.
    #[serde(default)]
    pub small_read_us: f64,
    /// Largest read of one page done as small reads, bytes: a read of `n` units up to this
    /// size is `n` small reads back to back; a larger one is one full-page read.
    #[serde(default)]
    pub small_read_bytes: u32,
    /// Program of one program operation (tPROG), us: of one page, or with `program_pages` of
    /// that many pages at once.
    pub program_us: f64,
    /// Pages one program operation writes (default 1): 3 for a TLC drive that programs a
    /// wordline's three pages in one shot (one-shot programming), the host and GC frontiers
    /// then programming once they have filled all three. A multiple of it must make
    /// `pages_per_block`.
    #[serde(default = "one")]
    pub program_pages: u32,
    /// Block erase (tBERS), us.
    pub erase_us: f64,
    /// Which operations a host read may suspend (MQSim's `CMD_Suspension_Support`; default
    /// `erase`, as MQSim's).
    #[serde(default)]
    pub suspend: Suspend,
    /// Time a read waits for a program to suspend, us (MQSim's `Suspend_Program_Time`,
    /// default 100). A program with less than this left is waited for instead.
    #[serde(default = "suspend_program_us")]
    pub suspend_program_us: f64,
    /// Time a read waits for an erase to suspend, us (MQSim's `Suspend_Erase_Time`, default
    /// 700). An erase with less than this left is waited for instead.
    #[serde(default = "suspend_erase_us")]
    pub suspend_erase_us: f64,
    /// Dies each plane of this spec stands for (default 1). With `serial_dies` or
    /// `serial_planes` above 1 each plane is a chip whose `serial_dies x serial_planes`
    /// planes execute one command at a time (MQSim's TSU issues a command only to an idle
    /// chip, `TSU_Base::issue_command_to_chip`), and host programs of two of its planes of the
    /// same die at the same page of their blocks may go as one multi-plane program: see
    /// `serial_planes`. Needs `ftl.static_allocation`.
    #[serde(default = "one")]
    pub serial_dies: u32,
    /// Planes per die each plane of this spec stands for (default 1). A unit's die and plane
    /// within its chip follow MQSim's CWDP allocation (channel, chip, die, then plane from the
    /// LPN), and each of those planes fills its blocks page by page from page 0 (a fresh
    /// drive, as MQSim's without preconditioning): a page is taken by each host program and
    /// by the first read of a unit not yet written (MQSim's `online_create_entry_for_reads`
    /// gives an unwritten LPA a page of its plane). A host program that is ready while a host
    /// program of another plane of the same die, at the same page, is placed on the chip and
    /// not yet started joins it as one multi-plane program (MQSim's TSU takes, for the die of
    /// the command it issues, one ready transaction per plane at the same page): it completes
    /// with it and takes no chip time of its own (its channel transfer is not charged: 25 us
    /// of 775 on MQSim's default drive).
    #[serde(default = "one")]
    pub serial_planes: u32,
}

/// The flash operations a host read may suspend to reach its plane (MQSim's
/// `CMD_Suspension_Support`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Suspend {
    /// None: a read waits for the program or erase under way on its plane.
    None,
    /// Erases (MQSim's default).
    #[default]
    Erase,
    /// Programs.
    Program,
    /// Programs and erases.
    ProgramErase,
}

impl Suspend {
    /// Whether a read may suspend a program.
    pub fn programs(self) -> bool {
        matches!(self, Suspend::Program | Suspend::ProgramErase)
    }

    /// Whether a read may suspend an erase.
    pub fn erases(self) -> bool {
        matches!(self, Suspend::Erase | Suspend::ProgramErase)
    }
}

fn one() -> u32 {
    1
}

fn suspend_program_us() -> f64 {
    100.0
}

fn suspend_erase_us() -> f64 {
    700.0
}

/// The page-level FTL (MQSim's `Address_Mapping = PAGE_LEVEL`, `CMT_Capacity`,
/// `Overprovisioning_Ratio`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ftl {
    /// Mapping unit (logical page), bytes.
    pub unit_bytes: u32,
    /// Fraction of the physical space hidden from the host.
    pub over_provisioning: f64,
    /// Whether a written unit goes to the plane its LPN's page group maps to (`group mod
    /// planes`, MQSim's static CWDP plane allocation); otherwise host pages go round the
    /// planes in turn (dynamic allocation).
    pub static_allocation: bool,
    /// Mapping entries the cached mapping table (CMT) holds; 0: the whole table is in DRAM.
    /// A miss reads the translation page from flash before the data.
    pub cmt_entries: u32,
}

impl Default for Ftl {
    fn default() -> Self {
        Ftl {
            unit_bytes: 4096,
            over_provisioning: 0.07,
            static_allocation: false,
            cmt_entries: 0,
        }
    }
}

/// The DRAM write buffer (MQSim's `Data_Cache_Capacity`, write caching only).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteBuffer {
    /// Capacity, bytes (at least two flash pages). A write completes once its data is in the
    /// buffer (unless `acknowledge` says otherwise); it waits for room when the buffer is full
    /// of data not yet programmed.
    pub bytes: u64,
    /// DRAM bandwidth for data going into the buffer, MB/s, one transfer at a time (MQSim's
    /// single DRAM channel); 0: instant.
    #[serde(default)]
    pub mb_s: f64,
    /// MQSim's hot/cold filter (`Data_Cache_Manager_Flash_Advanced::write_to_destage_buffer`,
    /// its `bloom_filter`), us; 0 (default): off. A mapping unit written again while the
    /// filter holds it is hot: its data stays in DRAM and is not written back (it takes no
    /// room in the buffer and programs nothing; reads of it are served from DRAM until a cold
    /// write sends it to flash). The filter starts empty and is emptied by the first write
    /// after each period of this length (MQSim's `bloom_filter_reset_step`, 1 s), counted
    /// from the write that last emptied it. MQSim's DRAM cache never fills in our use, so the
    /// hot data is never evicted here (a deviation for runs that rewrite more than the cache).
    #[serde(default)]
    pub hot_filter_us: f64,
    /// When a host write completes: `admitted` (default), once its data is in the buffer
    /// (MQSim's write cache), or `programmed`, once the program holding its data ends
    /// (write-through, MQSim's `Caching_Mode::TURNED_OFF` path, where a write finishes with
    /// its flash transactions). With `programmed` the writes in flight are the host's, so the
    /// drive's write rate grows with the writes outstanding up to what the planes and GC
    /// allow.
    #[serde(default)]
    pub acknowledge: WriteAck,
    /// With `acknowledge = "programmed"`: the longest a program unit holding writes that wait
    /// for it stays open, us (default 1000); then it is programmed with what it holds, the
    /// rest of its slots left empty (padding). Not a measured figure: it only bounds the wait
    /// of a writer too shallow to fill a program unit, and is counted
    /// ([`crate::ssd::SsdStats::padded_programs`]).
    #[serde(default = "default_gather_us")]
    pub gather_us: f64,
}

fn default_gather_us() -> f64 {
    1000.0
}

/// When a host write completes (`write_buffer.acknowledge`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteAck {
    /// Once its data is admitted to the write buffer (write-back).
    #[default]
    Admitted,
    /// Once the program holding its data ends (write-through).
    Programmed,
}

/// Garbage collection (MQSim's `GC_Exec_Threshold`, `Preemptible_GC_Enabled`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gc {
    /// GC runs on a plane when its free blocks fall below this fraction of its blocks.
    pub threshold: f64,
    /// Whether host reads preempt GC (suspend its reads, programs and erases) on a plane.
    pub preemptible: bool,
    /// When GC that is not preemptible is urgent (host reads wait for all of it): `always`
    /// (default), or `behind`: only the work placed for a host write that waited for buffer
    /// room, i.e. while the flash is behind the host (MQSim's `GC_is_in_urgent_mode`: urgent
    /// only below the hard threshold, which a plane reaches when GC cannot keep up), or
    /// `free-blocks`: MQSim's own rule, from the free blocks of the plane's die
    /// ([`Gc::hard_threshold`]). Ignored with `preemptible`.
    pub urgent: GcUrgency,
    /// With `urgent = "free-blocks"`: GC is urgent while a plane of the die has fewer erased
    /// free blocks than this fraction of its blocks (MQSim's `GC_Hard_Threshold`, default
    /// 0.005; at least 1 block).
    pub hard_threshold: f64,
    /// When a plane does the work of its victim.
    pub schedule: GcSchedule,
}

/// When GC that is not preemptible is urgent (`gc.urgent`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcUrgency {
    /// All of it, whatever the host does.
    #[default]
    Always,
    /// Only the work placed for a host write that waited for room in the write buffer (the
    /// programs and GC behind the host's writes); the rest yields to host reads as
    /// preemptible GC does.
    Behind,
    /// MQSim's `GC_is_in_urgent_mode`: urgent while a plane of the die has fewer free blocks
    /// erased by now than `gc.hard_threshold` of its blocks. Below that level GC yields to the
    /// host: its reads, programs and erases wait until the plane has no host work queued (MQSim's
    /// TSU serves user transactions first), so under a busy host the free pool runs down, and a
    /// host program whose block's erase has not run waits for the plane's GC
    /// (`Stop_servicing_writes`).
    FreeBlocks,
}

impl Gc {
    /// The free blocks per plane below which GC runs: `threshold` of the plane's
    /// `blocks_per_plane`, at least 2.
    pub fn reserve_blocks(&self, blocks_per_plane: u32) -> u32 {
        ((f64::from(blocks_per_plane) * self.threshold).ceil() as u32).max(2)
    }

    /// The erased free blocks per plane below which GC is urgent with `urgent =
    /// "free-blocks"`: `hard_threshold` of the plane's `blocks_per_plane`, rounded down, at
    /// least 1 (MQSim's `block_pool_gc_hard_threshold`).
    pub fn hard_reserve_blocks(&self, blocks_per_plane: u32) -> u32 {
        ((f64::from(blocks_per_plane) * self.hard_threshold).floor() as u32).max(1)
    }
}

impl Default for Gc {
    fn default() -> Self {
        Gc {
            threshold: 0.05,
            preemptible: false,
            urgent: GcUrgency::Always,
            hard_threshold: 0.005,
            schedule: GcSchedule::InStep,
        }
    }
}

/// When a plane collecting a victim does the victim's work (crates/sim/src/ssd/gc.rs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcSchedule {
    /// In step with the host writes to the plane: each host page programmed there moves the
    /// share of the victim that keeps the plane's free blocks level (no write stalls).
    #[default]
    InStep,
    /// The whole victim at once when the plane falls below the threshold, as MQSim queues all
    /// of a victim's transactions: the plane's next host programs wait behind it.
    WholeVictim,
}

const BUILTINS: &[(&str, &str)] = &[
    (
        "samsung-980pro-1tb",
        include_str!("../../drives/samsung-980pro-1tb.toml"),
    ),
    (
        "samsung-980pro-1tb-fig11c",
        include_str!("../../drives/samsung-980pro-1tb-fig11c.toml"),
    ),
];

impl BuiltinSpec for SsdSpec {
    const WHAT: &'static str = "SSD";
    const FILES: &'static [(&'static str, &'static str)] = BUILTINS;
    fn parse(text: &str, path: &Path) -> Result<SsdSpec, InputError> {
        SsdSpec::parse(text, path)
    }
}

impl SsdSpec {
    /// Names of the built-in SSDs.
    pub fn builtin_names() -> Vec<&'static str> {
        <SsdSpec as BuiltinSpec>::builtin_names()
    }

    /// A built-in SSD by name (case-insensitive).
    pub fn builtin(name: &str) -> Option<SsdSpec> {
        <SsdSpec as BuiltinSpec>::builtin(name)
    }

    /// Reads and checks a TOML SSD spec.
    pub fn load(path: impl AsRef<Path>) -> Result<SsdSpec, InputError> {
        <SsdSpec as BuiltinSpec>::load(path.as_ref())
    }

    /// Parses and checks TOML text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<SsdSpec, InputError> {
        let spec: SsdSpec = toml::from_str(text).map_err(|e| toml_error(&e, text, path))?;
        spec.validate().map_err(|e| placed(e, text, path))?;
        Ok(spec)
    }

    /// Writes the spec as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Flash planes in the drive.
    pub fn planes(&self) -> u64 {
        let f = &self.flash;
        u64::from(f.channels)
            * u64::from(f.chips_per_channel)
            * u64::from(f.dies_per_chip)
            * u64::from(f.planes_per_die)
    }

    /// Mapping units per flash page.
    pub fn units_per_page(&self) -> u32 {
        self.flash.page_bytes / self.ftl.unit_bytes.max(1)
    }

    /// Physical mapping units (every page of every block).
    pub fn physical_units(&self) -> u64 {
        self.planes()
            * u64::from(self.flash.blocks_per_plane)
            * u64::from(self.flash.pages_per_block)
            * u64::from(self.units_per_page())
    }

    /// Logical mapping units the host sees: the physical ones less the over-provisioning.
    pub fn logical_units(&self) -> u64 {
        (self.physical_units() as f64 * (1.0 - self.ftl.over_provisioning)).floor() as u64
    }

    /// Capacity the host sees, in 512-byte sectors.
    pub fn capacity_sectors(&self) -> u64 {
        self.logical_units() * u64::from(self.ftl.unit_bytes / 512)
    }

    /// Checks every field and the rules between them; the error names the field path
    /// (`flash.read_us`) and the SSD (`SSD NAME`), not yet its file ([`SsdSpec::parse`] places
    /// it there).
    pub fn validate(&self) -> Result<(), InputError> {
        let bad = |field: &str, message: String| Err(fault("SSD", &self.name, field, message));
        let h = &self.host;
        let f = &self.flash;
        let times = [
            ("host.command_us", h.command_us),
            ("host.controller_command_us", h.controller_command_us),
            ("host.firmware_us", h.firmware_us),
            ("flash.read_us", f.read_us),
            ("flash.small_read_us", f.small_read_us),
            ("flash.read_step_us", f.read_step_us),
            ("flash.program_us", f.program_us),
            ("flash.erase_us", f.erase_us),
            ("flash.suspend_program_us", f.suspend_program_us),
            ("flash.suspend_erase_us", f.suspend_erase_us),
            (
                "write_buffer.hot_filter_us",
                self.write_buffer.hot_filter_us,
            ),
            ("write_buffer.gather_us", self.write_buffer.gather_us),
            ("housekeeping.stall_us", self.housekeeping.stall_us),
        ];
        for (field, us) in times {
            if !(us.is_finite() && (0.0..=MAX_TIME_US).contains(&us)) {
                return bad(
                    field,
                    format!("must be a time of 0..={MAX_TIME_US} us, got {us}"),
                );
            }
        }
        for (field, n) in [
            ("flash.serial_dies", f.serial_dies),
            ("flash.serial_planes", f.serial_planes),
        ] {
            if !(1..=64).contains(&n) {
                return bad(field, format!("must be 1..=64, got {n}"));
            }
        }
        if f.serial_dies * f.serial_planes > 1 && !self.ftl.static_allocation {
            return bad(
                "flash.serial_planes",
                "planes within a chip (serial_dies or serial_planes above 1) need \
                 ftl.static_allocation = true: a unit's plane comes from its LPN"
                    .into(),
            );
        }
        let hk = &self.housekeeping;
        if !hk.is_off() && hk.stall_us == 0.0 {
            return bad(
                "housekeeping.stall_us",
                "must be > 0 when housekeeping.every_bytes is given".into(),
            );
        }
        if !(hk.drain_mb_s.is_finite() && (0.0..=1e9).contains(&hk.drain_mb_s)) {
            return bad(
                "housekeeping.drain_mb_s",
                format!("must be a bandwidth of 0..=1e9 MB/s, got {}", hk.drain_mb_s),
            );
        }
        let wb = self.write_buffer.mb_s;
        if !(wb.is_finite() && (wb == 0.0 || (0.001..=1e9).contains(&wb))) {
            return bad(
                "write_buffer.mb_s",
                format!("must be 0 or a bandwidth of 0.001..=1e9 MB/s, got {wb}"),
            );
        }
        for (field, rate) in [
            ("host.link_mb_s", h.link_mb_s),
            ("flash.channel_mb_s", f.channel_mb_s),
        ] {
            if !(rate.is_finite() && (0.001..=1e9).contains(&rate)) {
                return bad(
                    field,
                    format!("must be a bandwidth of 0.001..=1e9 MB/s, got {rate}"),
                );
            }
        }
        for (field, n) in [
            ("host.queues", h.queues),
            ("host.queue_depth", h.queue_depth),
            ("flash.channels", f.channels),
            ("flash.chips_per_channel", f.chips_per_channel),
            ("flash.dies_per_chip", f.dies_per_chip),
            ("flash.planes_per_die", f.planes_per_die),
            ("flash.blocks_per_plane", f.blocks_per_plane),
            ("flash.pages_per_block", f.pages_per_block),
            ("flash.page_types", f.page_types),
            ("flash.program_pages", f.program_pages),
        ] {
            if n == 0 {
                return bad(field, "must be > 0".into());
            }
        }
        if h.queues > 65536 {
            return bad(
                "host.queues",
                format!("must be at most 65536, got {}", h.queues),
            );
        }
        if h.front_end_slots > 1 << 20 {
            return bad(
                "host.front_end_slots",
                format!("must be at most {}, got {}", 1 << 20, h.front_end_slots),
            );
        }
        if h.front_end_servers == 0 || h.front_end_servers > 1 << 20 {
            return bad(
                "host.front_end_servers",
                format!("must be 1 to {}, got {}", 1 << 20, h.front_end_servers),
            );
        }
        if h.queue_depth > 1 << 20 {
            return bad(
                "host.queue_depth",
                format!("must be at most {}, got {}", 1 << 20, h.queue_depth),
            );
        }
        if self.planes() > MAX_PLANES {
            return bad(
                "flash.planes_per_die",
                format!(
                    "channels x chips x dies x planes is {}, more than {MAX_PLANES}",
                    self.planes()
                ),
            );
        }
        let unit = self.ftl.unit_bytes;
        if unit < 512 || !unit.is_multiple_of(512) || unit > 1 << 20 {
            return bad(
                "ftl.unit_bytes",
                format!("must be a multiple of 512 up to 1 MiB, got {unit}"),
            );
        }
        if f.page_bytes == 0 || !f.page_bytes.is_multiple_of(unit) {
            return bad(
                "flash.page_bytes",
                format!(
                    "must be a multiple of ftl.unit_bytes ({unit}), got {}",
                    f.page_bytes
                ),
            );
        }
        if !f.pages_per_block.is_multiple_of(f.program_pages) {
            return bad(
                "flash.program_pages",
                format!(
                    "must divide pages_per_block ({}), got {}",
                    f.pages_per_block, f.program_pages
                ),
            );
        }
        if u64::from(f.pages_per_block) * u64::from(self.units_per_page()) > 1 << 24 {
            return bad(
                "flash.pages_per_block",
                "a block may hold at most 2^24 mapping units".into(),
            );
        }
        if self.physical_units() > MAX_UNITS {
            return bad(
                "flash.blocks_per_plane",
                format!(
                    "the drive has {} mapping units; at most {MAX_UNITS} are supported",
                    self.physical_units()
                ),
            );
        }
        if f.page_types > 4 {
            return bad(
                "flash.page_types",
                format!("must be 1..=4 (SLC..QLC), got {}", f.page_types),
            );
        }
        if f.small_read_us > 0.0 && f.small_read_bytes == 0 {
            return bad(
                "flash.small_read_bytes",
                "must be > 0 when small_read_us is given".into(),
            );
        }
        let op = self.ftl.over_provisioning;
        if !(op.is_finite() && (0.0..0.9).contains(&op)) {
            return bad(
                "ftl.over_provisioning",
                format!("must be a fraction in 0..0.9, got {op}"),
            );
        }
        let t = self.gc.threshold;
        if !(t.is_finite() && (0.0..0.5).contains(&t)) {
            return bad(
                "gc.threshold",
                format!("must be a fraction in 0..0.5, got {t}"),
            );
        }
        let h = self.gc.hard_threshold;
        if !(h.is_finite() && (0.0..=t).contains(&h)) {
            return bad(
                "gc.hard_threshold",
                format!("must be a fraction in 0..=gc.threshold ({t}), got {h}"),
            );
        }
        // GC needs its own open block and at least one to refill from on every plane.
        let b = f.blocks_per_plane;
        let spare = self.physical_units() - self.logical_units();
        let block_units = u64::from(f.pages_per_block) * u64::from(self.units_per_page());
        let spare_blocks_per_plane = spare / block_units / self.planes();
        let reserve = u64::from(self.gc.reserve_blocks(b));
        if spare_blocks_per_plane < reserve + 1 {
            return bad(
                "ftl.over_provisioning",
                format!(
                    "leaves {spare_blocks_per_plane} spare blocks per plane; GC needs more than \
                     {reserve} (the gc.threshold of {b} blocks, and 2 open blocks)"
                ),
            );
        }
        if self.write_buffer.bytes < 2 * u64::from(f.page_bytes) {
            return bad(
                "write_buffer.bytes",
                format!(
                    "must hold at least two flash pages ({} bytes), got {}",
                    2 * f.page_bytes,
                    self.write_buffer.bytes
                ),
            );
        }
        Ok(())
    }
}
