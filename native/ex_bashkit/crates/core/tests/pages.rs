//! mimalloc's memory asks the kernel for no transparent huge pages once
//! `memory::small_pages` ran, and the process's own setting is left alone
//! (the library runs inside the host's VM).

use ex_bashkit_core::memory;

const GIB: usize = 1024 * 1024 * 1024;

/// Maps `size` bytes through mimalloc (untouched: virtual memory only) and
/// says whether the kernel was asked for huge pages on them. Kept mapped,
/// so that a later call cannot be handed the same memory again.
fn advised_huge(size: usize) -> bool {
    // SAFETY: a plain allocation, never touched nor freed (virtual memory).
    let block = unsafe { libmimalloc_sys::mi_malloc(size) } as usize;
    assert_ne!(block, 0, "the mapping failed");
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let mut inside = false;
    let mut advised = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((start, end)) = range.split_once('-') {
                if let (Ok(start), Ok(end)) = (
                    usize::from_str_radix(start, 16),
                    usize::from_str_radix(end, 16),
                ) {
                    inside = start <= block && block < end;
                    continue;
                }
            }
        }
        if inside && line.starts_with("VmFlags:") {
            advised = line.split_whitespace().any(|flag| flag == "hg");
        }
    }
    advised
}

fn process_allows_huge_pages() -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("THP_enabled:"))?;
    Some(line.ends_with('1'))
}

#[test]
fn small_pages_stops_mimalloc_asking_for_huge_pages_and_leaves_the_process_alone() {
    let before = process_allows_huge_pages();
    // Initialized, and mapping with huge pages where the system has them.
    let advised_before = advised_huge(GIB + GIB / 2);
    memory::small_pages();
    assert!(
        !advised_huge(GIB + GIB / 4),
        "a mapping after small_pages asked for huge pages"
    );
    // Where the kernel has them at all, mimalloc asked before: the check
    // above saw a difference.
    if std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|mode| !mode.contains("[never]"))
    {
        assert!(
            advised_before,
            "mimalloc did not ask for huge pages by default"
        );
    }
    assert_eq!(process_allows_huge_pages(), before);
}
