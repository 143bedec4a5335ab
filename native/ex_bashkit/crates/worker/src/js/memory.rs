//! The engine's memory, capped by us rather than by QuickJS, so that a
//! run knows whether it ran out: QuickJS reports an allocation it could
//! not make by throwing an `InternalError`, or `null` when it cannot even
//! make that, and a script may throw `null` itself. [`Capped`] refuses an
//! allocation past the cap and says that it did.

use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rquickjs::allocator::Allocator;

/// The C allocator, within `max` bytes in all.
pub struct Capped {
    used: usize,
    max: usize,
    /// Set at the first allocation refused.
    refused: Arc<AtomicBool>,
}

impl Capped {
    pub fn new(max: usize, refused: Arc<AtomicBool>) -> Self {
        Self {
            used: 0,
            max,
            refused,
        }
    }

    fn admits(&mut self, more: usize) -> bool {
        let fits = self
            .used
            .checked_add(more)
            .is_some_and(|total| total <= self.max);
        if !fits {
            self.refused.store(true, Ordering::Release);
        }
        fits
    }
}

// SAFETY: every pointer comes from the C allocator, whose blocks are
// aligned for any type, and goes back to it; `usable_size` is its own.
unsafe impl Allocator for Capped {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admits(size) {
            return ptr::null_mut();
        }
        // SAFETY: a plain C allocation.
        let block = unsafe { libc::malloc(size) }.cast::<u8>();
        if !block.is_null() {
            // SAFETY: a block just allocated.
            self.used += unsafe { Self::usable_size(block) };
        }
        block
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        match count.checked_mul(size) {
            Some(total) if self.admits(total) => {
                // SAFETY: a plain C allocation.
                let block = unsafe { libc::calloc(count, size) }.cast::<u8>();
                if !block.is_null() {
                    // SAFETY: a block just allocated.
                    self.used += unsafe { Self::usable_size(block) };
                }
                block
            }
            _ => ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&mut self, block: *mut u8) {
        self.used = self.used.saturating_sub(Self::usable_size(block));
        libc::free(block.cast());
    }

    unsafe fn realloc(&mut self, block: *mut u8, size: usize) -> *mut u8 {
        if block.is_null() {
            return self.alloc(size);
        }
        if size == 0 {
            self.dealloc(block);
            return ptr::null_mut();
        }
        let old = Self::usable_size(block);
        if size > old && !self.admits(size - old) {
            return ptr::null_mut();
        }
        let moved = libc::realloc(block.cast(), size).cast::<u8>();
        if !moved.is_null() {
            self.used = self.used.saturating_sub(old) + Self::usable_size(moved);
        }
        moved
    }

    unsafe fn usable_size(block: *mut u8) -> usize {
        libc::malloc_usable_size(block.cast())
    }
}
