//! The `:limits` option: caps on one script's work, its output, the
//! in-memory filesystem and interpreter memory. Unset keys keep bashkit's
//! defaults; values were range-checked in `ExBashkit.Session.Options`.

use std::time::Duration;

use bashkit::{ExecutionLimits, FsLimits, MemoryLimits};

pub use ex_bashkit_protocol::limits::Limits;

// `key_of_variant`: written by build.rs from limits.table, the one list of
// keys Elixir and the protocol read too.
include!(concat!(env!("OUT_DIR"), "/limits_table.rs"));

/// Our default script size. bashkit allows 10 MB; its parser can take
/// hundreds of times a script's size in memory and seconds of CPU on a
/// hostile one, and no agent needs a script that large (files go through
/// `write_file/3`).
const DEFAULT_MAX_INPUT_BYTES: usize = 1_000_000;

/// The most one script may allocate, net of what it frees: far above what
/// ordinary scripts use (a few MB), far below what a runaway takes.
const DEFAULT_MAX_SCRIPT_MEMORY_BYTES: u64 = 256 * 1024 * 1024;

/// The JavaScript engine's heap, per run: Node-sized programs, not more.
const DEFAULT_MAX_JAVASCRIPT_MEMORY_BYTES: u64 = 64 * 1024 * 1024;
/// `:max_git_transfer_bytes` when not given: 100 MiB.
const DEFAULT_MAX_GIT_TRANSFER_BYTES: u64 = 100 * 1024 * 1024;

/// Room in a snapshot for what is neither file content nor variables:
/// directory entries, metadata, the container's own framing.
const SNAPSHOT_OVERHEAD_BYTES: u64 = 16 * 1024 * 1024;

