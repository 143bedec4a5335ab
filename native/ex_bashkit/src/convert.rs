//! The core's types to and from terms: what the NIFs decode from Elixir
//! (`%ExBashkit.Session.Options{}`, atoms) and encode back (a script's
//! error). The core knows nothing of the VM, so the NIF wraps its types.

use ex_bashkit_core::limits::Limits;
use ex_bashkit_core::named::Named;
use ex_bashkit_core::network::AllowNet;
use ex_bashkit_core::options::SessionOptions;
use ex_bashkit_core::policy::{CommandPolicy, Rule};
use ex_bashkit_core::script_error::ScriptError;
use rustler::{Atom, Decoder, Encoder, Env, Error, NifResult, Term};

use crate::terms::bytes;

mod atoms {
    rustler::atoms! {
        env, cwd, username, hostname, limits, mounts, allowed_mount_paths, allow_net,
        credentials, block_private_ips, builtins, virtual_fs, python, python_runtime,
        command_policy, javascript, tools, git, sqlite, none, all, only, deny, allow, ask,
    }
}

/// A core enum that crosses as an atom (`named.rs`).
pub struct Nif<T>(pub T);

impl<'a, T: Named> Decoder<'a> for Nif<T> {
    fn decode(term: Term<'a>) -> NifResult<Self> {
        let name = term.atom_to_string()?;
        T::named(&name).map(Nif).ok_or(Error::BadArg)
    }
}

impl<T: Named> Encoder for Nif<T> {
    fn encode<'a>(&self, env: Env<'a>) -> Term<'a> {
        // Every name is a valid atom.
        Atom::from_str(env, self.0.name())
            .expect("an atom name")
            .encode(env)
    }
}

/// `%ExBashkit.Session.Options{}`, every field already checked and
/// normalized in Elixir: a failure here is a programmer error.
pub struct NifOptions(pub SessionOptions);

impl<'a> Decoder<'a> for NifOptions {
    fn decode(term: Term<'a>) -> NifResult<Self> {
        let field = |key: Atom| term.map_get(key);
        let mounts: Vec<(String, String, Nif<_>)> = field(atoms::mounts())?.decode()?;
        let Nif(python_runtime) = field(atoms::python_runtime())?.decode()?;
        let NifAllowNet(allow_net) = field(atoms::allow_net())?.decode()?;
        Ok(NifOptions(SessionOptions {
            env: field(atoms::env())?.decode()?,
            cwd: field(atoms::cwd())?.decode()?,
            username: field(atoms::username())?.decode()?,
            hostname: field(atoms::hostname())?.decode()?,
            limits: limits(field(atoms::limits())?)?,
            mounts: mounts
                .into_iter()
                .map(|(vfs, host, Nif(mode))| (vfs, host, mode))
                .collect(),
            allowed_mount_paths: field(atoms::allowed_mount_paths())?.decode()?,
            allow_net,
            credentials: field(atoms::credentials())?.decode()?,
            block_private_ips: field(atoms::block_private_ips())?.decode()?,
            builtins: field(atoms::builtins())?.decode()?,
            virtual_fs: field(atoms::virtual_fs())?.decode()?,
            python: field(atoms::python())?.decode()?,
            python_runtime,
            command_policy: field(atoms::command_policy())?
                .decode::<Option<NifPolicy>>()?
                .map(|NifPolicy(policy)| policy),
            javascript: field(atoms::javascript())?.decode()?,
            tools: field(atoms::tools())?.decode()?,
            git: field(atoms::git())?.decode()?,
            sqlite: field(atoms::sqlite())?.decode()?,
        }))
    }
}

/// The `:limits` map: every key present, `nil` for the default.
fn limits(term: Term<'_>) -> NifResult<Limits> {
    let env = term.get_env();
    Limits::from_fields(|key| term.map_get(Atom::from_str(env, key)?)?.decode())
}

/// `:allow_net`: `:none`, `:all` or `{:only, patterns}`.
pub struct NifAllowNet(pub AllowNet);

impl<'a> Decoder<'a> for NifAllowNet {
    fn decode(term: Term<'a>) -> NifResult<Self> {
        if let Ok(atom) = term.decode::<Atom>() {
            return match atom {
                a if a == atoms::none() => Ok(NifAllowNet(AllowNet::None)),
                a if a == atoms::all() => Ok(NifAllowNet(AllowNet::All)),
                _ => Err(Error::BadArg),
            };
        }
        match term.decode::<(Atom, Vec<String>)>()? {
            (tag, patterns) if tag == atoms::only() => Ok(NifAllowNet(AllowNet::Only(patterns))),
            _ => Err(Error::BadArg),
        }
    }
}

/// `:command_policy`: `{:deny | :allow | :ask, names, abort}` (`:ask`:
/// the session's function decides, in a worker).
pub struct NifPolicy(pub CommandPolicy);

impl<'a> Decoder<'a> for NifPolicy {
    fn decode(term: Term<'a>) -> NifResult<Self> {
        let (kind, names, abort): (Atom, Vec<String>, bool) = term.decode()?;
        let names = names.into_iter().collect();
        let rule = match kind {
            kind if kind == atoms::deny() => Rule::Deny(names),
            kind if kind == atoms::allow() => Rule::Allow(names),
            kind if kind == atoms::ask() => Rule::Ask,
            _ => return Err(Error::BadArg),
        };
        Ok(NifPolicy(CommandPolicy { rule, abort }))
    }
}

// The struct derive of the options encodes too (nothing here does).
impl Encoder for NifPolicy {
    fn encode<'a>(&self, env: Env<'a>) -> Term<'a> {
        let (kind, names): (Atom, Vec<&String>) = match &self.0.rule {
            Rule::Deny(names) => (atoms::deny(), names.iter().collect()),
            Rule::Allow(names) => (atoms::allow(), names.iter().collect()),
            Rule::Ask => (atoms::ask(), Vec::new()),
        };
        (kind, names, self.0.abort).encode(env)
    }
}

/// A script's error, `{reason, limit, message, stdout, stderr}`, as
/// `ExBashkit.Error` reads it.
pub struct NifError(pub ScriptError);

impl From<String> for NifError {
    fn from(message: String) -> Self {
        NifError(ScriptError::from(message))
    }
}

impl Encoder for NifError {
    fn encode<'a>(&self, env: Env<'a>) -> Term<'a> {
        let error = &self.0;
        let limit = match error.limit.map(|key| Atom::from_str(env, key)) {
            Some(Ok(atom)) => atom.encode(env),
            _ => rustler::types::atom::nil().encode(env),
        };
        let stdout = bytes(env, &error.stdout);
        let stderr = bytes(env, &error.stderr);
        let reason = Nif(error.reason);
        (reason, limit, error.message.as_str(), stdout, stderr).encode(env)
    }
}
