//! Monty's view of the session's filesystem: the same files, with
//! `mkdir` answering as Python's `pathlib.Path.mkdir` expects.
//!
//! bashkit's Monty bridge (0.20.2, `builtins/python.rs`) reads an existing
//! directory from the error text "already exists", while the in-memory
//! filesystem says "directory exists", and a recursive `mkdir` of an
//! existing directory succeeds, as `mkdir -p` must. So in Monty
//! `mkdir(exist_ok=True)` failed with `OSError`, plain `mkdir()` raised
//! `OSError` instead of `FileExistsError`, and `mkdir(parents=True)`
//! succeeded where Python raises. Python's own code sees this view only;
//! bash's `mkdir` keeps the real one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use bashkit::{
    async_trait, Builtin, BuiltinContext, DirEntry, ExecResult, FileSystem, FileSystemExt,
    FsLimits, FsUsage, Metadata, SearchCapable, VfsSnapshot,
};

/// A Python builtin whose filesystem calls go through [`MontyPaths`].
/// The second field is how many lines a prelude put above the script
/// (the `:tools`' classes, `python_tools.rs`): its tracebacks' line
/// numbers are the script's own again. The third is where the script's
/// tool calls say they run: this command's environment and directory.
pub struct MontyBuiltin<B>(pub B, pub usize, pub Arc<crate::tool_bridge::Site>);

#[async_trait]
impl<B: Builtin> Builtin for MontyBuiltin<B> {
    async fn execute(&self, mut ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        ctx.fs = Arc::new(MontyPaths(ctx.fs));
        self.2.set(ctx.env, ctx.cwd);
        let mut result = self.0.execute(ctx).await?;
        if self.1 > 0 && !result.stderr.is_empty() {
            let stderr = shift_lines(&result.stderr.text_lossy(), self.1);
            result.stderr = stderr.into();
        }
        Ok(result)
    }

    fn llm_hint(&self) -> Option<&'static str> {
        self.0.llm_hint()
    }

    fn reset_session_state(&self) {
        self.0.reset_session_state()
    }
}

/// `line N` of each traceback frame, less `by` (frames of the prelude
/// itself keep their numbers).
fn shift_lines(text: &str, by: usize) -> String {
    const FRAME: &str = "\", line ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(FRAME) {
        let (head, tail) = rest.split_at(at + FRAME.len());
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        match tail[..digits].parse::<usize>() {
            Ok(line) if line > by => out.push_str(&(line - by).to_string()),
            _ => out.push_str(&tail[..digits]),
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// The session's filesystem, but for `mkdir` of a path that exists.
struct MontyPaths(Arc<dyn FileSystem>);

fn already_exists() -> bashkit::Error {
    std::io::Error::new(std::io::ErrorKind::AlreadyExists, "File already exists").into()
}

#[async_trait]
impl FileSystemExt for MontyPaths {
    fn usage(&self) -> FsUsage {
        self.0.usage()
    }

    async fn mkfifo(&self, path: &Path, mode: u32) -> bashkit::Result<()> {
        self.0.mkfifo(path, mode).await
    }

    fn limits(&self) -> FsLimits {
        self.0.limits()
    }

    fn vfs_snapshot(&self) -> Option<VfsSnapshot> {
        self.0.vfs_snapshot()
    }

    fn vfs_restore(&self, snapshot: &VfsSnapshot) -> bashkit::Result<()> {
        self.0.vfs_restore(snapshot)
    }

    fn backend_kind(&self) -> &'static str {
        self.0.backend_kind()
    }
}

#[async_trait]
impl FileSystem for MontyPaths {
    /// Python's `mkdir` fails on any existing path, with or without
    /// `parents` ("already exists": `FileExistsError`, or nothing with
    /// `exist_ok=True`).
    async fn mkdir(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        if self.0.exists(path).await? {
            return Err(already_exists());
        }
        self.0.mkdir(path, recursive).await
    }

    async fn read_file(&self, path: &Path) -> bashkit::Result<Vec<u8>> {
        self.0.read_file(path).await
    }

    async fn write_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        self.0.write_file(path, content).await
    }

    async fn append_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        self.0.append_file(path, content).await
    }

    async fn remove(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.0.remove(path, recursive).await
    }

    async fn stat(&self, path: &Path) -> bashkit::Result<Metadata> {
        self.0.stat(path).await
    }

    async fn lstat(&self, path: &Path) -> bashkit::Result<Metadata> {
        self.0.lstat(path).await
    }

    async fn read_dir(&self, path: &Path) -> bashkit::Result<Vec<DirEntry>> {
        self.0.read_dir(path).await
    }

    async fn exists(&self, path: &Path) -> bashkit::Result<bool> {
        self.0.exists(path).await
    }

    async fn rename(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        self.0.rename(from, to).await
    }

    async fn copy(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        self.0.copy(from, to).await
    }

    async fn symlink(&self, target: &Path, link: &Path) -> bashkit::Result<()> {
        self.0.symlink(target, link).await
    }

    async fn read_link(&self, path: &Path) -> bashkit::Result<PathBuf> {
        self.0.read_link(path).await
    }

    async fn chmod(&self, path: &Path, mode: u32) -> bashkit::Result<()> {
        self.0.chmod(path, mode).await
    }

    async fn set_modified_time(&self, path: &Path, time: SystemTime) -> bashkit::Result<()> {
        self.0.set_modified_time(path, time).await
    }

    fn as_search_capable(&self) -> Option<&dyn SearchCapable> {
        self.0.as_search_capable()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn traceback_lines_lose_the_prelude() {
        let traceback = "  File \"/t.py\", line 15, in f\n  File \"/t.py\", line 3, in <module>\n";
        assert_eq!(
            super::shift_lines(traceback, 13),
            "  File \"/t.py\", line 2, in f\n  File \"/t.py\", line 3, in <module>\n"
        );
    }
}
