//! `sqlite3` (`sqlite: true`), a worker's only: bashkit's engine (Turso,
//! beta upstream) never runs in the VM, and the NIF does not link it.
//! The engine on the session's
//! files, bounded by the session. Each invocation gets an engine of its
//! own, as each `sqlite3` run is a process of its own in a shell: nothing
//! is cached between commands (a file written by Python or a restored
//! snapshot is what the next command reads), and the deadline is what is
//! left of the script's. `.import`, which bashkit lacks, becomes SQL here.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult, SqliteLimits};

/// The variable bashkit reads, when a session is built, to allow its
/// engine at all; unset before the first script runs.
pub const OPT_IN: &str = "BASHKIT_ALLOW_INPROCESS_SQLITE";

/// bashkit's cap on one invocation's SQL; an `.import` may need more.
const MAX_SCRIPT_BYTES: usize = 4 * 1024 * 1024;

/// Rows per generated `INSERT`: well under bashkit's statement count cap
/// for a large file, and statements of a modest size.
const ROWS_PER_INSERT: usize = 500;

/// Where a run's `.import` leaves whether its table existed before it.
const SCRATCH: &str = "\"ex_bashkit_import\"";

pub struct Sqlite3 {
    max_db_bytes: u64,
}

impl Sqlite3 {
    pub fn new(max_db_bytes: u64) -> Self {
        Self { max_db_bytes }
    }

    fn limits(&self, deadline: Option<Duration>, script_bytes: usize) -> SqliteLimits {
        // A zero duration means "no deadline" to bashkit: an expired one
        // becomes the shortest it takes.
        let left = deadline.map_or(Duration::ZERO, |left| left.max(Duration::from_millis(1)));
        SqliteLimits::default()
            .max_db_bytes(ex_bashkit_core::limits::count(self.max_db_bytes))
            .max_duration(left)
            .max_script_bytes(MAX_SCRIPT_BYTES.max(script_bytes.saturating_add(1024)))
    }
}

#[async_trait]
impl Builtin for Sqlite3 {
    async fn execute(&self, mut ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let invocation = Invocation::parse(ctx.args);
        let stdin = ctx.stdin_text_lossy().map(|text| text.into_owned());
        let script = invocation.script(stdin.as_deref());
        let imported = rewrite(&invocation, &script, &ctx).await;
        let layout = Layout::of(&invocation, &imported.sql);
        // Sorts, subqueries, set operations and window functions spill to
        // temporary storage, a real directory unless told otherwise: one a
        // worker cannot make, and should not.
        let args = invocation.args_with(format!("{TEMP_IN_MEMORY}\n{}", imported.sql));
        let limits = self.limits(ctx.remaining_deadline(), args.last().map_or(0, String::len));
        ctx.args = &args;
        ctx.stdin = None;
        let mut result = bashkit::Sqlite::with_limits(limits).execute(ctx).await?;
        if !imported.stderr.is_empty() {
            result.stderr = format!("{}{}", imported.stderr, result.stderr).into();
        }
        if imported.failed && result.exit_code == 0 {
            result.exit_code = 1;
        }
        let stdout = layout.apply(result.stdout.to_string());
        result.stdout = stdout.into();
        Ok(result)
    }
}

const TEMP_IN_MEMORY: &str = "PRAGMA temp_store = memory;";

/// Where bashkit's output differs from sqlite3's in layout only, redone
/// as sqlite3 lays it out.
struct Layout {
    /// `-json`: sqlite3 puts each row on a line of its own.
    json: bool,
    /// `-line`: sqlite3 right-aligns names to at least five columns.
    line: bool,
    /// A lone `.tables`: sqlite3 lists names across, in columns.
    tables: bool,
    /// `.mode csv` (not `-csv`): sqlite3 ends its rows with CRLF.
    crlf: bool,
}

