//! The configuration keys that make git run a program, in one place with
//! the reason for each. A repository's config is read by real git on the
//! host too (a mount of the user's checkout), so our git never writes one
//! of these, whoever asks (`git config`, `remote add`, a clone): a value
//! already there stays, a new one is refused before anything is written.

use super::config;
use super::error::Error;

/// Why setting `key` (canonical: `section[.sub].name`, section and name
/// lowercased) to `value` would make git run a program, if it would.
pub fn why(key: &str, value: &str) -> Option<&'static str> {
    let (section, rest) = key.split_once('.')?;
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    let boolean = is_boolean(value);
    Some(match (section, sub, name) {
        ("core", None, "fsmonitor") if !boolean => "a hook git runs at every status",
        ("core", None, "hookspath") => "where git looks for the hooks it runs",
        ("core", None, "pager") => "the program git pipes its output through",
        ("core", None, "editor") => "the program git opens for messages",
        ("core", None, "sshcommand") => "the program git runs to reach ssh remotes",
        ("core", None, "askpass") => "the program git runs to ask for a password",
        ("core", None, "gitproxy") => "the program git runs to reach git:// remotes",
        ("core", None, "alternaterefscommand") => "a command git runs for alternates' refs",
        ("core", None, "worktree") => {
            "moves checkouts to any directory (where they can plant code)"
        }
        ("sequence", None, "editor") => "the program git opens for rebase's todo list",
        ("diff", None, "external") => "the program git runs to show diffs",
        ("diff", Some(_), "command" | "textconv") => "a program a diff driver runs",
        ("diff" | "merge", None, "tool" | "guitool") => "the tool `difftool`/`mergetool` runs",
        ("difftool" | "mergetool", Some(_), "cmd" | "path") => "a tool's command line",
        ("merge", Some(_), "driver") => "a program a merge driver runs",
        ("filter", Some(_), "clean" | "smudge" | "process") => "a program a filter runs on content",
        ("alias", None, _) if value.trim_start().starts_with('!') => "an alias that runs a shell",
        ("credential", _, "helper") => "a program git runs for credentials",
        ("gpg", _, "program") => "the program git runs to sign and verify",
        ("gpg", Some("ssh"), "defaultkeycommand") => "a command git runs to pick a signing key",
        ("include", None, "path") | ("includeif", Some(_), "path") => {
            "another config file, which may set any of these"
        }
        ("uploadpack", None, "packobjectshook") => "a program git runs to serve fetches",
        ("remote", Some(_), "uploadpack" | "receivepack") => "a program git runs for the remote",
        ("remote", Some(_), "vcs") => "a remote helper git runs",
        ("protocol", None, "allow") if value.eq_ignore_ascii_case("always") => {
            "allows the ext:: transport, which runs commands"
        }
        ("protocol", Some(p), "allow")
            if p.eq_ignore_ascii_case("ext") && !value.eq_ignore_ascii_case("never") =>
        {
            "allows the ext:: transport, which runs commands"
        }
        ("pager", _, _) if !boolean => "the program a command pipes through",
        ("interactive", None, "difffilter") => "a program `add -p` pipes diffs through",
        ("web", None, "browser") => "the browser git starts",
        ("browser" | "man", Some(_), "cmd" | "path") => "a viewer's command line",
        ("man", None, "viewer") => "the program `git help` starts",
        ("sendemail", _, "smtpserver" | "sendmailcmd" | "tocmd" | "cccmd" | "headercmd") => {
            "a program send-email runs"
        }
        ("instaweb", None, "httpd" | "browser") => "a program instaweb starts",
        ("guitool", Some(_), "cmd") => "a command git gui runs",
        ("hook", Some(_), "command") => "a hook git runs",
        ("submodule", Some(_), "update") if value.trim_start().starts_with('!') => {
            "a command `submodule update` runs"
        }
        ("lfs", Some(_), "path" | "clean" | "smudge") => "a program git-lfs runs on content",
        _ => return None,
    })
}

fn is_boolean(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
    )
}

