//! A session's checkpoints (`ExBashkit.Session.checkpoint/1`,
//! `rollback/2`): its shell state and files at a moment, kept in memory.
//! A checkpoint shares every file with the session and with the other
//! checkpoints, so keeping one costs what changed after it.
//!
//! What they hold is bounded: at most [`MAX_KEPT`] of them, and at most the
//! session's filesystem limit in contents the session itself no longer
//! has; the oldest go first.

use std::collections::VecDeque;

use bashkit::{Bash, ShellState};

use crate::cow_fs::{CowFs, Files};

/// The most checkpoints a session keeps.
pub const MAX_KEPT: usize = 100;

struct Checkpoint {
    id: u64,
    shell: ShellState,
    files: Files,
    /// Content bytes only this checkpoint keeps alive, beside the one
    /// after it (0 for the newest, which shares with the session).
    held: u64,
}

#[derive(Default)]
pub struct Checkpoints {
    kept: VecDeque<Checkpoint>,
    last_id: u64,
}

impl Checkpoints {
    /// Records `bash`'s shell state and `files` now; returns its id. Drops
    /// the oldest while more than [`MAX_KEPT`] are kept or they hold more
    /// than `budget` bytes of contents the session no longer shares.
    pub fn take(&mut self, bash: &Bash, files: &CowFs, budget: u64) -> u64 {
        let now = files.capture();
        if let Some(newest) = self.kept.back_mut() {
            newest.held = newest.files.held_beyond(&now);
        }
        self.last_id += 1;
        self.kept.push_back(Checkpoint {
            id: self.last_id,
            shell: bash.shell_state(),
            files: now,
            held: 0,
        });
        while self.kept.len() > MAX_KEPT || self.held() > budget {
            self.kept.pop_front();
        }
        self.last_id
    }

    /// Puts checkpoint `id`'s shell state and files back; the checkpoints
    /// after it stay, to go forward again.
    pub fn rollback(&self, id: u64, bash: &mut Bash, files: &CowFs) -> Result<(), String> {
        let checkpoint = self
            .kept
            .iter()
            .find(|checkpoint| checkpoint.id == id)
            .ok_or_else(|| format!("no checkpoint {id}: the session keeps {:?}", self.ids()))?;
        bash.restore_shell_state(&checkpoint.shell);
        files.put_back(&checkpoint.files);
        Ok(())
    }

    /// The ids of the checkpoints kept, oldest first.
    pub fn ids(&self) -> Vec<u64> {
        self.kept.iter().map(|checkpoint| checkpoint.id).collect()
    }

    /// Content bytes the checkpoints keep that the session does not share.
    pub fn held(&self) -> u64 {
        self.kept.iter().map(|checkpoint| checkpoint.held).sum()
    }
}