impl Layout {
    fn of(invocation: &Invocation, script: &str) -> Self {
        let asked = |flag: &str, mode: &str| {
            invocation
                .options
                .iter()
                .any(|o| o.trim_start_matches('-') == flag)
                || script.lines().any(|l| {
                    let mut words = l.split_whitespace();
                    words.next() == Some(".mode") && words.next() == Some(mode)
                })
        };
        let mut lines = script.lines().map(str::trim).filter(|l| !l.is_empty());
        let tables = matches!(
            (lines.next(), lines.next()),
            (Some(only), None) if only.split_whitespace().next() == Some(".tables")
        );
        let mut modes = script
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".mode"))
            .map(str::trim)
            .peekable();
        // Not around what sqlite3 writes its own way (`.schema`, `.dump`).
        let listings = [".schema", ".dump", ".tables", ".indexes", ".help"];
        let crlf = modes.peek().is_some()
            && modes.all(|mode| mode == "csv")
            && !script
                .lines()
                .any(|l| listings.iter().any(|d| l.trim_start().starts_with(d)));
        Self {
            crlf,
            json: asked("json", "json"),
            line: asked("line", "line"),
            tables,
        }
    }

    fn apply(&self, stdout: String) -> String {
        let mut stdout = stdout;
        if self.json {
            stdout = json_rows_on_lines(&stdout);
        }
        if self.line {
            stdout = names_five_wide(&stdout);
        }
        if self.tables {
            stdout = in_columns(&stdout);
        }
        if self.crlf {
            stdout = crlf_rows(&stdout);
        }
        stdout
    }
}

/// `[{...},{...}]` as `[{...},\n{...}]`: a comma between two objects of a
/// top-level array starts a line.
fn json_rows_on_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let (mut depth, mut in_string, mut escaped, mut last) = (0usize, false, false, ' ');
    for c in text.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                '"' => in_string = true,
                '[' | '{' => depth += 1,
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        out.push(c);
        if !in_string && c == ',' && depth == 1 && last == '}' {
            out.push('\n');
        }
        if !c.is_whitespace() {
            last = c;
        }
    }
    out
}

/// CSV rows ended by CRLF; a newline inside a quoted field stays.
fn crlf_rows(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '\n' if !quoted && !out.ends_with('\r') => out.push('\r'),
            _ => {}
        }
        out.push(c);
    }
    out
}

/// `name = value` lines with names right-aligned to at least five columns.
fn names_five_wide(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| match line.find(" = ") {
            Some(at) if at < 5 => format!("{}{line}", " ".repeat(5 - at)),
            _ => line.to_string(),
        })
        .collect()
}

/// sqlite3's `.tables`: names padded to the longest, as many columns as
/// fit in 80, filled down then across.
fn in_columns(text: &str) -> String {
    let names: Vec<&str> = text.lines().collect();
    if names.is_empty() {
        return String::new();
    }
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let columns = (80 / (width + 2)).max(1);
    let rows = names.len().div_ceil(columns);
    let mut out = String::new();
    for row in 0..rows {
        for (column, name) in names.iter().skip(row).step_by(rows).enumerate() {
            let gap = if column == 0 { "" } else { "  " };
            let _ = write!(out, "{gap}{name:<width$}");
        }
        out.push('\n');
    }
    out
}

/// A command line as bashkit's `sqlite` reads it: options, the database,
/// and SQL (from the arguments, else from stdin).
struct Invocation {
    options: Vec<String>,
    database: String,
    sql: Vec<String>,
}

/// Options followed by a value.
const VALUED: &[&str] = &[
    "-separator",
    "--separator",
    "-nullvalue",
    "--nullvalue",
    "-backend",
    "--backend",
];

