//! The counting allocator and script accounts, with the counting allocator
//! as this test binary's own.

use ex_bashkit_core::memory;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use memory::{Account, Metered};

#[global_allocator]
static ALLOCATOR: memory::Counting<std::alloc::System> = memory::Counting(std::alloc::System);

const MIB: usize = 1024 * 1024;

fn account(cap: usize) -> (Arc<Account>, Arc<AtomicBool>, Arc<AtomicBool>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let frozen = Arc::new(AtomicBool::new(false));
    (
        Arc::new(Account::new(cap, cancel.clone(), frozen.clone())),
        cancel,
        frozen,
    )
}

/// Polls `future` once on this thread.
fn poll_once<T>(future: &mut Metered<'_, T>) -> Poll<T> {
    let mut cx = Context::from_waker(Waker::noop());
    std::pin::Pin::new(future).poll(&mut cx)
}

use std::future::Future;

#[test]
fn a_script_within_its_cap_is_not_stopped() {
    let (account, cancel, _) = account(64 * MIB);
    let mut script = Metered::new(&account, async {
        let buffer = vec![1u8; 8 * MIB];
        buffer.len()
    });
    assert_eq!(poll_once(&mut script), Poll::Ready(8 * MIB));
    assert!(!cancel.load(Ordering::Acquire));
    assert_eq!(account.verdict(), None);
}

#[test]
fn memory_freed_by_the_script_is_credited_back() {
    // Allocating and freeing 1 MiB a hundred times stays far below 8 MiB.
    let (account, cancel, _) = account(8 * MIB);
    let mut script = Metered::new(&account, async {
        for _ in 0..100 {
            std::hint::black_box(vec![1u8; MIB]);
        }
    });
    assert_eq!(poll_once(&mut script), Poll::Ready(()));
    assert!(!cancel.load(Ordering::Acquire));
}

#[test]
fn a_script_past_its_cap_is_cancelled_and_told_why() {
    let (account, cancel, frozen) = account(4 * MIB);
    let mut script = Metered::new(&account, async {
        let mut held = Vec::new();
        for _ in 0..8 {
            held.push(vec![1u8; MIB]);
        }
        held.len()
    });
    assert_eq!(poll_once(&mut script), Poll::Ready(8));
    assert!(cancel.load(Ordering::Acquire));
    assert!(!frozen.load(Ordering::Acquire));
    let (message, limit) = account.verdict().unwrap();
    assert_eq!(limit, "max_script_memory_bytes");
    assert!(message.contains("more than 4194304 bytes (limit :max_script_memory_bytes)"));
}

#[test]
fn allocations_outside_a_poll_are_not_charged() {
    let (account, cancel, _) = account(MIB);
    let mut script = Metered::new(&account, async { 1 });
    let outside = vec![1u8; 4 * MIB];
    assert_eq!(poll_once(&mut script), Poll::Ready(1));
    drop(outside);
    assert!(!cancel.load(Ordering::Acquire));
}

#[test]
fn a_script_that_keeps_allocating_past_the_margin_is_frozen_and_answered() {
    let (answered_tx, answered) = mpsc::channel();
    let (frozen_tx, frozen_flag) = mpsc::channel();
    // The frozen thread never returns: it is left behind, asleep.
    std::thread::spawn(move || {
        let (account, _cancel, frozen) = account(MIB);
        frozen_tx.send(frozen).unwrap();
        account.on_freeze(move |message, _limit| answered_tx.send(message).unwrap());
        let mut script = Metered::new(&account, async {
            // Never awaits: it cannot see its cancellation.
            let mut held = Vec::new();
            loop {
                held.push(vec![1u8; MIB]);
            }
        });
        let _ = poll_once(&mut script);
        unreachable!("a frozen script never returns");
    });
    let frozen = frozen_flag.recv().unwrap();
    let stats = loop {
        memory::answer_frozen();
        if let Ok(message) = answered.recv_timeout(Duration::from_millis(10)) {
            assert!(
                message.contains("limit :max_script_memory_bytes"),
                "{message}"
            );
            assert!(message.contains("frozen"), "{message}");
            break memory::stats();
        }
    };
    assert!(frozen.load(Ordering::Acquire));
    assert_eq!(stats.frozen_scripts, 1);
    // It holds what it had: all but the 1 MiB allocation it was refused.
    let held = stats.frozen_bytes as usize;
    assert!(held >= memory::MIN_FREEZE_MARGIN as usize, "{held}");
    assert!(held <= MIB + memory::MIN_FREEZE_MARGIN as usize, "{held}");
}

#[test]
fn live_bytes_follow_allocations() {
    let before = memory::stats().live_bytes;
    let held = vec![1u8; 64 * MIB];
    let during = memory::stats().live_bytes;
    drop(held);
    let after = memory::stats().live_bytes;
    // Other tests allocate concurrently; 64 MiB dwarfs them.
    assert!(during - before > 48 * MIB as i64, "{before} {during}");
    assert!(during - after > 48 * MIB as i64, "{during} {after}");
}

/// Recursion `depth` deep, with frames of 16 KiB that allocate a little
/// at each level (as an interpreter's do).
#[inline(never)]
fn recurse(depth: usize) -> usize {
    let frame = std::hint::black_box([1u8; 16 * 1024]);
    let small = std::hint::black_box(vec![1u8; 16]);
    if depth == 0 {
        usize::from(frame[0])
    } else {
        recurse(depth - 1) + small.len() - 15
    }
}

#[test]
fn a_deep_recursion_is_charged_to_the_cap_with_the_stack() {
    std::thread::Builder::new()
        .stack_size(256 * MIB)
        .spawn(|| {
            memory::watch_stack();
            // 2,000 frames of 16 KiB: 32 MiB of stack, almost no heap.
            let (deep, cancel, _) = account(8 * MIB);
            let mut script = Metered::new(&deep, async { recurse(2_000) });
            assert_eq!(poll_once(&mut script), Poll::Ready(2_001));
            let (message, limit) = deep.verdict().expect("stopped over its cap");
            assert!(message.contains("its stack included"), "{message}");
            assert_eq!(limit, "max_script_memory_bytes");
            assert!(cancel.load(Ordering::Acquire));

            // A shallow script on the same thread is not charged its stack.
            let (shallow, cancel, _) = account(8 * MIB);
            let mut script = Metered::new(&shallow, async { recurse(10) });
            assert_eq!(poll_once(&mut script), Poll::Ready(11));
            assert_eq!(shallow.verdict(), None);
            assert!(!cancel.load(Ordering::Acquire));
        })
        .unwrap()
        .join()
        .unwrap();
}
