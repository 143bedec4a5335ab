//! Rust baselines for `bench/run.exs`, so each Elixir figure has a ratio
//! measured in the same run on the same machine.
//!
//!   bench_exec exec [iterations]  median µs of a persistent `exec("true")`
//!   bench_exec exec_apart [iterations]  the same 3 ms apart (busy between)
//!   bench_exec exec_handed [iterations]  the same 3 ms apart, each handed to
//!                                 a thread of its own, the caller spinning
//!                                 for the answer (as the library hands a
//!                                 script to an interpreter thread)
//!   bench_exec memory [sessions]  resident KiB per idle `Bash` instance
//!   bench_exec allocated [sessions]  KiB allocated per idle `Bash` (the
//!                                 sizes asked of the allocator)
//!   bench_exec sleepers [count]   wall ms of `count` instances, built
//!                                 first, running `sleep 1` at once on a
//!                                 runtime with a thread per core
//!   bench_exec builtin [calls]    µs per call of a Rust custom builtin in a
//!                                 `for` loop (script → builtin → script)
//!   bench_exec vfs_read [reads]   µs per `cat` of a file on a mounted
//!                                 in-memory filesystem, in a `for` loop
//!   bench_exec snapshot [files]   median ms of snapshot + restore of a
//!                                 session holding `files` × 10,000 bytes,
//!                                 and the snapshot's size in bytes
//!   bench_exec python [runs]      median µs of `python3 -c "print(1)"`
//!   bench_exec cpython [runs]     the same under CPython (`cpython` feature),
//!                                 after one warm-up call
//!   bench_exec new [count]        median µs to build a `Bash`
//!   bench_exec pipeline runs path median µs of the script at `path` (bench/
//!                                 pipeline.sh) on the 200-line /data/log.txt
//!                                 that `pipeline_log` writes
//!   bench_exec first_poll 1 path  each line of the script at `path`, after
//!                                 whether it ends in its first poll on the
//!                                 caller (as the library polls scripts)

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bashkit::{
    async_trait, Bash, Builtin, BuiltinContext, ExecResult, ExecutionLimits, FileSystem,
    InMemoryFs, SessionLimits,
};
use ex_bashkit_core::memory;

// The allocator the library runs bashkit on, counting as it does: the
// baselines differ from the library by the library alone.
#[global_allocator]
static ALLOCATOR: memory::Counting<mimalloc::MiMalloc> = memory::Counting(mimalloc::MiMalloc);

fn main() {
    // As the library asks when it loads (a process of its own here).
    memory::small_pages();
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "exec".to_string());
    let count = args.next().and_then(|n| n.parse().ok());
    match mode.as_str() {
        "exec" => println!("{:.2}", exec_median_us(count.unwrap_or(20_000))),
        "exec_apart" => println!("{:.2}", exec_apart_median_us(count.unwrap_or(300))),
        "exec_handed" => println!("{:.2}", exec_handed_median_us(count.unwrap_or(300))),
        "memory" => println!("{:.1}", memory_per_session_kib(count.unwrap_or(10_000))),
        "allocated" => println!("{:.1}", allocated_per_session_kib(count.unwrap_or(10_000))),
        "sleepers" => println!("{:.1}", sleepers_ms(count.unwrap_or(10_000))),
        "builtin" => println!("{:.2}", builtin_call_us(count.unwrap_or(1_000))),
        "vfs_read" => println!("{:.2}", vfs_read_us(count.unwrap_or(1_000))),
        "snapshot" => {
            let (ms, size) = snapshot_restore_ms(count.unwrap_or(1_000));
            println!("{ms:.2} {size}");
        }
        "python" => println!("{:.2}", python_us(count.unwrap_or(200), monty())),
        "cpython" => println!("{:.2}", python_us(count.unwrap_or(200), cpython())),
        "new" => println!("{:.2}", new_median_us(count.unwrap_or(5_000))),
        "first_poll" => {
            let path = args.next().expect("first_poll needs the script's path");
            let script = std::fs::read_to_string(path).expect("readable script");
            first_poll_lines(&script);
        }
        "pipeline" => {
            let path = args.next().expect("pipeline needs the script's path");
            let script = std::fs::read_to_string(path).expect("readable script");
            println!("{:.2}", pipeline_median_us(count.unwrap_or(200), &script));
        }
        other => {
            eprintln!(
                "unknown mode {other:?}: expected exec, exec_apart, exec_handed, memory, \
                 allocated, sleepers, builtin, vfs_read, snapshot, python, cpython, new, \
                 pipeline or first_poll"
            );
            std::process::exit(2);
        }
    }
}

