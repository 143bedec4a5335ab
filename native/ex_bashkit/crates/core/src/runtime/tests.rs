use super::*;
use std::sync::mpsc;

#[test]
fn jobs_run_on_interpreter_threads_and_report_back() {
    let pool = Interpreters::start(2).unwrap();
    let (tx, rx) = mpsc::channel();
    for worker in 0..2 {
        let tx = tx.clone();
        pool.spawn(worker, async move {
            let name = std::thread::current().name().map(str::to_owned);
            tx.send(name).unwrap();
        });
    }
    let mut names: Vec<_> = (0..2).map(|_| rx.recv().unwrap().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["ex_bashkit_0", "ex_bashkit_1"]);
}

#[test]
fn waiting_jobs_hold_no_thread() {
    // One thread, many sleepers: they can only overlap if a sleeping
    // job yields the thread.
    let pool = Interpreters::start(1).unwrap();
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    for _ in 0..100 {
        let tx = tx.clone();
        pool.spawn(0, async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            tx.send(()).unwrap();
        });
    }
    for _ in 0..100 {
        rx.recv().unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn only_a_poll_that_burns_cpu_is_lowered() {
    let pool = Interpreters::start(2).unwrap();
    let hold = Duration::from_millis(400);
    pool.spawn(0, async move { std::thread::sleep(hold) });
    pool.spawn(1, async move {
        let started = Instant::now();
        while started.elapsed() < hold {
            std::hint::spin_loop();
        }
    });
    let (blocked, spinning) = (&pool.worker(0).load, &pool.worker(1).load);
    let (mut blocked_hogged, mut burned) = (false, false);
    let started = Instant::now();
    while started.elapsed() < hold / 2 {
        let now = now();
        assert!(!blocked.burning(now), "a blocked poll burns no CPU");
        blocked_hogged |= blocked.hogged(now);
        burned |= spinning.burning(now);
        std::thread::sleep(WATCH_INTERVAL);
    }
    // No new work goes to either; only the spinning one is lowered.
    assert!(blocked_hogged);
    assert!(burned || CpuClock::current().is_none());
}

#[test]
fn deep_recursion_fits_the_interpreter_stack() {
    // 20 MiB of frames: far past a dirty scheduler's or a default
    // thread's stack, well within ours.
    fn depth(n: u64) -> u64 {
        let frame = std::hint::black_box([0u8; 1024]);
        if n == 0 {
            u64::from(frame[0])
        } else {
            depth(n - 1) + 1
        }
    }
    let pool = Interpreters::start(1).unwrap();
    let (tx, rx) = mpsc::channel();
    pool.spawn(0, async move { tx.send(depth(20_000)).unwrap() });
    assert_eq!(rx.recv().unwrap(), 20_000);
}
