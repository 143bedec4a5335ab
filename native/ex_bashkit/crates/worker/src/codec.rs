//! Erlang terms to and from our types, on the worker's side of the pipe.
//! The VM sends what the NIFs would have decoded (`ExBashkit.Worker`), and
//! the worker answers with what they would have returned.

use std::collections::HashMap;

use eetf::{Atom, BigInteger, Binary, FixInteger, List, Map, Term, Tuple};

use ex_bashkit_core::callback::{Failure, FsOp, Reply, Request};
use ex_bashkit_core::file_kind::FileKind;
use ex_bashkit_core::limits::Limits;
use ex_bashkit_core::named::Named;
use ex_bashkit_core::network::AllowNet;
use ex_bashkit_core::options::SessionOptions;
use ex_bashkit_core::policy::{CommandPolicy, Denial, Rule};
use ex_bashkit_core::python::PythonRuntime;
use ex_bashkit_core::script_error::ScriptError;

pub type Decoded<T> = Result<T, DecodeError>;

/// Why a frame from the VM does not decode. The worker answers it as a
/// failed request: the VM sent it, so it is a bug of ours, not an attack.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// A term of another type than its place in the frame wants.
    #[error("expected {expected}, got {got}")]
    Expected { expected: &'static str, got: String },
    #[error("integer out of range: {0}")]
    OutOfRange(String),
    #[error("negative: {0}")]
    Negative(String),
    #[error("missing key {0}")]
    MissingKey(String),
    /// A tag or name the frame's grammar does not have.
    #[error("unknown {what} {term}")]
    Unknown { what: &'static str, term: String },
    /// Anything else the frame's grammar refuses.
    #[error("{0}")]
    Malformed(String),
}

impl DecodeError {
    pub fn expected(expected: &'static str, got: &Term) -> Self {
        Self::Expected {
            expected,
            got: got.to_string(),
        }
    }
}

impl DecodeError {
    pub fn unknown(what: &'static str, term: impl std::fmt::Display) -> Self {
        Self::Unknown {
            what,
            term: term.to_string(),
        }
    }
}

impl From<&str> for DecodeError {
    fn from(message: &str) -> Self {
        Self::Malformed(message.to_string())
    }
}

impl From<String> for DecodeError {
    fn from(message: String) -> Self {
        Self::Malformed(message)
    }
}

impl From<DecodeError> for String {
    fn from(error: DecodeError) -> Self {
        error.to_string()
    }
}

pub fn atom(name: &str) -> Term {
    Term::Atom(Atom::from(name))
}

pub fn tuple(elements: Vec<Term>) -> Term {
    Term::Tuple(Tuple::from(elements))
}

pub fn binary(bytes: &[u8]) -> Term {
    Term::Binary(Binary::from(bytes))
}

/// A binary that takes `bytes` over instead of copying them (a snapshot,
/// a file's content: megabytes).
pub fn owned_binary(bytes: Vec<u8>) -> Term {
    Term::Binary(Binary::from(bytes))
}

pub fn list(elements: Vec<Term>) -> Term {
    Term::List(List::from(elements))
}

pub fn boolean(value: bool) -> Term {
    atom(if value { "true" } else { "false" })
}

pub fn integer(value: i64) -> Term {
    match i32::try_from(value) {
        Ok(small) => Term::FixInteger(FixInteger::from(small)),
        Err(_) => Term::BigInteger(BigInteger::from(value)),
    }
}

pub fn ok(value: Term) -> Term {
    tuple(vec![atom("ok"), value])
}

pub fn error(message: &str) -> Term {
    tuple(vec![atom("error"), binary(message.as_bytes())])
}

pub fn file_kind(kind: FileKind) -> Term {
    atom(kind.name())
}

/// `{reason, limit, message, stdout, stderr}`, as `ExBashkit.Error` reads it.
pub fn script_error(error: &ScriptError) -> Term {
    tuple(vec![
        atom(error.reason.name()),
        atom(error.limit.unwrap_or("nil")),
        binary(error.message.as_bytes()),
        binary(&error.stdout),
        binary(&error.stderr),
    ])
}

/// `{{:builtin, name} | {:fs, mount}, request}`: the call as
/// `ExBashkit.Callbacks` receives it.
pub fn request(request: &Request<'_>) -> (Term, Term) {
    let pairs = fields;
    match request {
        Request::Builtin {
            name,
            args,
            stdin,
            env,
            cwd,
        } => {
            let vars: HashMap<Term, Term> = env
                .iter()
                .map(|(k, v)| (binary(k.as_bytes()), binary(v.as_bytes())))
                .collect();
            let args = args.iter().map(|arg| binary(arg.as_bytes())).collect();
            let request = pairs(vec![
                ("args", list(args)),
                ("stdin", binary(stdin)),
                ("env", Term::Map(Map::from(vars))),
                ("cwd", binary(cwd.as_bytes())),
            ]);
            (
                tuple(vec![atom("builtin"), binary(name.as_bytes())]),
                request,
            )
        }
        Request::Fs { mount, op, path } => {
            let (name, extra) = match op {
                FsOp::Read => ("read", None),
                FsOp::List => ("list", None),
                FsOp::Stat => ("stat", None),
                FsOp::Write(data) => ("write", Some(("data", binary(data)))),
                FsOp::Append(data) => ("append", Some(("data", binary(data)))),
                FsOp::Mkdir { recursive } => ("mkdir", Some(("recursive", boolean(*recursive)))),
                FsOp::Remove { recursive } => ("remove", Some(("recursive", boolean(*recursive)))),
                FsOp::Rename { to } => ("rename", Some(("to", binary(to.as_bytes())))),
            };
            let mut fields = vec![("op", atom(name)), ("path", binary(path.as_bytes()))];
            fields.extend(extra);
            (
                tuple(vec![atom("fs"), binary(mount.as_bytes())]),
                pairs(fields),
            )
        }
        Request::Policy { name, args } => {
            let args = args.iter().map(|arg| binary(arg.as_bytes())).collect();
            let request = pairs(vec![
                ("name", binary(name.as_bytes())),
                ("args", list(args)),
            ]);
            (tuple(vec![atom("policy"), binary(b"command")]), request)
        }
    }
}

/// A map with atom keys, as Elixir reads options and requests.
pub fn fields(pairs: Vec<(&str, Term)>) -> Term {
    let map: HashMap<Term, Term> = pairs.into_iter().map(|(k, v)| (atom(k), v)).collect();
    Term::Map(Map::from(map))
}

// ---- decoding -------------------------------------------------------------

pub fn atom_name(term: &Term) -> Option<&str> {
    match term {
        Term::Atom(atom) => Some(atom.name.as_str()),
        _ => None,
    }
}

pub fn elements(term: &Term) -> Decoded<&[Term]> {
    match term {
        Term::Tuple(tuple) => Ok(&tuple.elements),
        _ => Err(DecodeError::expected("a tuple", term)),
    }
}

pub fn items(term: &Term) -> Decoded<Vec<&Term>> {
    match term {
        Term::List(list) => Ok(list.elements.iter().collect()),
        Term::ByteList(_) => Err(DecodeError::Expected {
            expected: "a list of terms",
            got: "a charlist".into(),
        }),
        _ => Err(DecodeError::expected("a list", term)),
    }
}

pub fn bytes(term: &Term) -> Decoded<Vec<u8>> {
    match term {
        Term::Binary(binary) => Ok(binary.bytes.clone()),
        _ => Err(DecodeError::expected("a binary", term)),
    }
}

pub fn string(term: &Term) -> Decoded<String> {
    String::from_utf8(bytes(term)?).map_err(|_| DecodeError::from("expected UTF-8 text"))
}

pub fn integer_of(term: &Term) -> Decoded<i64> {
    match term {
        Term::FixInteger(value) => Ok(value.value.into()),
        Term::BigInteger(value) => {
            i64::try_from(&value.value).map_err(|_| DecodeError::OutOfRange(term.to_string()))
        }
        _ => Err(DecodeError::expected("an integer", term)),
    }
}

pub fn u64_of(term: &Term) -> Decoded<u64> {
    match term {
        Term::BigInteger(value) => {
            u64::try_from(&value.value).map_err(|_| DecodeError::OutOfRange(term.to_string()))
        }
        _ => u64::try_from(integer_of(term)?).map_err(|_| DecodeError::Negative(term.to_string())),
    }
}

pub fn flag(term: &Term) -> Decoded<bool> {
    match atom_name(term) {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        _ => Err(DecodeError::expected("a boolean", term)),
    }
}

pub fn is_nil(term: &Term) -> bool {
    atom_name(term) == Some("nil")
}

/// `nil` as `None`, anything else through `decode`.
pub fn optional<'t, T>(
    term: &'t Term,
    decode: impl FnOnce(&'t Term) -> Decoded<T>,
) -> Decoded<Option<T>> {
    if is_nil(term) {
        Ok(None)
    } else {
        decode(term).map(Some)
    }
}

/// A map with atom keys, as Elixir structs and option maps are.
pub struct Fields<'t>(&'t HashMap<Term, Term>);

