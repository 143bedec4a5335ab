//! `.mailmap`: the names and addresses a project wants shown for the
//! ones its commits were made with, applied where git applies them (the
//! `Author:`/`Commit:` lines of `log` and `show` with `log.mailmap`, its
//! default; `%aN`/`%aE`/`%aL` and the committer's; `--author` and
//! `--committer` matching; `shortlog`; `blame`).

use std::collections::HashMap;

use super::repo::Signature;

/// What one line of `.mailmap` replaces with: a name, an address, or both.
#[derive(Clone, Default)]
struct Replacement {
    name: Option<String>,
    email: Option<String>,
}

/// Everything given for one address (looked up without case).
#[derive(Default)]
struct Entry {
    /// For this address under any name.
    any: Replacement,
    /// For this address under one name (without case).
    by_name: HashMap<String, Replacement>,
}

/// A parsed `.mailmap`.
#[derive(Default)]
pub struct Mailmap {
    entries: HashMap<String, Entry>,
}

impl Mailmap {
    /// Adds the lines of a mailmap file, as git reads them: `Proper Name
    /// <commit@email>`, `<proper@email> <commit@email>`, `Proper Name
    /// <proper@email> <commit@email>`, `Proper Name <proper@email> Commit
    /// Name <commit@email>`; `#` starts a comment line.
    pub fn add(&mut self, text: &str) {
        for line in text.lines() {
            if line.starts_with('#') {
                continue;
            }
            let Some((new_name, new_email, rest)) = name_and_email(line, false) else {
                continue;
            };
            let (old_name, old_email) = match rest.and_then(|rest| name_and_email(rest, true)) {
                Some((name, email, _)) => (name, Some(email)),
                None => (None, None),
            };
            let (new_email, old_email) = match old_email {
                Some(old) => (Some(new_email), old),
                None => (None, new_email),
            };
            let entry = self.entries.entry(old_email.to_lowercase()).or_default();
            let replacement = Replacement {
                name: new_name.map(str::to_string),
                email: new_email.map(str::to_string),
            };
            match old_name {
                Some(old_name) => {
                    entry.by_name.insert(old_name.to_lowercase(), replacement);
                }
                None => {
                    if replacement.name.is_some() {
                        entry.any.name = replacement.name;
                    }
                    if replacement.email.is_some() {
                        entry.any.email = replacement.email;
                    }
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `who` as the mailmap names them.
    pub fn map(&self, who: &Signature) -> Signature {
        let mut mapped = who.clone();
        let Some(entry) = self.entries.get(&who.email.to_lowercase()) else {
            return mapped;
        };
        let replacement = entry
            .by_name
            .get(&who.name.to_lowercase())
            .unwrap_or(&entry.any);
        if let Some(email) = &replacement.email {
            mapped.email = email.clone();
        }
        if let Some(name) = &replacement.name {
            mapped.name = name.clone();
        }
        mapped
    }
}

/// `Name <email>` at the start of `text`: the name trimmed (`None` when
/// empty), the address, and what follows the `>` if anything does.
fn name_and_email(text: &str, empty_email_ok: bool) -> Option<(Option<&str>, &str, Option<&str>)> {
    let left = text.find('<')?;
    let right = left + 1 + text[left + 1..].find('>')?;
    if !empty_email_ok && right == left + 1 {
        return None;
    }
    let name = text[..left].trim_matches(|c: char| c.is_ascii_whitespace());
    let rest = &text[right + 1..];
    Some((
        Some(name).filter(|n| !n.is_empty()),
        &text[left + 1..right],
        Some(rest).filter(|r| !r.is_empty()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(name: &str, email: &str) -> Signature {
        Signature {
            name: name.into(),
            email: email.into(),
            ..Signature::default()
        }
    }

    #[test]
    fn each_form_of_line_maps_as_git_maps_it() {
        let mut map = Mailmap::default();
        map.add(
            "# comment\n\
             Proper Name <commit@example.com>\n\
             <proper@example.com> <Other@Example.com>\n\
             Joe Developer <joe@example.com> <joe@laptop.local>\n\
             Jane Doe <jane@example.com> jane <bugs@example.com>\n",
        );
        let mapped = map.map(&who("whoever", "COMMIT@example.com"));
        assert_eq!(
            (mapped.name.as_str(), mapped.email.as_str()),
            ("Proper Name", "COMMIT@example.com")
        );
        let mapped = map.map(&who("Other", "other@example.com"));
        assert_eq!(
            (mapped.name.as_str(), mapped.email.as_str()),
            ("Other", "proper@example.com")
        );
        let mapped = map.map(&who("joe", "joe@laptop.local"));
        assert_eq!(
            (mapped.name.as_str(), mapped.email.as_str()),
            ("Joe Developer", "joe@example.com")
        );
        let mapped = map.map(&who("JANE", "bugs@example.com"));
        assert_eq!(
            (mapped.name.as_str(), mapped.email.as_str()),
            ("Jane Doe", "jane@example.com")
        );
        // Another name at that address: no line for it.
        let mapped = map.map(&who("bob", "bugs@example.com"));
        assert_eq!(
            (mapped.name.as_str(), mapped.email.as_str()),
            ("bob", "bugs@example.com")
        );
    }
}