impl Invocation {
    fn parse(args: &[String]) -> Self {
        let mut options = Vec::new();
        let mut positional = Vec::new();
        let mut cmd = Vec::new();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--" => positional.extend(args.by_ref().cloned()),
                "-cmd" | "--cmd" => cmd.extend(args.next().cloned()),
                flag if VALUED.contains(&flag) => {
                    options.push(arg.clone());
                    options.extend(args.next().cloned());
                }
                flag if flag.starts_with('-') && flag != "-" => options.push(arg.clone()),
                _ => positional.push(arg.clone()),
            }
        }
        let mut positional = positional.into_iter();
        let database = positional.next().unwrap_or_else(|| ":memory:".to_string());
        cmd.extend(positional);
        Self {
            options,
            database,
            sql: cmd,
        }
    }

    fn script(&self, stdin: Option<&str>) -> String {
        // Each argument is a command of its own, a dot-command a line.
        let joined: String = self
            .sql
            .iter()
            .map(|part| match part.trim() {
                dot if dot.starts_with('.') => format!("{dot}\n"),
                sql => format!("{};\n", sql.trim_end_matches(';')),
            })
            .collect();
        match stdin {
            Some(input) if joined.trim().is_empty() => input.to_string(),
            _ => joined,
        }
    }

    fn args_with(&self, sql: String) -> Vec<String> {
        let mut args = self.options.clone();
        args.push("--".to_string());
        args.push(self.database.clone());
        args.push(sql);
        args
    }
}

/// How `.import` splits a file: as the output mode would write it.
#[derive(Clone)]
enum Format {
    Csv,
    Separated(String),
}

impl Format {
    fn from_options(options: &[String]) -> Self {
        let mut format = Format::Separated("|".to_string());
        let mut options = options.iter();
        while let Some(option) = options.next() {
            match option.trim_start_matches('-') {
                "csv" => format = Format::Csv,
                "tabs" => format = Format::Separated("\t".to_string()),
                "separator" => {
                    if let Some(separator) = options.next() {
                        format = Format::Separated(unescape(separator));
                    }
                }
                _ => {}
            }
        }
        format
    }

    /// Follows `.mode` and `.separator` lines.
    fn follow(&mut self, line: &str) {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some(".mode"), Some("csv")) => *self = Format::Csv,
            (Some(".mode"), Some("tabs")) => *self = Format::Separated("\t".to_string()),
            (Some(".mode"), Some(_)) if matches!(self, Format::Csv) => {
                *self = Format::Separated("|".to_string())
            }
            (Some(".separator"), Some(separator)) => {
                *self = Format::Separated(unescape(unquote(separator)))
            }
            _ => {}
        }
    }
}

struct Imported {
    sql: String,
    stderr: String,
    failed: bool,
}

/// The script as bashkit's engine takes it: each `.import FILE TABLE`
/// line replaced by the SQL that does what sqlite3's does (a new table
/// takes its column names from the first row, every column TEXT; an
/// existing one takes every row), and a dot-command's `;` quoted, which
/// bashkit would take for the end of a statement.
async fn rewrite(invocation: &Invocation, script: &str, ctx: &BuiltinContext<'_>) -> Imported {
    let mut format = Format::from_options(&invocation.options);
    let mut imported = Imported {
        sql: String::with_capacity(script.len()),
        stderr: String::new(),
        failed: false,
    };
    for line in script.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with('.') && trimmed.contains(';') && !trimmed.starts_with(".import") {
            imported.sql.push_str(&quote_semicolons(trimmed));
            imported.sql.push('\n');
            format.follow(trimmed);
            continue;
        }
        if !trimmed.starts_with(".import") {
            format.follow(trimmed);
            imported.sql.push_str(line);
            continue;
        }
        match import_line(trimmed, &format, ctx).await {
            Ok((sql, warnings)) => {
                imported.sql.push_str(&sql);
                imported.stderr.push_str(&warnings);
            }
            Err(message) => {
                imported.stderr.push_str(&message);
                imported.failed = true;
            }
        }
    }
    imported
}