impl<'t> Fields<'t> {
    pub fn of(term: &'t Term) -> Decoded<Self> {
        match term {
            Term::Map(map) => Ok(Self(&map.map)),
            _ => Err(DecodeError::expected("a map", term)),
        }
    }

    pub fn get(&self, key: &str) -> Decoded<&'t Term> {
        self.0
            .get(&atom(key))
            .ok_or_else(|| DecodeError::MissingKey(key.to_string()))
    }
}

fn strings(term: &Term) -> Decoded<Vec<String>> {
    items(term)?.into_iter().map(string).collect()
}

/// `[{name, value}]` of binaries.
pub fn pairs(term: &Term) -> Decoded<Vec<(String, String)>> {
    items(term)?
        .into_iter()
        .map(|pair| match elements(pair)? {
            [name, value] => Ok((string(name)?, string(value)?)),
            _ => Err("expected {name, value}".into()),
        })
        .collect()
}

fn limits(term: &Term) -> Decoded<Limits> {
    let fields = Fields::of(term)?;
    Limits::from_fields(|key| optional(fields.get(key)?, u64_of))
}

fn mount(term: &Term) -> Decoded<ex_bashkit_core::mounts::Mount> {
    match elements(term)? {
        [vfs, host, mode] => Ok((string(vfs)?, string(host)?, named(mode)?)),
        _ => Err("expected {vfs_path, host_path, mode}".into()),
    }
}

