//! Refs as git keeps them: loose files under `refs/`, `packed-refs`
//! (where `git clone` and `git gc` put them), symbolic refs, and the
//! reflogs git appends to on each update.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::odb::Oid;
use super::repo::{Head, Repo, Res};

fn is_oid(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Repo {
    /// `packed-refs`: full ref name → object.
    /// `packed-refs`, read once per command (a listing of hundreds of
    /// tags asks it of each); this git's own writes of it forget it.
    async fn packed_refs(&self) -> Arc<BTreeMap<String, Oid>> {
        if let Some(known) = &*self.packed.lock().unwrap() {
            return known.clone();
        }
        let refs = Arc::new(self.read_packed_refs().await);
        *self.packed.lock().unwrap() = Some(refs.clone());
        refs
    }

    async fn read_packed_refs(&self) -> BTreeMap<String, Oid> {
        let mut refs = BTreeMap::new();
        let Some(text) = self.read_text(&self.git.join("packed-refs")).await else {
            return refs;
        };
        for line in text.lines() {
            if line.starts_with('#') || line.starts_with('^') {
                continue;
            }
            if let Some((oid, name)) = line.split_once(' ') {
                if is_oid(oid) {
                    refs.insert(name.to_string(), oid.to_string());
                }
            }
        }
        refs
    }

    /// A full ref name (`refs/heads/main`) → its object, symbolic refs
    /// followed.
    pub async fn read_ref(&self, name: &str) -> Option<Oid> {
        let mut name = name.to_string();
        for _ in 0..5 {
            if let Some(text) = self.read_text(&self.git.join(&name)).await {
                let text = text.trim();
                match text.strip_prefix("ref: ") {
                    Some(target) => {
                        name = target.trim().to_string();
                        continue;
                    }
                    // FETCH_HEAD's first line names the object first.
                    None => {
                        let oid = text.split_ascii_whitespace().next().unwrap_or_default();
                        return Some(oid.to_string()).filter(|t| is_oid(t));
                    }
                }
            }
            return self.packed_refs().await.get(&name).cloned();
        }
        None
    }

    /// Where a symbolic ref points (`refs/remotes/origin/HEAD` →
    /// `refs/remotes/origin/main`), if it is one.
    pub async fn symref_target(&self, name: &str) -> Option<String> {
        let text = self.read_text(&self.git.join(name)).await?;
        text.trim()
            .strip_prefix("ref: ")
            .map(|t| t.trim().to_string())
    }

    pub async fn head(&self) -> Head {
        let text = self
            .read_text(&self.git.join("HEAD"))
            .await
            .unwrap_or_default();
        match text.trim().strip_prefix("ref: refs/heads/") {
            Some(branch) => Head::Branch(branch.to_string()),
            None => Head::Detached(text.trim().to_string()),
        }
    }

    pub async fn set_head_branch(&self, branch: &str) -> Res<()> {
        self.write(
            &self.git.join("HEAD"),
            format!("ref: refs/heads/{branch}\n").as_bytes(),
        )
        .await
    }

    pub async fn set_head_detached(&self, oid: &str) -> Res<()> {
        self.write(&self.git.join("HEAD"), format!("{oid}\n").as_bytes())
            .await
    }

    /// `HEAD` moved by a checkout or switch, in `HEAD`'s reflog as git
    /// writes it (`status` reads it back for "HEAD detached at …").
    pub async fn log_checkout(
        &self,
        old: Option<&str>,
        new: &str,
        from: &str,
        to: &str,
    ) -> Res<()> {
        self.log_update(
            "HEAD",
            old,
            new,
            &format!("checkout: moving from {from} to {to}"),
        )
        .await
    }

    /// What `HEAD` was last checked out as, from its reflog: the name
    /// given to `checkout`/`switch`.
    pub async fn last_checkout(&self) -> Option<String> {
        let log = self.read_text(&self.git.join("logs/HEAD")).await?;
        log.lines().rev().find_map(|line| {
            let (_, message) = line.split_once('\t')?;
            let rest = message.strip_prefix("checkout: moving from ")?;
            rest.rsplit_once(" to ").map(|(_, to)| to.to_string())
        })
    }

    /// `@{-N}` (`-` is `@{-1}`): what `HEAD` was the Nth checkout before,
    /// from its reflog's `checkout: moving from X to Y` lines.
    pub async fn previous_checkout(&self, n: usize) -> Option<String> {
        let log = self.read_text(&self.git.join("logs/HEAD")).await?;
        log.lines()
            .rev()
            .filter_map(|line| {
                let (_, message) = line.split_once('\t')?;
                let rest = message.strip_prefix("checkout: moving from ")?;
                rest.rsplit_once(" to ").map(|(from, _)| from.to_string())
            })
            .nth(n.checked_sub(1)?)
    }

    /// The branch `branch` tracks (`origin/main`) and where that ref is,
    /// from `branch.<name>.remote` and `.merge`.
    pub async fn upstream(&self, branch: &str) -> Option<(String, Option<Oid>)> {
        let remote = self
            .config_value(&format!("branch.{branch}.remote"))
            .await?;
        let merge = self.config_value(&format!("branch.{branch}.merge")).await?;
        let name = merge.strip_prefix("refs/heads/")?;
        if remote == "." {
            return Some((name.to_string(), self.branch(name).await));
        }
        let shown = format!("{remote}/{name}");
        let oid = self.read_ref(&format!("refs/remotes/{shown}")).await;
        Some((shown, oid))
    }

    pub async fn branch(&self, name: &str) -> Option<Oid> {
        self.read_ref(&format!("refs/heads/{name}")).await
    }

    pub async fn tag(&self, name: &str) -> Option<Oid> {
        self.read_ref(&format!("refs/tags/{name}")).await
    }

    pub async fn set_ref(&self, kind: &str, name: &str, oid: &str) -> Res<()> {
        let full = format!("refs/{kind}/{name}");
        let path = self.git.join(&full);
        if let Some(parent) = path.parent() {
            self.io.mkdir_all(parent).await?;
        }
        self.write(&path, format!("{oid}\n").as_bytes()).await
    }

    /// Deletes a ref wherever it lives: its loose file, its line (and
    /// peeled line) in `packed-refs`, and its reflog.
    pub async fn delete_ref(&self, kind: &str, name: &str) -> Res<()> {
        self.delete_full_ref(&format!("refs/{kind}/{name}")).await
    }

    /// `delete_ref` by the ref's full name (`refs/stash`).
    pub async fn delete_full_ref(&self, full: &str) -> Res<()> {
        let full = full.to_string();
        let _ = self.io.remove(&self.git.join(&full), false).await;
        let _ = self
            .io
            .remove(&self.git.join("logs").join(&full), false)
            .await;
        let packed = self.git.join("packed-refs");
        if let Some(text) = self.read_text(&packed).await {
            let mut out = String::new();
            let mut dropping = false;
            for line in text.split_inclusive('\n') {
                if line.starts_with('^') {
                    if !dropping {
                        out.push_str(line);
                    }
                    continue;
                }
                dropping = line.trim_end().split_once(' ').map(|(_, n)| n) == Some(full.as_str());
                if !dropping {
                    out.push_str(line);
                }
            }
            if out != text {
                *self.packed.lock().unwrap() = None;
                self.write(&packed, out.as_bytes()).await?;
            }
        }
        Ok(())
    }

    /// Writes `packed-refs` as `git pack-refs` does: sorted, each
    /// annotated tag followed by what it peels to.
    #[cfg(feature = "network")]
    pub async fn write_packed_refs(&self, mut refs: Vec<(String, Oid)>) -> Res<()> {
        refs.sort();
        let mut text = String::from("# pack-refs with: peeled fully-peeled sorted \n");
        for (name, oid) in refs {
            text.push_str(&format!("{oid} {name}\n"));
            if name.starts_with("refs/tags/") {
                let peeled = self.peel(&oid).await?;
                if peeled != oid {
                    text.push_str(&format!("^{peeled}\n"));
                }
            }
        }
        *self.packed.lock().unwrap() = None;
        self.write(&self.git.join("packed-refs"), text.as_bytes())
            .await
    }

    #[cfg(feature = "network")]
    pub async fn write_symref(&self, name: &str, target: &str) -> Res<()> {
        let path = self.git.join(name);
        if let Some(parent) = path.parent() {
            self.io.mkdir_all(parent).await?;
        }
        self.write(&path, format!("ref: {target}\n").as_bytes())
            .await
    }

    /// The names under `refs/<kind>/` (`heads`, `tags`, `remotes`),
    /// loose and packed, sorted.
    pub async fn refs(&self, kind: &str) -> Vec<String> {
        let mut names = std::collections::BTreeSet::new();
        let base = self.git.join("refs").join(kind);
        let mut pending = vec![base.clone()];
        while let Some(dir) = pending.pop() {
            for (name, is_dir) in self.io.read_dir(&dir).await.unwrap_or_default() {
                let path = dir.join(&name);
                if is_dir {
                    pending.push(path);
                } else if let Ok(name) = path.strip_prefix(&base) {
                    names.insert(name.to_string_lossy().into_owned());
                }
            }
        }
        let prefix = format!("refs/{kind}/");
        for name in self.packed_refs().await.keys() {
            if let Some(short) = name.strip_prefix(&prefix) {
                names.insert(short.to_string());
            }
        }
        names.into_iter().collect()
    }

    /// Every ref under `refs/` by its full name (`refs/heads/main`), loose
    /// and packed, sorted as git sorts them (byte order).
    pub async fn all_refs(&self) -> Vec<String> {
        let mut names = std::collections::BTreeSet::new();
        let mut pending = vec![self.git.join("refs")];
        while let Some(dir) = pending.pop() {
            for (name, is_dir) in self.io.read_dir(&dir).await.unwrap_or_default() {
                let path = dir.join(&name);
                if is_dir {
                    pending.push(path);
                } else if let Ok(name) = path.strip_prefix(&self.git) {
                    names.insert(name.to_string_lossy().into_owned());
                }
            }
        }
        names.extend(self.packed_refs().await.keys().cloned());
        names.into_iter().collect()
    }

    /// Every ref under `refs/` with its object (a loose ref over a packed
    /// one; symbolic refs followed), sorted by name.
    pub async fn refs_with_objects(&self) -> Vec<(String, Oid)> {
        let packed = self.packed_refs().await;
        let mut found = Vec::new();
        for name in self.all_refs().await {
            let path = self.git.join(&name);
            let oid = match self.io.exists(&path).await {
                true => self.read_ref(&name).await,
                false => packed.get(&name).cloned(),
            };
            if let Some(oid) = oid {
                found.push((name, oid));
            }
        }
        found
    }

    /// The commit `HEAD` names; `None` before the first commit.
    pub async fn head_commit(&self) -> Option<Oid> {
        match self.head().await {
            Head::Branch(branch) => self.branch(&branch).await,
            Head::Detached(oid) => Some(oid).filter(|o| is_oid(o)),
        }
    }

    /// Moves what `HEAD` names (its branch, or `HEAD` itself) to `oid`,
    /// with `message` in the reflogs git keeps.
    pub async fn advance_head(&self, oid: &str, message: &str) -> Res<()> {
        let old = self.head_commit().await;
        match self.head().await {
            Head::Branch(branch) => {
                self.set_ref("heads", &branch, oid).await?;
                self.log_update(
                    &format!("refs/heads/{branch}"),
                    old.as_deref(),
                    oid,
                    message,
                )
                .await?;
            }
            Head::Detached(_) => {
                self.write(&self.git.join("HEAD"), format!("{oid}\n").as_bytes())
                    .await?;
            }
        }
        self.log_update("HEAD", old.as_deref(), oid, message).await
    }

    /// Appends to `logs/<name>` as git does: where `core.logAllRefUpdates`
    /// is on (a work tree's default) or the log already exists.
    pub async fn log_update(
        &self,
        name: &str,
        old: Option<&str>,
        new: &str,
        message: &str,
    ) -> Res<()> {
        let path = self.git.join("logs").join(name);
        let exists = self.io.exists(&path).await;
        if !exists {
            let setting = self.config_value("core.logallrefupdates").await;
            let on = name == "refs/stash"
                || match setting.as_deref() {
                    Some(v) => !matches!(v.to_lowercase().as_str(), "false" | "no" | "off" | "0"),
                    None => !self.bare().await,
                };
            // git keeps these logs on; the stash's is its list.
            let kept = name == "HEAD"
                || name == "refs/stash"
                || name.starts_with("refs/heads/")
                || name.starts_with("refs/remotes/");
            if !on || !kept {
                return Ok(());
            }
        }
        let (who, when) = self.identity("COMMITTER").await;
        let line = format!(
            "{} {new} {who} {when}\t{}\n",
            old.unwrap_or(super::repo::NULL_OID),
            message.lines().next().unwrap_or("")
        );
        if let Some(parent) = path.parent() {
            self.io.mkdir_all(parent).await?;
        }
        self.io.append_file(&path, line.as_bytes()).await
    }
}

/// How a short name is looked up, in git's order (`v1` is `refs/v1`,
/// then `refs/tags/v1`, …).
const SHORTHANDS: [(&str, &str); 6] = [
    ("", ""),
    ("refs/", ""),
    ("refs/tags/", ""),
    ("refs/heads/", ""),
    ("refs/remotes/", ""),
    ("refs/remotes/", "/HEAD"),
];

/// `full` as short as it can be named without meaning another of `refs`
/// (git's unambiguous shortening: `main`, or `heads/main` when a tag
/// `main` exists too; `origin` for `refs/remotes/origin/HEAD`).
pub fn shortest_unambiguous(full: &str, refs: &[String]) -> String {
    let exists =
        |name: &str| name == "HEAD" || refs.binary_search_by(|r| r.as_str().cmp(name)).is_ok();
    for j in (1..SHORTHANDS.len()).rev() {
        let (prefix, suffix) = SHORTHANDS[j];
        let Some(short) = full
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix))
            .filter(|short| !short.is_empty())
        else {
            continue;
        };
        let ambiguous = SHORTHANDS[..j]
            .iter()
            .any(|(p, s)| exists(&format!("{p}{short}{s}")));
        if !ambiguous {
            return short.to_string();
        }
    }
    full.to_string()
}

#[cfg(test)]
mod tests {
    use super::shortest_unambiguous;

    #[test]
    fn names_shorten_until_they_would_mean_another_ref() {
        let refs: Vec<String> = [
            "refs/heads/main",
            "refs/heads/v1",
            "refs/remotes/origin/HEAD",
            "refs/tags/v1",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(shortest_unambiguous("refs/heads/main", &refs), "main");
        assert_eq!(shortest_unambiguous("refs/heads/v1", &refs), "heads/v1");
        assert_eq!(shortest_unambiguous("refs/tags/v1", &refs), "v1");
        assert_eq!(
            shortest_unambiguous("refs/remotes/origin/HEAD", &refs),
            "origin"
        );
    }
}
