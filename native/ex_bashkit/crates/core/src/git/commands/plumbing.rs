//! `ls-files`, `rev-parse`, `merge-base`, `grep`, `cat-file`.

use super::*;

impl Ctx<'_> {
    pub(super) async fn ls_files(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let prefix = self.pathspec(".");
        let specs: Vec<String> = self.specs(&args.operands, &args.paths);
        let shown = |path: &str| -> Option<String> {
            if !Self::any_match(&specs, path) {
                return None;
            }
            if prefix.is_empty() {
                Some(path.to_string())
            } else {
                path.strip_prefix(&format!("{prefix}/")).map(str::to_string)
            }
        };
        let mut out = String::new();
        if args.has(&["-o", "--others"]) {
            let state = self.state().await?;
            let standard = args.has(&["--exclude-standard"]);
            let others = state
                .work
                .iter()
                .filter(|(p, f)| !(state.index.contains_key(*p) || standard && f.ignored))
                .map(|(p, _)| p);
            for path in others {
                if let Some(shown) = shown(path) {
                    let _ = writeln!(out, "{shown}");
                }
            }
            return Ok(Out::ok(out));
        }
        if args.has(&["-m", "--modified", "-d", "--deleted"]) {
            let state = self.state().await?;
            let wanted = if args.has(&["-d", "--deleted"]) {
                'D'
            } else {
                'M'
            };
            for (code, path) in state.unstaged() {
                // A deleted file is modified too, as git lists it.
                if code == wanted || wanted == 'M' {
                    if let Some(shown) = shown(&path) {
                        let _ = writeln!(out, "{shown}");
                    }
                }
            }
            return Ok(Out::ok(out));
        }
        let stage = args.has(&["-s", "--stage"]);
        for (path, entry) in self.repo.index().await.map_err(failed)? {
            if let Some(shown) = shown(&path) {
                if stage {
                    let _ = writeln!(out, "{:o} {} 0\t{shown}", entry.blob.mode, entry.blob.oid);
                } else {
                    let _ = writeln!(out, "{shown}");
                }
            }
        }
        Ok(Out::ok(out))
    }

    pub(super) async fn rev_parse(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let repo = &self.repo;
        let mut out = String::new();
        for flag in &args.flags {
            match *flag {
                "--show-toplevel" => {
                    let _ = writeln!(out, "{}", repo.root.display());
                }
                "--git-dir" => out.push_str(".git\n"),
                "--is-inside-work-tree" => out.push_str("true\n"),
                "--is-inside-git-dir" => out.push_str("false\n"),
                "--show-prefix" => {
                    let prefix = self.pathspec(".");
                    let _ = writeln!(
                        out,
                        "{}",
                        if prefix.is_empty() {
                            prefix
                        } else {
                            format!("{prefix}/")
                        }
                    );
                }
                _ => {}
            }
        }
        let abbreviated = args.has(&["--abbrev-ref"]);
        let shortened = args.has(&["--short"]);
        for name in &args.operands {
            if abbreviated && *name == "HEAD" && repo.head_commit().await.is_some() {
                match repo.head().await {
                    Head::Branch(branch) => {
                        let _ = writeln!(out, "{branch}");
                    }
                    Head::Detached(_) => out.push_str("HEAD\n"),
                }
                continue;
            }
            let Some(oid) = repo.resolve(name).await else {
                return Err(Out {
                    stdout: format!("{out}{name}\n"),
                    stderr: format!(
                        "fatal: ambiguous argument '{name}': unknown revision or path not in the working tree.\n\
                         Use '--' to separate paths from revisions, like this:\n\
                         'git <command> [<revision>...] -- [<file>...]'\n"
                    ),
                    code: 128,
                });
            };
            let _ = writeln!(out, "{}", if shortened { short(&oid) } else { &oid });
        }
        Ok(Out::ok(out))
    }

    pub(super) async fn merge_base(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let [a, b] = args.operands.as_slice() else {
            return Err(Out::error("usage: git merge-base <commit> <commit>\n", 129));
        };
        let (a, b) = (self.revision(a).await?, self.revision(b).await?);
        match crate::git::merge::base(&self.repo, &a, &b).await {
            Some(oid) => Ok(Out::ok(format!("{oid}\n"))),
            None => Err(Out::error("", 1)),
        }
    }

    pub(super) async fn grep(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[&["-e"]])?;
        let mut operands = args.operands.iter();
        let Some(pattern) = args.value("-e").or_else(|| operands.next().copied()) else {
            return Err(Out::fatal("no pattern given"));
        };
        let specs: Vec<String> = self.specs(operands.as_slice(), &args.paths);
        let source = if args.has(&["-F", "--fixed-strings"]) {
            regex::escape(pattern)
        } else if args.has(&["-E", "--extended-regexp", "-P", "--perl-regexp"]) {
            pattern.to_string()
        } else {
            text::basic_regex(pattern)
        };
        let source = if args.has(&["-w", "--word-regexp"]) {
            format!(r"\b(?:{source})\b")
        } else {
            source
        };
        let regex = regex::RegexBuilder::new(&source)
            .case_insensitive(args.has(&["-i", "--ignore-case"]))
            .size_limit(1 << 20)
            .build()
            .map_err(|e| Out::fatal(format!("command line, '{pattern}': {e}")))?;
        let numbered = args.has(&["-n", "--line-number"]);
        let names_only = args.has(&["-l", "--files-with-matches", "--name-only"]);
        let count = args.has(&["-c", "--count"]);
        let invert = args.has(&["-v", "--invert-match"]);
        let mut out = String::new();
        for (path, entry) in self.repo.index().await.map_err(failed)? {
            if !Self::any_match(&specs, &path) || entry.blob.mode == 0o120000 {
                continue;
            }
            let Ok(bytes) = self.repo.content(&path, entry.blob.mode).await else {
                continue;
            };
            if bytes.iter().take(8000).any(|&b| b == 0) {
                continue;
            }
            let content = String::from_utf8_lossy(&bytes);
            let mut hits = 0;
            for (number, line) in content.lines().enumerate() {
                if regex.is_match(line) == invert {
                    continue;
                }
                hits += 1;
                if names_only || count {
                    continue;
                }
                if numbered {
                    let _ = writeln!(out, "{path}:{}:{line}", number + 1);
                } else {
                    let _ = writeln!(out, "{path}:{line}");
                }
            }
            if hits > 0 && names_only {
                let _ = writeln!(out, "{path}");
            } else if hits > 0 && count {
                let _ = writeln!(out, "{path}:{hits}");
            }
        }
        let code = i32::from(out.is_empty());
        Ok(Out {
            stdout: out,
            stderr: String::new(),
            code,
        })
    }

    pub(super) async fn cat_file(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let Some(name) = args.operands.last() else {
            return Err(Out::error(
                "usage: git cat-file (-t | -s | -p) <object>\n",
                129,
            ));
        };
        let oid = match self.repo.resolve(name).await {
            Some(oid) => oid,
            None if name.len() == 40 => name.to_string(),
            None => return Err(Out::fatal(format!("Not a valid object name {name}"))),
        };
        let (kind, body) = self.repo.read_object(&oid).await.map_err(failed)?;
        if args.has(&["-t"]) {
            return Ok(Out::ok(format!("{kind}\n")));
        }
        if args.has(&["-s"]) {
            return Ok(Out::ok(format!("{}\n", body.len())));
        }
        if kind == "tree" {
            // The tree's own entries, as stored (git does not recurse).
            let mut out = String::new();
            for (name, mode, child) in self.repo.tree_entries(&oid).await.map_err(failed)? {
                let kind = match mode {
                    0o40000 => "tree",
                    0o160000 => "commit",
                    _ => "blob",
                };
                let _ = writeln!(out, "{mode:06o} {kind} {child}\t{name}");
            }
            return Ok(Out::ok(out));
        }
        Ok(Out::ok(String::from_utf8_lossy(&body).into_owned()))
    }
}
