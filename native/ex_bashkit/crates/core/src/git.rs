//! The session's `git` builtin: the sandbox's git (crates/git) run so the
//! mounts' guard lets it write a repository's metadata (`as_git`), which
//! the guard keeps from every other writer.

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};

pub struct GitBuiltin(pub ex_bashkit_git::Git);

#[async_trait]
impl Builtin for GitBuiltin {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        #[cfg(feature = "mounts")]
        return crate::metadata_guard::as_git(self.0.execute(ctx)).await;
        #[cfg(not(feature = "mounts"))]
        return self.0.execute(ctx).await;
    }
}
