//! Rust baselines for `bench/run.exs`, so each Elixir figure has a ratio
//! measured in the same run on the same machine.
//!
//!   bench_exec exec [iterations]  median µs of a persistent `exec("true")`
//!   bench_exec memory [sessions]  resident KiB per idle `Bash` instance

use std::time::Instant;

use bashkit::{Bash, SessionLimits};

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "exec".to_string());
    let count = args.next().and_then(|n| n.parse().ok());
    match mode.as_str() {
        "exec" => println!("{:.2}", exec_median_us(count.unwrap_or(20_000))),
        "memory" => println!("{:.1}", memory_per_session_kib(count.unwrap_or(10_000))),
        other => {
            eprintln!("unknown mode {other:?}: expected exec or memory");
            std::process::exit(2);
        }
    }
}

fn session() -> Bash {
    Bash::builder()
        .session_limits(SessionLimits::unlimited())
        .build()
}

fn exec_median_us(iterations: usize) -> f64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut bash = session();
    let mut samples = Vec::with_capacity(iterations);
    runtime.block_on(async {
        for _ in 0..iterations / 10 {
            bash.exec("true").await.expect("warm-up");
        }
        for _ in 0..iterations {
            let started = Instant::now();
            bash.exec("true").await.expect("exec");
            samples.push(started.elapsed().as_secs_f64() * 1e6);
        }
    });
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn memory_per_session_kib(sessions: usize) -> f64 {
    let before = resident_kib();
    let held: Vec<Bash> = (0..sessions).map(|_| session()).collect();
    let after = resident_kib();
    drop(held);
    (after - before) as f64 / sessions as f64
}

fn resident_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}