/// Refuses a config edit (`old` to `new`) that adds a key git would run
/// a program for; those already in `old` stay as they are.
pub fn check_edit(old: &str, new: &str) -> Result<(), Error> {
    let mut kept: Vec<(String, String)> = config::parse(old)
        .into_iter()
        .map(|(k, v)| (config::canonical(&k), v))
        .collect();
    for (key, value) in config::parse(new) {
        let key = config::canonical(&key);
        if let Some(at) = kept.iter().position(|(k, v)| *k == key && *v == value) {
            kept.swap_remove(at);
            continue;
        }
        if let Some(reason) = why(&key, &value) {
            return Err(Error::RunsProgram { key, reason });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys `git help config` describes as naming a program or
    /// command git runs (git 2.39-2.47), and a value for each.
    const DOCUMENTED: &[(&str, &str)] = &[
        ("core.fsmonitor", "/tmp/x"),
        ("core.hooksPath", "h"),
        ("core.pager", "less"),
        ("core.editor", "vi"),
        ("core.sshCommand", "ssh -i k"),
        ("core.askPass", "/bin/pw"),
        ("core.gitProxy", "proxy"),
        ("core.alternateRefsCommand", "cmd"),
        ("core.worktree", "/home"),
        ("sequence.editor", "vi"),
        ("diff.external", "d"),
        ("diff.word.command", "d"),
        ("diff.word.textconv", "d"),
        ("diff.tool", "vimdiff"),
        ("merge.tool", "vimdiff"),
        ("diff.guitool", "meld"),
        ("difftool.x.cmd", "d"),
        ("difftool.x.path", "d"),
        ("mergetool.x.cmd", "m"),
        ("mergetool.x.path", "m"),
        ("merge.ours.driver", "true"),
        ("filter.lfs.clean", "c"),
        ("filter.lfs.smudge", "s"),
        ("filter.lfs.process", "p"),
        ("alias.st", "!sh -c x"),
        ("credential.helper", "store"),
        ("credential.https://example.com.helper", "store"),
        ("gpg.program", "gpg"),
        ("gpg.ssh.program", "ssh-keygen"),
        ("gpg.x509.program", "gpgsm"),
        ("gpg.ssh.defaultKeyCommand", "k"),
        ("include.path", "other"),
        ("includeIf.gitdir:/x/.path", "other"),
        ("uploadpack.packObjectsHook", "h"),
        ("remote.origin.uploadpack", "u"),
        ("remote.origin.receivepack", "r"),
        ("remote.origin.vcs", "hg"),
        ("protocol.allow", "always"),
        ("protocol.ext.allow", "user"),
        ("pager.log", "less -S"),
        ("interactive.diffFilter", "f"),
        ("web.browser", "firefox"),
        ("browser.x.cmd", "b"),
        ("browser.x.path", "b"),
        ("man.viewer", "v"),
        ("man.x.cmd", "v"),
        ("sendemail.smtpServer", "/usr/sbin/sendmail"),
        ("sendemail.sendmailCmd", "s"),
        ("sendemail.toCmd", "t"),
        ("sendemail.work.ccCmd", "c"),
        ("sendemail.headerCmd", "h"),
        ("instaweb.httpd", "h"),
        ("guitool.x.cmd", "g"),
        ("hook.lint.command", "l"),
        ("submodule.s.update", "!x"),
        ("lfs.customtransfer.x.path", "p"),
    ];

    #[test]
    fn every_documented_key_that_runs_a_program_is_refused() {
        for (key, value) in DOCUMENTED {
            let key = config::canonical(key);
            assert!(why(&key, value).is_some(), "{key} = {value}");
        }
    }

    #[test]
    fn everyday_keys_are_written() {
        for (key, value) in [
            ("user.name", "A"),
            ("core.fsmonitor", "false"),
            ("pager.log", "false"),
            ("alias.st", "status"),
            ("protocol.file.allow", "always"),
            ("protocol.ext.allow", "never"),
            ("remote.origin.url", "https://example.com/r.git"),
            ("branch.main.merge", "refs/heads/main"),
            ("submodule.s.update", "rebase"),
            ("core.autocrlf", "input"),
        ] {
            assert!(why(&config::canonical(key), value).is_none(), "{key}");
        }
    }

    #[test]
    fn an_edit_keeps_what_was_there_and_refuses_what_it_adds() {
        let old = "[core]\n\teditor = vim\n[user]\n\tname = A\n";
        assert!(check_edit(old, &config::set(old, "user.name", "B")).is_ok());
        assert!(check_edit(old, &config::set(old, "core.pager", "less")).is_err());
        assert!(check_edit(old, &config::set(old, "core.editor", "nano")).is_err());
        let aliased = config::add(old, "alias.x", "!touch /tmp/p");
        assert!(check_edit(old, &aliased)
            .unwrap_err()
            .to_string()
            .contains("alias.x"));
    }
}