async fn import_line(
    line: &str,
    format: &Format,
    ctx: &BuiltinContext<'_>,
) -> Result<(String, String), String> {
    let usage = "Usage: .import [--csv] [--skip N] FILE TABLE\n".to_string();
    let mut format = format.clone();
    let mut skip = 0usize;
    let mut names = Vec::new();
    let mut words = line.split_whitespace().skip(1);
    while let Some(word) = words.next() {
        match word {
            "--csv" => format = Format::Csv,
            "--skip" => {
                skip = words
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| usage.clone())?
            }
            "-v" => {}
            _ => names.push(unquote(word).to_string()),
        }
    }
    let [file, table] = names.as_slice() else {
        return Err(usage);
    };
    let path = resolve(ctx.cwd, file);
    let bytes = ctx
        .fs
        .read_file(&path)
        .await
        .map_err(|_| format!("Error: cannot open \"{file}\"\n"))?;
    let text = String::from_utf8_lossy(&bytes);
    let rows: Vec<Vec<String>> = match &format {
        Format::Csv => csv_rows(&text),
        Format::Separated(separator) => separated_rows(&text, separator),
    }
    .into_iter()
    .skip(skip)
    .collect();
    let Some((header, data)) = rows.split_first() else {
        return Ok((String::new(), String::new()));
    };
    let width = header.len();
    let table = quote_identifier(table);
    let columns: Vec<String> = header
        .iter()
        .map(|name| format!("{} TEXT", quote_identifier(name)))
        .collect();
    let header_values: Vec<String> = header.iter().map(|value| quote_text(value)).collect();
    let mut sql = String::new();
    let mut warnings = String::new();
    // The first row is data too when the table was there before.
    let _ = writeln!(
        sql,
        "CREATE TABLE {SCRATCH} AS SELECT count(*) AS existed FROM sqlite_master \
         WHERE type = 'table' AND name = {};",
        quote_text(&unquote_identifier(&table))
    );
    let _ = writeln!(
        sql,
        "CREATE TABLE IF NOT EXISTS {table}({});",
        columns.join(", ")
    );
    let _ = writeln!(
        sql,
        "INSERT INTO {table} SELECT {} FROM {SCRATCH} WHERE existed = 1;",
        header_values.join(", ")
    );
    let _ = writeln!(sql, "DROP TABLE {SCRATCH};");
    for (chunk_index, chunk) in data.chunks(ROWS_PER_INSERT).enumerate() {
        let _ = write!(sql, "INSERT INTO {table} VALUES ");
        for (index, row) in chunk.iter().enumerate() {
            let number = skip + 2 + chunk_index * ROWS_PER_INSERT + index;
            if row.len() != width {
                let _ = writeln!(
                    warnings,
                    "{file}:{number}: expected {width} columns but found {} - {}",
                    row.len(),
                    if row.len() < width {
                        "filling the rest with NULL"
                    } else {
                        "extras ignored"
                    }
                );
            }
            let values: Vec<String> = (0..width)
                .map(|column| {
                    row.get(column)
                        .map_or("NULL".to_string(), |v| quote_text(v))
                })
                .collect();
            let separator = if index == 0 { "" } else { ", " };
            let _ = write!(sql, "{separator}({})", values.join(", "));
        }
        sql.push_str(";\n");
    }
    Ok((sql, warnings))
}

