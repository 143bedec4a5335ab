//! Test builds only (cargo feature `escape_probe`, the
//! `ex_bashkit_worker_probe` executable): a builtin that writes whatever
//! it is given to the VM's pipe, as code that took over its worker could,
//! so the suite can check that the host holds against a lying worker
//! (test/ex_bashkit/worker/lying_worker_test.exs). Never in a release build.
//!
//! `lie FILE [TIMES [ZEROS]]` writes FILE's bytes (forged frames, read from
//! the session's filesystem) TIMES times (default 1), then ZEROS zero
//! bytes (the body of a forged frame header), then prints `told`.

use std::path::Path;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};

pub struct Lie;

#[async_trait]
impl Builtin for Lie {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let number = |index: usize| -> u64 {
            ctx.args
                .get(index)
                .and_then(|arg| arg.parse().ok())
                .unwrap_or(0)
        };
        let Some(file) = ctx.args.first() else {
            return Ok(ExecResult::err(
                "lie: FILE [TIMES [ZEROS]]\n".to_string(),
                2,
            ));
        };
        let path = bashkit::normalize_path(&ctx.cwd.join(Path::new(file)));
        let frames = ctx.fs.read_file(&path).await?;
        let times = if ctx.args.len() > 1 { number(1) } else { 1 };
        for _ in 0..times {
            if !write_all(&frames) {
                return Ok(ExecResult::err(
                    "lie: the VM closed the pipe\n".to_string(),
                    1,
                ));
            }
        }
        let zeros = vec![0u8; 1 << 20];
        let mut left = number(2);
        while left > 0 {
            let part = left.min(zeros.len() as u64) as usize;
            if !write_all(&zeros[..part]) {
                return Ok(ExecResult::err(
                    "lie: the VM closed the pipe\n".to_string(),
                    1,
                ));
            }
            left -= part as u64;
        }
        Ok(ExecResult::ok("told\n".to_string()))
    }
}

/// Writes `bytes` to fd 1, the VM's pipe, past the worker's own framing.
fn write_all(mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: writes from a live buffer to this process's stdout.
        let written = unsafe { libc::write(1, bytes.as_ptr().cast(), bytes.len()) };
        if written <= 0 {
            return false;
        }
        bytes = &bytes[written as usize..];
    }
    true
}
