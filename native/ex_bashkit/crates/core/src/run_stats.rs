//! What a script's run cost — wall time, CPU time, the most memory it held,
//! bytes it wrote to files, commands it ran — and a session's totals.
//!
//! Measured where the work is: CPU time and memory by the script's
//! account while its future is polled (`memory.rs`), bytes written by the
//! session's filesystems (`written.rs`), commands by bashkit's own counter.

use std::sync::Mutex;
use std::time::Duration;

use ex_bashkit_protocol::outcome::Stats;

use crate::sync::lock;

/// One script's cost; a session's sum of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// From the script taking its session to its end.
    pub wall: Duration,
    /// CPU time of the threads that polled it.
    pub cpu: Duration,
    /// The most it held at once (for a session's sum: the most any held).
    pub peak_memory_bytes: u64,
    /// Bytes it wrote to files (`written.rs`).
    pub file_bytes_written: u64,
    /// Commands bash ran (builtins, functions, external-command lookups).
    pub commands: u64,
    /// Scripts counted (1 for one run).
    pub runs: u64,
}

impl RunStats {
    /// `self` and `other` as one: times, bytes and counts add, peaks max.
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        Self {
            wall: self.wall.saturating_add(other.wall),
            cpu: self.cpu.saturating_add(other.cpu),
            peak_memory_bytes: self.peak_memory_bytes.max(other.peak_memory_bytes),
            file_bytes_written: self
                .file_bytes_written
                .saturating_add(other.file_bytes_written),
            commands: self.commands.saturating_add(other.commands),
            runs: self.runs.saturating_add(other.runs),
        }
    }
}

/// As `ExBashkit.Result.Stats` reads it, in whole microseconds.
impl From<RunStats> for Stats {
    fn from(run: RunStats) -> Self {
        Self {
            wall_us: micros(run.wall),
            cpu_us: micros(run.cpu),
            peak_memory_bytes: run.peak_memory_bytes,
            file_bytes_written: run.file_bytes_written,
            commands: run.commands,
            runs: run.runs,
        }
    }
}

fn micros(time: Duration) -> u64 {
    u64::try_from(time.as_micros()).unwrap_or(u64::MAX)
}

/// A session's runs, summed as each ends.
#[derive(Default)]
pub struct Totals(Mutex<RunStats>);

impl Totals {
    pub fn add(&self, run: RunStats) {
        let mut totals = lock(&self.0);
        *totals = totals.plus(run);
    }

    pub fn get(&self) -> RunStats {
        *lock(&self.0)
    }
}

/// The calling thread's CPU time in nanoseconds; 0 where it cannot be read.
#[cfg(target_os = "linux")]
pub fn thread_cpu_nanos() -> u64 {
    clock_nanos(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_nanos() -> u64 {
    0
}

/// `clock`'s reading in nanoseconds.
#[cfg(target_os = "linux")]
pub(crate) fn clock_nanos(clock: libc::clockid_t) -> Option<u64> {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only `time`; a stale clock fails.
    let status = unsafe { libc::clock_gettime(clock, &mut time) };
    (status == 0).then(|| time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_add_and_peaks_take_the_most() {
        let one = RunStats {
            wall: Duration::from_micros(5),
            cpu: Duration::from_micros(3),
            peak_memory_bytes: 100,
            file_bytes_written: 10,
            commands: 2,
            runs: 1,
        };
        let two = RunStats {
            peak_memory_bytes: 40,
            ..one
        };
        let sum = one.plus(two);
        assert_eq!(sum.wall, Duration::from_micros(10));
        assert_eq!(sum.cpu, Duration::from_micros(6));
        assert_eq!(sum.peak_memory_bytes, 100);
        assert_eq!(sum.file_bytes_written, 20);
        assert_eq!((sum.commands, sum.runs), (4, 2));
    }

    #[test]
    fn a_thread_s_cpu_time_grows_as_it_works() {
        let before = thread_cpu_nanos();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(thread_cpu_nanos() > before, "{x}");
    }
}
