//! Per-call `:env` and `:cwd` of `ExBashkit.Session.exec/3`: set before
//! the script and put back after it, so neither outlives the call.
//!
//! What to put back is parked on the session before the script starts. A
//! script dropped mid-way (cancelled, timed out, its caller gone) cannot put
//! it back itself; the session's next job does, before anything else.

use crate::error::SessionError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use bashkit::{normalize_path, Bash, ShellState};

use crate::sync::lock;

/// A session's parked restore, if a call's scope has not been undone yet.
#[derive(Default)]
pub struct CallScope(Mutex<Option<Restore>>);

/// What a call changed, with the values from before it.
pub struct Restore {
    /// Per name: the exported value, the shell variable and its attributes.
    vars: Vec<(String, Saved)>,
    /// The directory (and `$PWD`, `$OLDPWD`) to return to, if it moved.
    cwd: Option<(PathBuf, Saved, Saved)>,
}

type Saved = (Option<String>, Option<String>, Option<u8>);

fn saved(state: &ShellState, name: &str) -> Saved {
    (
        state.env.get(name).cloned(),
        state.variables.get(name).cloned(),
        state.var_attrs.get(name).copied(),
    )
}

fn put_back(state: &mut ShellState, name: &str, (env, var, attrs): Saved) {
    set(&mut state.env, name, env);
    set(&mut state.variables, name, var);
    set(&mut state.var_attrs, name, attrs);
}

fn set<V>(map: &mut HashMap<String, V>, name: &str, value: Option<V>) {
    match value {
        Some(value) => map.insert(name.to_string(), value),
        None => map.remove(name),
    };
}

impl CallScope {
    /// Puts back what an earlier call changed, if that was not done yet.
    pub fn settle(&self, bash: &mut Bash) {
        if let Some(restore) = lock(&self.0).take() {
            let mut state = bash.shell_state();
            for (name, was) in restore.vars {
                put_back(&mut state, &name, was);
            }
            if let Some((cwd, pwd, oldpwd)) = restore.cwd {
                state.cwd = cwd;
                put_back(&mut state, "PWD", pwd);
                put_back(&mut state, "OLDPWD", oldpwd);
            }
            bash.restore_shell_state(&state);
        }
    }

    /// Sets `env` (exported) and `cwd` (relative to the current directory)
    /// for one call, parking what to put back. A `cwd` that is not a
    /// directory is refused, and nothing changes.
    pub async fn enter(
        &self,
        bash: &mut Bash,
        env: &[(String, String)],
        cwd: Option<&str>,
    ) -> Result<(), SessionError> {
        if env.is_empty() && cwd.is_none() {
            return Ok(());
        }
        let mut state = bash.shell_state();
        let cwd = match cwd {
            Some(cwd) => Some(directory(bash, &state.cwd, cwd).await?),
            None => None,
        };
        let mut restore = Restore {
            vars: Vec::with_capacity(env.len()),
            cwd: None,
        };
        if let Some(cwd) = cwd {
            let (pwd, oldpwd) = (saved(&state, "PWD"), saved(&state, "OLDPWD"));
            let previous = std::mem::replace(&mut state.cwd, cwd.clone());
            let text = cwd.to_string_lossy().into_owned();
            if state.env.contains_key("PWD") {
                state.env.insert("PWD".into(), text.clone());
            }
            state.variables.insert("PWD".into(), text);
            restore.cwd = Some((previous, pwd, oldpwd));
        }
        for (name, value) in env {
            restore.vars.push((name.clone(), saved(&state, name)));
            state.env.insert(name.clone(), value.clone());
            state.variables.insert(name.clone(), value.clone());
        }
        bash.restore_shell_state(&state);
        *lock(&self.0) = Some(restore);
        Ok(())
    }
}

async fn directory(bash: &Bash, current: &Path, cwd: &str) -> Result<PathBuf, SessionError> {
    let path = normalize_path(&current.join(cwd));
    let refused = |missing| SessionError::Cwd {
        cwd: cwd.to_string(),
        missing,
    };
    match bash.fs().stat(&path).await {
        Ok(meta) if meta.file_type == bashkit::FileType::Directory => Ok(path),
        Ok(_) => Err(refused(false)),
        Err(_) => Err(refused(true)),
    }
}