/// `[{pattern, [{name, value}]}]`: the headers `:allow_net` entries inject.
pub fn credentials(term: &Term) -> Decoded<ex_bashkit_core::network::CredentialRules> {
    items(term)?.into_iter().map(credential).collect()
}

fn credential(term: &Term) -> Decoded<(String, Vec<(String, String)>)> {
    match elements(term)? {
        [pattern, headers] => Ok((string(pattern)?, pairs(headers)?)),
        _ => Err("expected {pattern, headers}".into()),
    }
}

fn allow_net(term: &Term) -> Decoded<AllowNet> {
    match atom_name(term) {
        Some("none") => return Ok(AllowNet::None),
        Some("all") => return Ok(AllowNet::All),
        _ => {}
    }
    match elements(term)? {
        [tag, patterns] if atom_name(tag) == Some("only") => Ok(AllowNet::Only(strings(patterns)?)),
        _ => Err(DecodeError::unknown("allow_net", term)),
    }
}

/// `{:deny | :allow, names, abort}`: a `:command_policy`.
pub fn command_policy(term: &Term) -> Decoded<CommandPolicy> {
    match elements(term)? {
        [kind, names, abort] => {
            let names = strings(names)?.into_iter().collect();
            let rule = match atom_name(kind) {
                Some("deny") => Rule::Deny(names),
                Some("allow") => Rule::Allow(names),
                Some("ask") => Rule::Ask,
                _ => return Err(DecodeError::unknown("command policy", term)),
            };
            Ok(CommandPolicy {
                rule,
                abort: flag(abort)?,
            })
        }
        _ => Err("expected {:deny | :allow, names, abort}".into()),
    }
}

/// `[{name, reason}]`: what a script's command policy denied.
pub fn denials(denials: &[Denial]) -> Term {
    let pairs = denials
        .iter()
        .map(|denial| {
            tuple(vec![
                binary(denial.name.as_bytes()),
                binary(denial.reason.as_bytes()),
            ])
        })
        .collect();
    list(pairs)
}