/// A count too large for this platform means "unlimited".
pub fn count(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

fn set(target: &mut usize, value: Option<u64>) {
    if let Some(value) = value {
        *target = count(value);
    }
}

/// What the `:limits` mean: bashkit's limits and ours, defaults filled in.
pub trait LimitsExt {
    /// The most one `node` run's engine may allocate.
    fn javascript_memory(&self) -> usize;
    /// The largest a `sqlite3` database may grow.
    fn sqlite_bytes(&self) -> u64;
    /// The most one git transfer (a clone's pack and the server's other
    /// answers) may bring.
    fn git_transfer_bytes(&self) -> usize;
    fn execution(&self) -> ExecutionLimits;
    fn filesystem(&self) -> FsLimits;
    /// The most a snapshot given to `restore/3` may decode to.
    fn snapshot_bytes(&self) -> u64;
    /// How deep a script may nest `(` and `{` before it is parsed.
    fn nesting_depth(&self) -> usize;
    /// The per-script allocation cap (`memory.rs`).
    fn script_memory(&self) -> usize;
    /// `None` keeps bashkit's per-instance memory defaults.
    fn memory(&self) -> Option<MemoryLimits>;
}

impl LimitsExt for Limits {
    fn javascript_memory(&self) -> usize {
        count(
            self.max_javascript_memory_bytes
                .unwrap_or(DEFAULT_MAX_JAVASCRIPT_MEMORY_BYTES),
        )
    }

    /// The largest a `sqlite3` database may grow: by default, what one
    /// file of the session may hold.
    fn sqlite_bytes(&self) -> u64 {
        self.max_sqlite_bytes
            .unwrap_or_else(|| self.filesystem().max_file_size)
    }

    fn git_transfer_bytes(&self) -> usize {
        count(
            self.max_git_transfer_bytes
                .unwrap_or(DEFAULT_MAX_GIT_TRANSFER_BYTES),
        )
    }

    fn execution(&self) -> ExecutionLimits {
        let mut limits = ExecutionLimits::default();
        set(&mut limits.max_commands, self.max_commands);
        set(&mut limits.max_loop_iterations, self.max_loop_iterations);
        set(
            &mut limits.max_total_loop_iterations,
            self.max_total_loop_iterations,
        );
        set(&mut limits.max_function_depth, self.max_function_depth);
        limits.max_input_bytes = DEFAULT_MAX_INPUT_BYTES;
        set(&mut limits.max_input_bytes, self.max_input_bytes);
        set(&mut limits.max_ast_depth, self.max_ast_depth);
        set(
            &mut limits.max_parser_operations,
            self.max_parser_operations,
        );
        set(&mut limits.max_background_jobs, self.max_background_jobs);
        if let Some(ms) = self.parser_timeout_ms {
            limits.parser_timeout = Duration::from_millis(ms);
        }
        set(&mut limits.max_stdout_bytes, self.max_stdout_bytes);
        set(&mut limits.max_stderr_bytes, self.max_stderr_bytes);
        if let Some(ms) = self.timeout_ms {
            limits.timeout = Duration::from_millis(ms);
        }
        // No command history, as in a non-interactive bash (`bash -c`).
        // bashkit keeps the last 1,000 scripts (up to 1 MB per session) and,
        // once full, shifts them all on every exec: 0.5-3 µs more per
        // `exec("true")` in a session past 1,000 scripts.
        limits.max_history_entries = 0;
        limits
    }

    fn filesystem(&self) -> FsLimits {
        let mut limits = FsLimits::default();
        if let Some(bytes) = self.max_fs_bytes {
            limits.max_total_bytes = bytes;
        }
        if let Some(bytes) = self.max_file_bytes {
            limits.max_file_size = bytes;
        }
        if let Some(files) = self.max_file_count {
            limits.max_file_count = files;
        }
        limits
    }

    /// The most a snapshot given to `restore/3` may decode to: by default,
    /// what this session could hold (its filesystem and variable bytes) plus
    /// [`SNAPSHOT_OVERHEAD_BYTES`].
    fn snapshot_bytes(&self) -> u64 {
        self.max_snapshot_bytes.unwrap_or_else(|| {
            let variables = self
                .max_memory_bytes
                .unwrap_or(MemoryLimits::default().max_total_variable_bytes as u64);
            self.filesystem()
                .max_total_bytes
                .saturating_add(variables)
                .saturating_add(SNAPSHOT_OVERHEAD_BYTES)
        })
    }

    /// How deep a script may nest `(` and `{` before it is parsed: twice
    /// the parser's AST depth limit.
    fn nesting_depth(&self) -> usize {
        let ast = self
            .max_ast_depth
            .map_or(ExecutionLimits::default().max_ast_depth, count);
        ast.saturating_mul(2)
    }

    /// The per-script allocation cap (`memory.rs`).
    fn script_memory(&self) -> usize {
        count(
            self.max_script_memory_bytes
                .unwrap_or(DEFAULT_MAX_SCRIPT_MEMORY_BYTES),
        )
    }

    /// `None` keeps bashkit's per-instance memory defaults.
    fn memory(&self) -> Option<MemoryLimits> {
        let bytes = count(self.max_memory_bytes?);
        let defaults = MemoryLimits::default();
        Some(
            MemoryLimits::new()
                .max_total_variable_bytes(bytes)
                .max_function_body_bytes(bytes.min(defaults.max_function_body_bytes)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bashkit::LimitExceeded;

    #[test]
    fn the_table_names_each_key_once() {
        let mut keys = Limits::KEYS.to_vec();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), Limits::KEYS.len());
        assert!(Limits::KEYS.contains(&"max_memory_bytes"));
    }

    #[test]
    fn an_error_names_a_key_of_the_table() {
        let key = key_of_variant(&LimitExceeded::MaxCommands(7));
        assert_eq!(key, Some("max_commands"));
        assert!(Limits::KEYS.contains(&key.unwrap()));
        assert_eq!(key_of_variant(&LimitExceeded::Memory("x".into())), None);
    }
}