fn quote_semicolons(line: &str) -> String {
    line.split_whitespace()
        .map(|word| match word {
            quoted if quoted.starts_with('\'') || quoted.starts_with('"') => quoted.to_string(),
            bare if bare.contains(';') => format!("'{bare}'"),
            bare => bare.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn resolve(cwd: &Path, file: &str) -> PathBuf {
    let path = Path::new(file);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// RFC 4180: fields in double quotes may hold separators, newlines and
/// doubled quotes; CRLF or LF ends a record.
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

fn separated_rows(text: &str, separator: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|line| line.split(separator).map(str::to_string).collect())
        .collect()
}

fn quote_text(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn unquote_identifier(quoted: &str) -> String {
    quoted[1..quoted.len() - 1].replace("\"\"", "\"")
}

fn unquote(word: &str) -> &str {
    let quoted = |q: char| word.len() >= 2 && word.starts_with(q) && word.ends_with(q);
    if quoted('"') || quoted('\'') {
        &word[1..word.len() - 1]
    } else {
        word
    }
}

fn unescape(separator: &str) -> String {
    separator
        .replace("\\t", "\t")
        .replace("\\n", "\n")
        .replace("\\r", "\r")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn csv_fields_hold_separators_quotes_and_newlines() {
        let rows = csv_rows("a,b\r\n\"x, y\",\"say \"\"hi\"\"\"\n\"two\nlines\",\n");
        assert_eq!(
            rows,
            vec![
                strings(&["a", "b"]),
                strings(&["x, y", "say \"hi\""]),
                strings(&["two\nlines", ""]),
            ]
        );
    }

    #[test]
    fn a_last_record_without_newline_is_kept() {
        assert_eq!(
            csv_rows("a,b\n1,2"),
            vec![strings(&["a", "b"]), strings(&["1", "2"])]
        );
    }

    #[test]
    fn invocations_keep_options_and_find_the_database() {
        let invocation = Invocation::parse(&strings(&[
            "-csv",
            "-separator",
            ";",
            "db.sqlite",
            "SELECT 1",
        ]));
        assert_eq!(invocation.options, strings(&["-csv", "-separator", ";"]));
        assert_eq!(invocation.database, "db.sqlite");
        assert_eq!(invocation.script(Some("ignored")), "SELECT 1;\n");
        let mixed = Invocation::parse(&strings(&["db", ".tables", "SELECT 1;", "SELECT 2"]));
        assert_eq!(mixed.script(None), ".tables\nSELECT 1;\nSELECT 2;\n");
        let from_stdin = Invocation::parse(&strings(&["db.sqlite"]));
        assert_eq!(from_stdin.script(Some(".tables\n")), ".tables\n");
    }

    #[test]
    fn the_import_format_follows_mode_and_separator_lines() {
        let mut format = Format::from_options(&[]);
        assert!(matches!(&format, Format::Separated(s) if s == "|"));
        format.follow(".mode csv");
        assert!(matches!(format, Format::Csv));
        format.follow(".separator \"\\t\"");
        assert!(matches!(&format, Format::Separated(s) if s == "\t"));
    }

    #[test]
    fn json_rows_go_on_lines_of_their_own() {
        assert_eq!(
            json_rows_on_lines("[{\"a\":\"},{\"},{\"a\":[1,2]}]\n"),
            "[{\"a\":\"},{\"},\n{\"a\":[1,2]}]\n"
        );
    }

    #[test]
    fn dot_command_semicolons_are_quoted() {
        assert_eq!(quote_semicolons(".separator ;"), ".separator ';'");
        assert_eq!(quote_semicolons(".separator \";\""), ".separator \";\"");
    }

    #[test]
    fn csv_rows_end_with_crlf_outside_quotes() {
        assert_eq!(crlf_rows("a,\"x\ny\"\nb,c\n"), "a,\"x\ny\"\r\nb,c\r\n");
    }

    #[test]
    fn line_mode_names_are_five_wide() {
        assert_eq!(
            names_five_wide("  id = 1\nname = x\n\n"),
            "   id = 1\n name = x\n\n"
        );
        assert_eq!(names_five_wide("longer = 1\n"), "longer = 1\n");
    }

    #[test]
    fn tables_are_listed_down_then_across() {
        assert_eq!(in_columns("orders\npeople\n"), "orders  people\n");
        let names: String = (0..12).map(|i| format!("table_number_{i:02}\n")).collect();
        let listed = in_columns(&names);
        assert_eq!(listed.lines().count(), 3);
        assert!(listed.starts_with("table_number_00  table_number_03"));
    }

    #[test]
    fn text_and_identifiers_are_quoted() {
        assert_eq!(quote_text("it's"), "'it''s'");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
        assert_eq!(unquote_identifier("\"a\"\"b\""), "a\"b");
    }
}