/// An `%ExBashkit.Session.Options{}`, as the NIF's `convert.rs` decodes it.
pub fn session_options(term: &Term) -> Decoded<SessionOptions> {
    let fields = Fields::of(term)?;
    let python_runtime: PythonRuntime = named(fields.get("python_runtime")?)?;
    Ok(SessionOptions {
        env: pairs(fields.get("env")?)?,
        cwd: string(fields.get("cwd")?)?,
        username: string(fields.get("username")?)?,
        hostname: string(fields.get("hostname")?)?,
        limits: limits(fields.get("limits")?)?,
        mounts: items(fields.get("mounts")?)?
            .into_iter()
            .map(mount)
            .collect::<Decoded<_>>()?,
        allowed_mount_paths: optional(fields.get("allowed_mount_paths")?, strings)?,
        allow_net: allow_net(fields.get("allow_net")?)?,
        credentials: credentials(fields.get("credentials")?)?,
        block_private_ips: flag(fields.get("block_private_ips")?)?,
        builtins: strings(fields.get("builtins")?)?,
        virtual_fs: strings(fields.get("virtual_fs")?)?,
        python: strings(fields.get("python")?)?,
        python_runtime,
        command_policy: optional(fields.get("command_policy")?, command_policy)?,
        javascript: flag(fields.get("javascript")?)?,
        tools: strings(fields.get("tools")?)?,
        git: flag(fields.get("git")?)?,
        sqlite: flag(fields.get("sqlite")?)?,
    })
}

/// An atom naming a variant of `T` (`named.rs`).
fn named<T: Named>(term: &Term) -> Decoded<T> {
    atom_name(term)
        .and_then(T::named)
        .ok_or_else(|| DecodeError::unknown("atom", term))
}

/// An answer to a call, already checked by `ExBashkit.Callbacks`; anything
/// else is an invalid reply, as in the VM.
pub fn reply(term: &Term) -> Reply {
    decode_reply(term)
        .unwrap_or_else(|_| Reply::Error(Failure::Message("invalid reply from Elixir".into())))
}

fn decode_reply(term: &Term) -> Decoded<Reply> {
    if atom_name(term) == Some("ok") {
        return Ok(Reply::Ok);
    }
    let fields = elements(term)?;
    let tag = fields.first().and_then(atom_name);
    match (tag, fields) {
        (Some("output"), [_, out, err, code]) => Ok(Reply::Output(
            bytes(out)?,
            bytes(err)?,
            i32::try_from(integer_of(code)?).map_err(|e| e.to_string())?,
        )),
        (Some("data"), [_, data]) => Ok(Reply::Data(bytes(data)?)),
        (Some("entries"), [_, entries]) => Ok(Reply::Entries(
            items(entries)?
                .into_iter()
                .map(|entry| match elements(entry)? {
                    [name, kind_term, size] => {
                        Ok((string(name)?, named(kind_term)?, u64_of(size)?))
                    }
                    _ => Err("expected {name, kind, size}".into()),
                })
                .collect::<Decoded<_>>()?,
        )),
        (Some("stat"), [_, kind_term, size]) => Ok(Reply::Stat(named(kind_term)?, u64_of(size)?)),
        (Some("error"), [_, why]) => Ok(Reply::Error(match atom_name(why) {
            Some(code) => Failure::Code(code.to_string()),
            None => Failure::Message(string(why)?),
        })),
        _ => Err(DecodeError::unknown("reply", term)),
    }
}

/// The hardening report: `{[{layer, :ok | {:missing, reason}}], cgroup_dirs, os_pid}`.
pub fn hardening(report: &ex_bashkit_core::hardening::Report) -> Term {
    let dirs = report
        .cgroups
        .iter()
        .map(|dir| binary(dir.as_os_str().as_encoded_bytes()))
        .collect();
    // The worker's own pid: a zygote's child is not the Port's process.
    // SAFETY: a plain syscall.
    let pid = i64::from(unsafe { libc::getpid() });
    tuple(vec![layers(report), list(dirs), integer(pid)])
}

fn layers(report: &ex_bashkit_core::hardening::Report) -> Term {
    list(
        report
            .layers
            .iter()
            .map(|(layer, outcome)| {
                let state = match outcome {
                    Ok(()) => atom("ok"),
                    Err(reason) => {
                        tuple(vec![atom("missing"), binary(reason.to_string().as_bytes())])
                    }
                };
                tuple(vec![atom(layer), state])
            })
            .collect(),
    )
}
