//! `ls-files`, `rev-parse`, `merge-base`, `grep`, `cat-file`.

use super::*;

impl Ctx<'_> {
    pub(super) async fn ls_files(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "ls-files",
                flags: &[
                    "-c",
                    "--cached",
                    "-o",
                    "--others",
                    "--exclude-standard",
                    "-m",
                    "--modified",
                    "-d",
                    "--deleted",
                    "-s",
                    "--stage",
                    "-u",
                    "--unmerged",
                    "--full-name",
                ],
                valued: &[],
            },
        )?;
        // Without a path, what is below the current directory; each name
        // from there (`../x` for a path given above it), or from the top
        // with `--full-name`.
        let mut specs: Vec<String> = self.specs(&args.operands, &args.paths)?;
        if specs.is_empty() {
            specs.push(self.pathspec("."));
        }
        let full_name = args.has(&["--full-name"]);
        let shown = |path: &str| -> Option<String> {
            if !Self::any_match(&specs, path) {
                return None;
            }
            Some(match full_name {
                true => self.quoted(path).into_owned(),
                false => self.shown_as(path, false),
            })
        };
        let mut out = String::new();
        if args.has(&["-o", "--others"]) && !args.has(&["--exclude-standard"]) {
            // git lists ignored files here too, inside ignored directories
            // this git does not walk.
            return Err(Out::fatal(
                "not supported by the sandbox's git: ls-files --others without --exclude-standard",
            ));
        }
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
            if !state.unmerged.is_empty() {
                return Err(Out::fatal(
                    "not supported by the sandbox's git: ls-files -m or -d while paths are unmerged",
                ));
            }
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
        // Every entry of the index in its order: by path, then stage (a
        // conflicted path has one line per stage).
        let only_unmerged = args.has(&["-u", "--unmerged"]);
        let stage = args.has(&["-s", "--stage"]) || only_unmerged;
        let index = self.repo.index().await.map_err(failed)?;
        let mut entries: Vec<(String, u8, Blob)> = index
            .into_iter()
            .map(|(path, entry)| (path, 0, entry.blob))
            .collect();
        for path in self.repo.unmerged() {
            for (number, blob) in self.repo.unmerged_blobs(&path) {
                entries.push((path.clone(), number, blob));
            }
        }
        entries.sort_by(|a, b| (a.0.as_bytes(), a.1).cmp(&(b.0.as_bytes(), b.1)));
        for (path, number, blob) in entries {
            if only_unmerged && number == 0 {
                continue;
            }
            if let Some(shown) = shown(&path) {
                if stage {
                    let _ = writeln!(out, "{:o} {} {number}\t{shown}", blob.mode, blob.oid);
                } else {
                    let _ = writeln!(out, "{shown}");
                }
            }
        }
        Ok(Out::ok(out))
    }

    /// `rev-parse`: its arguments in order, each printed as it comes.
    pub(super) async fn rev_parse(&self, args: &[String]) -> Run {
        let repo = &self.repo;
        let (mut verify, mut quiet, mut abbrev_ref, mut short_len) = (false, false, false, None);
        let mut full_name = false;
        let mut names = Vec::new();
        let mut out = String::new();
        let prefix = self.pathspec(".");
        let at_top = prefix.is_empty();
        for arg in args {
            match arg.as_str() {
                "--show-toplevel" => {
                    let _ = writeln!(out, "{}", repo.root.display());
                }
                "--git-dir" if at_top => out.push_str(".git\n"),
                "--git-dir" | "--absolute-git-dir" | "--git-common-dir" => {
                    let _ = writeln!(out, "{}", repo.git.display());
                }
                "--is-inside-work-tree" => out.push_str("true\n"),
                "--is-inside-git-dir" | "--is-bare-repository" => out.push_str("false\n"),
                "--show-prefix" if at_top => out.push('\n'),
                "--show-prefix" => {
                    let _ = writeln!(out, "{prefix}/");
                }
                "--show-cdup" => {
                    let depth = if at_top { 0 } else { prefix.split('/').count() };
                    let _ = writeln!(out, "{}", "../".repeat(depth));
                }
                "--verify" => verify = true,
                "-q" | "--quiet" => quiet = true,
                "--abbrev-ref" => abbrev_ref = true,
                "--symbolic-full-name" => full_name = true,
                // `--short` is `--verify` with the name abbreviated.
                "--short" => (verify, short_len) = (true, Some(None)),
                "--" => break,
                flag if flag.starts_with("--short=") => {
                    let n = flag["--short=".len()..].parse::<usize>().map_err(|_| {
                        Out::fatal(format!("bad --short value: {}", &flag["--short=".len()..]))
                    })?;
                    (verify, short_len) = (true, Some(Some(n)));
                }
                flag if flag.starts_with('-') && flag.len() > 1 => {
                    return Err(Out::fatal(format!(
                        "not supported by the sandbox's git: rev-parse {flag}"
                    )))
                }
                name => names.push(name),
            }
        }
        // `--verify`: what one revision prints, given only when exactly one
        // single revision was named (ranges print as they come, as git's
        // do).
        let mut single: Vec<String> = Vec::new();
        let no_single_rev = |out: String| Out {
            stdout: out,
            stderr: if quiet {
                String::new()
            } else {
                "fatal: Needed a single revision\n".to_string()
            },
            code: if quiet { 1 } else { 128 },
        };
        for name in names {
            // The ref a name stands for, whole; nothing for a name that is
            // no ref (`HEAD~1`, a hash).
            if full_name && repo.resolve(name).await.is_some() {
                let full = match (name, repo.head().await) {
                    ("HEAD" | "@", Head::Branch(branch)) => Some(format!("refs/heads/{branch}")),
                    ("HEAD" | "@", Head::Detached(_)) => Some("HEAD".to_string()),
                    _ => match repo.upstream_named(name).await {
                        Some(Ok((upstream, _))) => repo.ref_named(&upstream).await.map(|(f, _)| f),
                        _ => repo.ref_named(name).await.map(|(f, _)| f),
                    },
                };
                let line = full.unwrap_or_default();
                match verify {
                    true => single.push(line),
                    false if !line.is_empty() => {
                        let _ = writeln!(out, "{line}");
                    }
                    false => {}
                }
                continue;
            }
            if abbrev_ref && repo.resolve(name).await.is_some() {
                let shown = match (name, repo.head().await) {
                    ("HEAD", Head::Branch(branch)) => branch,
                    ("HEAD", Head::Detached(_)) => "HEAD".to_string(),
                    _ => match repo.upstream_named(name).await {
                        Some(Ok((upstream, _))) => upstream,
                        _ => self.short_ref_name(name).await,
                    },
                };
                // A name that is no ref prints nothing.
                match verify {
                    true => single.push(shown),
                    false if !shown.is_empty() => {
                        let _ = writeln!(out, "{shown}");
                    }
                    false => {}
                }
                continue;
            }
            let spec = self.revspec(name).await.map_err(|fatal| Out {
                stdout: out.clone(),
                ..fatal
            })?;
            let Some(spec) = spec else {
                if let Some(why) = repo.reflog_shortfall(name).await {
                    return Err(Out {
                        stdout: out,
                        stderr: format!("fatal: {why}\n"),
                        code: 128,
                    });
                }
                if verify {
                    return Err(no_single_rev(out));
                }
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
            let counted = verify && matches!(spec, RevSpec::Include(_) | RevSpec::Exclude(_));
            for (excluded, oid) in self.tips(spec).await {
                let shown = match short_len {
                    Some(len) => repo.abbrev().await.of(&oid, len),
                    None => oid,
                };
                let line = format!("{}{shown}", if excluded { "^" } else { "" });
                match counted {
                    true => single.push(line),
                    false => {
                        let _ = writeln!(out, "{line}");
                    }
                }
            }
        }
        if verify {
            match single.as_slice() {
                [line] if !line.is_empty() => {
                    let _ = writeln!(out, "{line}");
                }
                [_] => {}
                _ => return Err(no_single_rev(out)),
            }
        }
        Ok(Out::ok(out))
    }

    /// `check-ignore [-q] PATH…`: the paths `.gitignore` and friends
    /// leave out (never a tracked one); exit status 1 when none is.
    pub(super) async fn check_ignore(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "check-ignore",
                flags: &["-q", "--quiet", "-v", "--verbose", "-n", "--non-matching"],
                valued: &[],
            },
        )?;
        let verbose = args.has(&["-v", "--verbose"]);
        let non_matching = args.has(&["-n", "--non-matching"]);
        if non_matching && !verbose {
            return Err(Out::fatal("--non-matching is only valid with --verbose"));
        }
        if verbose && args.has(&["-q", "--quiet"]) {
            return Err(Out::fatal("cannot have both --quiet and --verbose"));
        }
        let given: Vec<&str> = args.operands.iter().chain(&args.paths).copied().collect();
        if given.is_empty() {
            return Err(Out::fatal("no path specified"));
        }
        if given.len() > 1 && args.has(&["-q", "--quiet"]) {
            return Err(Out::fatal("--quiet is only valid with a single pathname"));
        }
        let index = self.repo.index().await.map_err(failed)?;
        let mut out = String::new();
        let mut ignored = 0;
        for path in given {
            let relative = self.inside(path)?;
            let is_dir = self
                .repo
                .fs
                .stat(&resolve(&self.here.cwd, path))
                .await
                .is_ok_and(|m| m.file_type.is_dir());
            // A tracked path is never ignored; -v shows a negation too.
            let found = match index.contains_key(&relative) {
                true => None,
                false => self.repo.ignoring(&relative, is_dir).await,
            }
            .filter(|found| verbose || !found.negative);
            match (&found, verbose) {
                (Some(found), true) => {
                    ignored += 1;
                    // `.git/info/exclude` as git names it, from the root.
                    let source = found.source.as_deref().map(|source| {
                        source
                            .strip_prefix(&self.repo.root)
                            .unwrap_or(source)
                            .display()
                            .to_string()
                    });
                    let _ = writeln!(
                        out,
                        "{}:{}:{}\t{}",
                        self.quoted(&source.unwrap_or_default()),
                        found.line,
                        found.pattern,
                        self.quoted(path)
                    );
                }
                (Some(_), false) => {
                    ignored += 1;
                    let _ = writeln!(out, "{}", self.quoted(path));
                }
                (None, _) if non_matching => {
                    let _ = writeln!(out, "::\t{}", self.quoted(path));
                }
                (None, _) => {}
            }
        }
        let code = i32::from(ignored == 0);
        if args.has(&["-q", "--quiet"]) {
            out.clear();
        }
        Ok(Out {
            stdout: out,
            stderr: String::new(),
            code,
        })
    }

    /// The ref `name` names, without `refs/heads/` and the like (empty
    /// for a name that is no ref, as `HEAD~1`): `rev-parse --abbrev-ref`.
    async fn short_ref_name(&self, name: &str) -> String {
        let Some((full, _)) = self.repo.ref_named(name).await else {
            return String::new();
        };
        let short = ["refs/heads/", "refs/tags/", "refs/remotes/", "refs/"]
            .iter()
            .find_map(|prefix| full.strip_prefix(prefix))
            .unwrap_or(&full);
        short.strip_suffix("/HEAD").unwrap_or(short).to_string()
    }

    pub(super) async fn merge_base(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "merge-base",
                flags: &["--is-ancestor"],
                valued: &[],
            },
        )?;
        let [a, b] = args.operands.as_slice() else {
            return Err(Out::error("usage: git merge-base <commit> <commit>\n", 129));
        };
        let (a, b) = (self.revision(a).await?, self.revision(b).await?);
        if args.has(&["--is-ancestor"]) {
            let is = a == b || crate::merge::is_ancestor(&self.repo, &a, &b).await;
            return Err(Out::error("", i32::from(!is))).or_else(|out| match out.code {
                0 => Ok(Out::ok("")),
                _ => Err(out),
            });
        }
        match crate::merge::base(&self.repo, &a, &b).await {
            Some(oid) => Ok(Out::ok(format!("{oid}\n"))),
            None => Err(Out::error("", 1)),
        }
    }

    pub(super) async fn grep(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "grep",
                // `-I`: binary files are never searched here.
                flags: &[
                    "-F",
                    "--fixed-strings",
                    "-E",
                    "--extended-regexp",
                    "-P",
                    "--perl-regexp",
                    "-G",
                    "--basic-regexp",
                    "-w",
                    "--word-regexp",
                    "-i",
                    "--ignore-case",
                    "-n",
                    "--line-number",
                    "-l",
                    "--files-with-matches",
                    "--name-only",
                    "-c",
                    "--count",
                    "-v",
                    "--invert-match",
                    "-I",
                    "-h",
                    "-H",
                    "--full-name",
                    "-o",
                    "--only-matching",
                    "-q",
                    "--quiet",
                    "-L",
                    "--files-without-match",
                ],
                valued: &[&["-e"]],
            },
        )?;
        let mut operands = args.operands.iter();
        let patterns: Vec<&str> = match args.value("-e") {
            // Each `-e` is one pattern; a line matching any is a hit.
            Some(given) => given.split('\n').collect(),
            None => operands.next().copied().into_iter().collect(),
        };
        if patterns.is_empty() {
            return Err(Out::fatal("no pattern given"));
        }
        let pattern = patterns.join("\n");
        let pattern = pattern.as_str();
        // git searches a revision named before the paths; this git the
        // work tree only.
        for operand in operands.as_slice() {
            let is_path = self
                .repo
                .fs
                .exists(&resolve(&self.here.cwd, operand))
                .await
                .unwrap_or(false);
            if is_path {
                continue;
            }
            return Err(match self.repo.resolve(operand).await {
                Some(_) => Out::fatal(format!(
                    "not supported by the sandbox's git: grep in a revision ({operand})"
                )),
                None => Out::fatal(format!(
                    "ambiguous argument '{operand}': unknown revision or path not in the working tree."
                )),
            });
        }
        // Without a path, git searches where it is run, and names files
        // from there (`--full-name`: from the top).
        let mut specs: Vec<String> = self.specs(operands.as_slice(), &args.paths)?;
        if specs.is_empty() {
            specs.push(self.pathspec("."));
        }
        let one = |pattern: &str| {
            if args.has(&["-F", "--fixed-strings"]) {
                regex::escape(pattern)
            } else if args.has(&["-E", "--extended-regexp", "-P", "--perl-regexp"]) {
                pattern.to_string()
            } else {
                text::basic_regex(pattern)
            }
        };
        let source = patterns
            .iter()
            .map(|p| format!("(?:{})", one(p)))
            .collect::<Vec<_>>()
            .join("|");
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
        let binary_regex = regex::bytes::RegexBuilder::new(&source)
            .case_insensitive(args.has(&["-i", "--ignore-case"]))
            .size_limit(1 << 20)
            .build()
            .map_err(|e| Out::fatal(format!("command line, '{pattern}': {e}")))?;
        // The whole file searched at once first (lines as `(?m)` sees
        // them): a file with no match anywhere has no line that matches,
        // and most files have none, so only those that do are read by line.
        let anywhere = regex::bytes::RegexBuilder::new(&source)
            .case_insensitive(args.has(&["-i", "--ignore-case"]))
            .multi_line(true)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| Out::fatal(format!("command line, '{pattern}': {e}")))?;
        let numbered = args.has(&["-n", "--line-number"]);
        let without_match = args.has(&["-L", "--files-without-match"]);
        let quiet = args.has(&["-q", "--quiet"]);
        // Only names (`-l`, `-L`) or nothing (`-q`) is printed per file.
        let names_only =
            args.has(&["-l", "--files-with-matches", "--name-only"]) || without_match || quiet;
        let count = args.has(&["-c", "--count"]);
        let invert = args.has(&["-v", "--invert-match"]);
        // `-o` prints each match; with `-v` the lines, as git does.
        let only_matching = args.has(&["-o", "--only-matching"]) && !invert;
        // `-h`: no file names before lines or counts (`-H`, names, is
        // git's default).
        let named = args.last(&["-h", "-H"]) != Some("-h");
        let full_name = args.has(&["--full-name"]);
        let mut out = String::new();
        for (path, entry) in self.repo.index().await.map_err(failed)? {
            if !Self::any_match(&specs, &path) || entry.blob.mode == 0o120000 {
                continue;
            }
            let Ok(bytes) = self.repo.content(&path, entry.blob.mode).await else {
                continue;
            };
            let utf8 = std::str::from_utf8(&bytes).ok();
            // (Bytes that are not UTF-8 read differently by line: no skip.)
            let name = match full_name {
                true => self.quoted(&path).into_owned(),
                false => self.shown_as(&path, false),
            };
            if !invert && utf8.is_some() && !anywhere.is_match(&bytes) {
                if without_match {
                    let _ = writeln!(out, "{name}");
                }
                continue;
            }
            // What goes before a line or a count.
            let lead = if named {
                format!("{name}:")
            } else {
                String::new()
            };
            // A binary file: searched line by line as bytes; a match is
            // named (`Binary file X matches`), never printed. `-I` skips it.
            if bytes.iter().take(8000).any(|&b| b == 0) {
                if args.has(&["-I"]) {
                    continue;
                }
                // Lines as git reads them: no empty one after the last newline.
                let text = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
                let hits = text
                    .split(|&b| b == b'\n')
                    .filter(|line| binary_regex.is_match(line) != invert)
                    .count();
                if without_match {
                    if hits == 0 {
                        let _ = writeln!(out, "{name}");
                    }
                } else if hits > 0 && names_only {
                    let _ = writeln!(out, "{name}");
                } else if hits > 0 && count {
                    let _ = writeln!(out, "{lead}{hits}");
                } else if hits > 0 {
                    let _ = writeln!(out, "Binary file {name} matches");
                }
                if quiet && hits > 0 {
                    break;
                }
                continue;
            }
            let content = match utf8 {
                Some(text) => std::borrow::Cow::Borrowed(text),
                None => String::from_utf8_lossy(&bytes),
            };
            let mut hits = 0;
            let lines: Vec<(usize, &str)> = match (utf8, invert) {
                (Some(text), false) => matching_lines(&anywhere, &regex, text),
                _ => content
                    .split_inclusive('\n')
                    .map(|l| l.strip_suffix('\n').unwrap_or(l))
                    .enumerate()
                    .filter(|(_, line)| regex.is_match(line) != invert)
                    .map(|(number, line)| (number + 1, line))
                    .collect(),
            };
            for (number, line) in lines {
                hits += 1;
                if names_only || count {
                    continue;
                }
                let lead = match numbered {
                    true => format!("{lead}{number}:"),
                    false => lead.clone(),
                };
                if only_matching {
                    // git stops at the line's first empty match.
                    for found in regex.find_iter(line).take_while(|m| !m.is_empty()) {
                        let _ = writeln!(out, "{lead}{}", found.as_str());
                    }
                } else {
                    let _ = writeln!(out, "{lead}{line}");
                }
            }
            // git prints the file's bytes as they are; these would not be.
            if hits > 0 && !(names_only || count) && utf8.is_none() {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: grep printing lines of {path}, which is not UTF-8 text"
                )));
            }
            if without_match {
                if hits == 0 {
                    let _ = writeln!(out, "{name}");
                }
            } else if hits > 0 && names_only {
                let _ = writeln!(out, "{name}");
            } else if hits > 0 && count {
                let _ = writeln!(out, "{lead}{hits}");
            }
            if quiet && hits > 0 {
                break;
            }
        }
        let code = i32::from(out.is_empty());
        Ok(Out {
            stdout: if quiet { String::new() } else { out },
            stderr: String::new(),
            code,
        })
    }

    /// `git count-objects [-v] [-H]`: the loose objects and their size on
    /// disk; with `-v` the packs too, and what does not belong.
    pub(super) async fn count_objects(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "count-objects",
                flags: &["-v", "--verbose", "-H", "--human-readable"],
                valued: &[],
            },
        )?;
        if !args.operands.is_empty() || !args.paths.is_empty() {
            return Err(Out::error(
                "usage: git count-objects [-v] [-H | --human-readable]\n",
                129,
            ));
        }
        let census = self.repo.census().await;
        let human = args.has(&["-H", "--human-readable"]);
        let size = |bytes: u64| match human {
            true => humanise(bytes),
            false => (bytes / 1024).to_string(),
        };
        if !args.has(&["-v", "--verbose"]) {
            let loose = match human {
                true => humanise(census.loose_disk),
                false => format!("{} kilobytes", census.loose_disk / 1024),
            };
            return Ok(Out::ok(format!("{} objects, {loose}\n", census.loose)));
        }
        if census.alternates {
            return Err(Out::error(
                "fatal: not supported by the sandbox's git: count-objects -v with alternates\n",
                128,
            ));
        }
        let garbage_bytes: u64 = census.garbage.iter().map(|(_, size)| size).sum();
        let warnings: String = census
            .garbage
            .iter()
            .map(|(path, _)| format!("warning: garbage found: {}\n", path.display()))
            .collect();
        Ok(Out::ok(format!(
            "count: {}\nsize: {}\nin-pack: {}\npacks: {}\nsize-pack: {}\nprune-packable: {}\ngarbage: {}\nsize-garbage: {}\n",
            census.loose,
            size(census.loose_disk),
            census.in_pack,
            census.packs,
            size(census.pack_bytes),
            census.packed_loose,
            census.garbage.len(),
            size(garbage_bytes),
        ))
        .with_stderr(warnings))
    }

    pub(super) async fn cat_file(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "cat-file",
                flags: &["-t", "-s", "-p", "-e"],
                valued: &[],
            },
        )?;
        let usage = || {
            Out::error(
                "usage: git cat-file (-t | -s | -e | -p | <type>) <object>\n",
                129,
            )
        };
        let modes = ["-t", "-s", "-p", "-e"]
            .iter()
            .filter(|m| args.has(&[m]))
            .count();
        if modes > 1 {
            return Err(usage());
        }
        let mode_given = modes == 1;
        let (wanted_kind, name) = match args.operands.as_slice() {
            [name] if mode_given => (None, *name),
            [kind, name] if !mode_given => (Some(*kind), *name),
            _ => return Err(usage()),
        };
        if args.has(&["-e"]) {
            return match self.repo.resolve(name).await {
                Some(oid) if self.repo.read_object(&oid).await.is_ok() => Ok(Out::ok("")),
                _ => Err(Out::error("", 1)),
            };
        }
        let oid = match self.repo.resolve(name).await {
            Some(oid) => oid,
            None if name.len() == 40 => name.to_string(),
            None => return Err(Out::fatal(format!("Not a valid object name {name}"))),
        };
        let (kind, body) = self.repo.read_object(&oid).await.map_err(failed)?;
        if let Some(wanted) = wanted_kind.filter(|w| *w != kind) {
            return Err(Out::fatal(format!(
                "git cat-file {name}: bad file (a {kind}, not a {wanted})"
            )));
        }
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
                let _ = writeln!(out, "{mode:06o} {kind} {child}\t{}", self.quoted(&name));
            }
            return Ok(Out::ok(out));
        }
        Ok(Out::ok(String::from_utf8_lossy(&body).into_owned()))
    }
}

