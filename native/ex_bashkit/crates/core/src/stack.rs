//! The native stack of our own threads: where it ends, how deep a script
//! has taken it, and giving its deep pages back to the OS.
//!
//! bashkit recurses on the native stack (eval, source, functions, the
//! parser), and an overflow aborts the whole VM. Our threads have large
//! stacks, lazily committed, but a page once touched stays resident: a
//! script that recursed a gigabyte deep left that gigabyte behind. So the
//! allocator (`memory.rs`) compares the stack pointer with these bounds on
//! every allocation, charging a script's depth to its memory cap and
//! stopping any thread before the end of its stack, and a thread whose
//! stack went deep hands those pages back when the poll that touched them
//! ends ([`release_below`]).

/// The stack pointer, near enough: the address of a local in the caller's
/// frame (inlined, so in the frame of whoever asks).
#[inline(always)]
pub fn pointer() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// The calling thread's stack: `(lowest, highest)` address. Stacks grow
/// down, so `highest` is where the thread began.
#[cfg(target_os = "linux")]
pub fn bounds() -> Option<(usize, usize)> {
    // SAFETY: `attr` is initialized by pthread_getattr_np before it is
    // read and destroyed after; the out-pointers are ours.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut low: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let status = libc::pthread_attr_getstack(&attr, &mut low, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (status == 0 && !low.is_null()).then(|| (low as usize, low as usize + size))
    }
}

#[cfg(not(target_os = "linux"))]
pub fn bounds() -> Option<(usize, usize)> {
    None
}

/// Page size, for aligning what is released.
fn page_size() -> usize {
    // SAFETY: sysconf only reads its argument.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(4096)
}

/// Room kept below the current frame when releasing: signal handlers and
/// the caller's next calls run there.
const KEEP_BELOW_BYTES: usize = 256 * 1024;

/// Gives back to the OS the stack pages from `low` up to a little below
/// the current frame: nothing lives below the stack pointer once the deep
/// calls have returned, and a page released reads as zeros when touched
/// again. Call it with the stack shallow (between polls).
#[cfg(unix)]
pub fn release_below(low: usize) {
    let page = page_size();
    let start = low.next_multiple_of(page);
    let end = pointer().saturating_sub(KEEP_BELOW_BYTES) / page * page;
    if end > start {
        // SAFETY: [start, end) is this thread's own stack, below every live
        // frame (the current one keeps KEEP_BELOW_BYTES of room), so no
        // live data is there; MADV_DONTNEED only drops the pages.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
        }
    }
}

#[cfg(not(unix))]
pub fn release_below(_low: usize) {}