/// A session as ours are made in what counts per call: no command
/// history (ours keep none, as a non-interactive bash; bashkit's default
/// of 1,000 entries shifts them all on every call once full) and no limit
/// on the number of calls.
fn session() -> Bash {
    Bash::builder()
        .session_limits(SessionLimits::unlimited())
        .limits(ExecutionLimits::new().max_history_entries(0))
        .build()
}

fn new_median_us(count: usize) -> f64 {
    let samples: Vec<f64> = (0..count)
        .map(|_| {
            let started = Instant::now();
            drop(std::hint::black_box(session()));
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    median(samples)
}

/// The log `bench/run.exs` writes too: line i is
/// `i user(i mod 7) (i*37 mod 101) status=ok|fail`.
fn pipeline_log() -> String {
    (1..=200)
        .map(|i| {
            let status = if i % 3 == 0 { "ok" } else { "fail" };
            format!("{i} user{} {} status={status}\n", i % 7, i * 37 % 101)
        })
        .collect()
}

fn pipeline_median_us(runs: usize, script: &str) -> f64 {
    let runtime = runtime();
    let bash = session_with_log(&runtime);
    exec_median_us_of(&runtime, bash, script, runs)
}

/// A session holding the 200-line /data/log.txt.
fn session_with_log(runtime: &tokio::runtime::Runtime) -> Bash {
    let bash = session();
    runtime.block_on(async {
        let fs = bash.fs();
        fs.mkdir(Path::new("/data"), true).await.expect("mkdir");
        fs.write_file(Path::new("/data/log.txt"), pipeline_log().as_bytes())
            .await
            .expect("write");
    });
    bash
}

fn exec_median_us(iterations: usize) -> f64 {
    exec_median_us_of(&runtime(), session(), "true", iterations)
}

/// Median µs of `script` on `bash`, each run checked to exit 0, after a
/// tenth as many warm-up runs.
fn exec_median_us_of(
    runtime: &tokio::runtime::Runtime,
    mut bash: Bash,
    script: &str,
    runs: usize,
) -> f64 {
    let mut samples = Vec::with_capacity(runs);
    runtime.block_on(async {
        for _ in 0..runs / 10 {
            bash.exec(script).await.expect("warm-up");
        }
        for _ in 0..runs {
            let started = Instant::now();
            let result = bash.exec(script).await.expect("exec");
            samples.push(started.elapsed().as_secs_f64() * 1e6);
            assert_eq!(result.exit_code, 0);
        }
    });
    median(samples)
}

/// How far apart `exec_apart` runs its calls.
const APART: Duration = Duration::from_millis(3);

fn busy(span: Duration) {
    let started = Instant::now();
    while started.elapsed() < span {
        std::hint::spin_loop();
    }
}

/// Median µs of `exec("true")` 3 ms apart, on this thread.
fn exec_apart_median_us(runs: usize) -> f64 {
    let mut bash = session();
    let samples = runtime().block_on(async {
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            busy(APART);
            let started = Instant::now();
            bash.exec("true").await.expect("exec");
            samples.push(started.elapsed().as_secs_f64() * 1e6);
        }
        samples
    });
    median(samples)
}

/// Median µs of `exec("true")` 3 ms apart, each handed to a thread of its
/// own and its answer awaited by spinning.
fn exec_handed_median_us(runs: usize) -> f64 {
    let (to_thread, jobs) = std::sync::mpsc::channel::<()>();
    let (answer, answers) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let mut bash = session();
        runtime().block_on(async {
            while jobs.recv().is_ok() {
                bash.exec("true").await.expect("exec");
                answer.send(()).expect("caller");
            }
        })
    });
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        busy(APART);
        let started = Instant::now();
        to_thread.send(()).expect("thread");
        while answers.try_recv().is_err() {
            std::hint::spin_loop();
        }
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    drop(to_thread);
    thread.join().expect("thread");
    median(samples)
}

/// The median of `samples`.
fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn memory_per_session_kib(sessions: usize) -> f64 {
    let before = resident_kib();
    let held: Vec<Bash> = (0..sessions).map(|_| session()).collect();
    let after = resident_kib();
    drop(held);
    (after - before) as f64 / sessions as f64
}

fn allocated_per_session_kib(sessions: usize) -> f64 {
    let before = memory::stats().live_bytes;
    let held: Vec<Bash> = (0..sessions).map(|_| session()).collect();
    let after = memory::stats().live_bytes;
    drop(held);
    (after - before) as f64 / 1024.0 / sessions as f64
}

fn sleepers_ms(count: usize) -> f64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let sessions: Vec<Bash> = (0..count).map(|_| session()).collect();
    runtime.block_on(async {
        let started = Instant::now();
        let sleepers: Vec<_> = sessions
            .into_iter()
            .map(|mut bash| tokio::spawn(async move { bash.exec("sleep 1").await }))
            .collect();
        for sleeper in sleepers {
            let result = sleeper.await.expect("task").expect("exec");
            assert_eq!(result.exit_code, 0);
        }
        started.elapsed().as_secs_f64() * 1e3
    })
}