/// A size as git's `-H` prints it: `1.50 KiB`, `12.34 MiB`, `3 bytes`.
fn humanise(bytes: u64) -> String {
    if bytes > 1 << 30 {
        format!(
            "{}.{:02} GiB",
            bytes >> 30,
            (bytes & ((1 << 30) - 1)) / 10_737_419
        )
    } else if bytes > 1 << 20 {
        let x = bytes + 5243;
        format!("{}.{:02} MiB", x >> 20, ((x & ((1 << 20) - 1)) * 100) >> 20)
    } else if bytes > 1 << 10 {
        let x = bytes + 5;
        format!("{}.{:02} KiB", x >> 10, ((x & ((1 << 10) - 1)) * 100) >> 10)
    } else if bytes == 1 {
        "1 byte".to_string()
    } else {
        format!("{bytes} bytes")
    }
}

/// The lines of `text` that `regex` matches, numbered from 1, as a loop
/// over lines finds them; but found by searching the whole text with
/// `anywhere` (the same pattern, `^`/`$` at line ends), so only the lines
/// it stops in are looked at alone: most of a file matches nothing.
fn matching_lines<'t>(
    anywhere: &regex::bytes::Regex,
    regex: &regex::Regex,
    text: &'t str,
) -> Vec<(usize, &'t str)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    // Where the search goes on from (a line's start), and the number of
    // the line that starts at `counted`.
    let (mut from, mut counted, mut number) = (0, 0, 1);
    while from < bytes.len() {
        let Some(hit) = anywhere.find_at(bytes, from) else {
            break;
        };
        let start =
            memchr::memrchr(b'\n', &bytes[from..hit.start()]).map_or(from, |i| from + i + 1);
        // After the last newline there is no line (`^$` matches there).
        if start == bytes.len() {
            break;
        }
        let end =
            memchr::memchr(b'\n', &bytes[hit.start()..]).map_or(bytes.len(), |i| hit.start() + i);
        number += memchr::memchr_iter(b'\n', &bytes[counted..start]).count();
        counted = start;
        // A match may run past its line's end; the line alone decides.
        let line = &text[start..end];
        if regex.is_match(line) {
            found.push((number, line));
        }
        from = end + 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::matching_lines;

    #[test]
    fn lines_found_in_the_whole_text_are_the_lines_a_loop_finds() {
        let texts = [
            "",
            "\n",
            "a\n",
            "no newline at the end",
            "one\ntwo\n\nthree two\r\nfour",
            "x\n\n\nx\nxx\n",
            "été\nnaïve café\n\n",
            "a b\na\nb\n",
        ];
        let patterns = [
            "two", "^", "$", "^$", "x*", r"\s", r"a\sb", "é", "^t", r"e\b", "[^a]", ".", "o$",
        ];
        for pattern in patterns {
            let regex = regex::Regex::new(pattern).unwrap();
            let anywhere = regex::bytes::RegexBuilder::new(pattern)
                .multi_line(true)
                .build()
                .unwrap();
            for text in texts {
                let looped: Vec<(usize, &str)> = text
                    .split_inclusive('\n')
                    .map(|l| l.strip_suffix('\n').unwrap_or(l))
                    .enumerate()
                    .filter(|(_, line)| regex.is_match(line))
                    .map(|(n, line)| (n + 1, line))
                    .collect();
                assert_eq!(
                    matching_lines(&anywhere, &regex, text),
                    looped,
                    "{pattern:?} in {text:?}"
                );
            }
        }
    }
}
