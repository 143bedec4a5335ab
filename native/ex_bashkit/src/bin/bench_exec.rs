//! Baseline for `bench/exec.exs`: the same persistent `exec("true")` round
//! trip on bashkit straight from Rust, so the Elixir figure has a ratio.
//!
//! Usage: bench_exec [iterations]  → prints the median microseconds per call.

use std::time::Instant;

use bashkit::{Bash, SessionLimits};

fn main() {
    let iterations: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut bash = Bash::builder()
        .session_limits(SessionLimits::unlimited())
        .build();
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
    println!("{:.2}", samples[samples.len() / 2]);
}
