//! A package manager's command line, read one word at a time: a flag's
//! value attached (`--registry=URL`) or as the next word.

pub struct Words<'a> {
    words: std::slice::Iter<'a, String>,
    /// The value attached to the last flag read.
    attached: Option<String>,
}

impl<'a> Words<'a> {
    pub fn new(words: &'a [String]) -> Self {
        Self {
            words: words.iter(),
            attached: None,
        }
    }

    /// The next word; for `--flag=value`, the flag, its value kept for
    /// [`Words::value`].
    pub fn next_word(&mut self) -> Option<&'a str> {
        let word = self.words.next()?;
        self.attached = None;
        match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                self.attached = Some(value.to_string());
                Some(flag)
            }
            _ => Some(word),
        }
    }

    /// The value attached to the last flag, if any.
    pub fn attached(&self) -> Option<&str> {
        self.attached.as_deref()
    }

    /// The last flag's value: attached, or the next word.
    pub fn value(&mut self, flag: &str) -> Result<String, String> {
        self.attached
            .take()
            .or_else(|| self.words.next().cloned())
            .ok_or_else(|| format!("{flag} needs a value"))
    }
}