fn resident_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// The Rust counterpart of an Elixir `kv_get` builtin: a constant answer.
struct KvGet;

#[async_trait]
impl Builtin for KvGet {
    async fn execute(&self, _ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        Ok(ExecResult::ok("value\n"))
    }
}

fn builtin_call_us(calls: usize) -> f64 {
    let bash = Bash::builder()
        .session_limits(SessionLimits::unlimited())
        .builtin("kv_get", Box::new(KvGet))
        .build();
    loop_median_us(
        bash,
        &format!("for i in $(seq {calls}); do kv_get a >/dev/null; done"),
        calls,
    )
}

fn vfs_read_us(reads: usize) -> f64 {
    let bash = session();
    let mounted = Arc::new(InMemoryFs::new());
    let runtime = runtime();
    runtime
        .block_on(mounted.write_file(Path::new("/f"), b"value\n"))
        .expect("write");
    bash.mount("/api", mounted).expect("mount");
    loop_median_us(
        bash,
        &format!("for i in $(seq {reads}); do cat /api/f >/dev/null; done"),
        reads,
    )
}

/// Median over 7 runs of `script`, divided by the `per` operations it does.
fn loop_median_us(mut bash: Bash, script: &str, per: usize) -> f64 {
    let runtime = runtime();
    let samples: Vec<f64> = runtime.block_on(async {
        bash.exec(script).await.expect("warm-up");
        let mut samples = Vec::new();
        for _ in 0..7 {
            let started = Instant::now();
            let result = bash.exec(script).await.expect("exec");
            assert_eq!(result.exit_code, 0, "{}", result.stderr.text_lossy());
            samples.push(started.elapsed().as_secs_f64() * 1e6 / per as f64);
        }
        samples
    });
    median(samples)
}

/// Bytes that do not repeat across files, so nothing deduplicates.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn snapshot_restore_ms(files: usize) -> (f64, usize) {
    let runtime = runtime();
    let source = session();
    runtime.block_on(async {
        let fs = source.fs();
        fs.mkdir(Path::new("/data"), true).await.expect("mkdir");
        for i in 0..files {
            let path = format!("/data/file_{i}.bin");
            fs.write_file(Path::new(&path), &noise(i as u64 + 1, 10_000))
                .await
                .expect("write");
        }
    });
    let mut target = session();
    let mut size = 0;
    let samples: Vec<f64> = (0..11)
        .map(|_| {
            let started = Instant::now();
            let bytes = source.snapshot().expect("snapshot");
            target.restore_snapshot(&bytes).expect("restore");
            size = bytes.len();
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    (median(samples), size)
}

fn monty() -> Bash {
    Bash::builder()
        .session_limits(SessionLimits::unlimited())
        .python()
        .env("BASHKIT_ALLOW_INPROCESS_PYTHON", "1")
        .build()
}

fn cpython() -> Bash {
    Bash::builder()
        .session_limits(SessionLimits::unlimited())
        .cpython()
        .build()
}

fn python_us(runs: usize, mut bash: Bash) -> f64 {
    let runtime = runtime();
    let samples: Vec<f64> = runtime.block_on(async {
        bash.exec("python3 -c 'print(1)'").await.expect("warm-up");
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            let started = Instant::now();
            let result = bash.exec("python3 -c 'print(1)'").await.expect("exec");
            assert_eq!(result.stdout.text_lossy(), "1\n");
            samples.push(started.elapsed().as_secs_f64() * 1e6);
        }
        samples
    });
    median(samples)
}

/// Prints each line of `script` after whether it ended in its first poll
/// on the calling thread (`ready`) or had to go on elsewhere (`pending`),
/// run on the 200-line /data/log.txt as the library polls scripts
/// (`inline.rs`).
fn first_poll_lines(script: &str) {
    use ex_bashkit_core::inline::{admit, FirstPoll};
    let runtime = runtime();
    let mut bash = session_with_log(&runtime);
    for line in script.lines() {
        let owned = line.to_string();
        let slot = admit().expect("no other poll runs in this program");
        let run = async move {
            let result = bash.exec(&owned).await;
            (bash, result)
        };
        let (ended_here, (back, result)) = match slot.first_poll(runtime.handle(), Box::pin(run)) {
            FirstPoll::Ready(ran) => (true, ran),
            FirstPoll::Pending(run, _) => (false, runtime.block_on(run)),
            FirstPoll::Frozen | FirstPoll::Panicked => panic!("{line:?} froze or panicked"),
        };
        bash = back;
        result.expect("the line runs");
        println!("{} {line}", if ended_here { "ready  " } else { "pending" });
    }
}
