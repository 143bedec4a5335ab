//! `__host`: the native functions the prelude (`prelude.js`) builds
//! Node's globals on, taken from the global object before the script runs.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ex_bashkit_core::sync::block_on;
use ex_bashkit_protocol::code::CodeOutcome;
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, TypedArray, Value};

use super::bytes;
use super::crypto::digest;
use super::host::{encode, failed, Command, Host};
use super::thrown::code_error;

/// `__host`: what the prelude builds Node's globals on.
pub fn install<'js>(
    ctx: &Ctx<'js>,
    host: &Rc<RefCell<Host>>,
    exiting: &Arc<AtomicBool>,
) -> rquickjs::Result<()> {
    let object = Object::new(ctx.clone())?;
    let h = host.clone();
    object.set(
        "write",
        Function::new(ctx.clone(), move |fd: usize, text: String| {
            h.borrow_mut().write(fd.saturating_sub(1), &text);
        })?,
    )?;
    let h = host.clone();
    object.set(
        "fs",
        Function::new(ctx.clone(), move |op: String, args: String| {
            encode(h.borrow().fs(&op, &args))
        })?,
    )?;
    // Milliseconds since the run began, for timers.
    let started = Instant::now();
    object.set(
        "now",
        Function::new(ctx.clone(), move || {
            started.elapsed().as_secs_f64() * 1000.0
        })?,
    )?;
    // Buffer's encodings (bytes.rs): text to bytes, bytes to text.
    object.set(
        "encode",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, text: String, encoding: String| -> rquickjs::Result<ArrayBuffer<'js>> {
                let encoding = known(&ctx, &encoding)?;
                ArrayBuffer::new(ctx, bytes::encode(&text, encoding))
            },
        )?,
    )?;
    object.set(
        "decode",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             data: TypedArray<'js, u8>,
             encoding: String|
             -> rquickjs::Result<String> {
                let encoding = known(&ctx, &encoding)?;
                // SAFETY: no JavaScript runs while the slice is read.
                let data = unsafe { data.as_bytes() }.unwrap_or_default();
                Ok(bytes::decode(data, encoding))
            },
        )?,
    )?;
    // A file's bytes, or the JSON of why not (as `fs` answers).
    let h = host.clone();
    object.set(
        "readBytes",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, file: String| -> rquickjs::Result<Value<'js>> {
                match h.borrow().read_bytes(Path::new(&file)) {
                    Ok(bytes) => Ok(ArrayBuffer::new(ctx, bytes)?.into_value()),
                    Err(why) => {
                        Ok(rquickjs::String::from_str(ctx, &encode(Err(why)))?.into_value())
                    }
                }
            },
        )?,
    )?;
    // child_process: a command in a new shell of the session, waited
    // for; its status and output (bytes), or an Error saying why not.
    let h = host.clone();
    object.set(
        "spawn",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  script: String,
                  cwd: String,
                  env: Object<'js>,
                  input: Option<TypedArray<'js, u8>>|
                  -> rquickjs::Result<Object<'js>> {
                h.borrow().changed();
                let mut vars = Vec::new();
                for entry in env.props::<String, Value>() {
                    let (name, value) = entry?;
                    if let Some(value) = value.as_string() {
                        vars.push((name, value.to_string()?));
                    }
                }
                let command = Command {
                    script,
                    cwd: cwd.into(),
                    env: vars,
                    // SAFETY: no JavaScript runs while the bytes are copied.
                    stdin: input
                        .map(|data| unsafe { data.as_bytes() }.unwrap_or_default().to_vec()),
                };
                let ran = match &h.borrow().shell {
                    Some(shell) => shell(command),
                    None => Err("no shell to run commands in here".into()),
                };
                let ran = ran.map_err(|why| Exception::throw_message(&ctx, &why))?;
                let result = Object::new(ctx.clone())?;
                result.set("status", ran.exit_code)?;
                result.set(
                    "stdout",
                    ArrayBuffer::new(ctx.clone(), ran.stdout.as_bytes().to_vec())?,
                )?;
                result.set(
                    "stderr",
                    ArrayBuffer::new(ctx.clone(), ran.stderr.as_bytes().to_vec())?,
                )?;
                Ok(result)
            },
        )?,
    )?;
    // Node's modules made on first use (run.rs's chunks).
    object.set(
        "chunk",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, name: String| {
            super::run::chunk(&ctx, &name)
        })?,
    )?;
    // process.stdin: what was piped in (undefined when nothing was).
    let h = host.clone();
    object.set(
        "stdin",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>| -> rquickjs::Result<Value<'js>> {
                match &h.borrow().stdin {
                    Some(bytes) => Ok(ArrayBuffer::new(ctx, bytes.clone())?.into_value()),
                    None => Ok(Value::new_undefined(ctx)),
                }
            },
        )?,
    )?;
    let h = host.clone();
    object.set(
        "writeBytes",
        Function::new(
            ctx.clone(),
            move |file: String, data: TypedArray<'js, u8>, append: bool| {
                // SAFETY: no JavaScript runs while the slice is written out.
                let data = unsafe { data.as_bytes() }.unwrap_or_default();
                encode(
                    h.borrow()
                        .write_bytes(Path::new(&file), data, append)
                        .map(|()| true.into()),
                )
            },
        )?,
    )?;
    let h = host.clone();
    object.set(
        "cwd",
        Function::new(ctx.clone(), move || h.borrow().cwd.clone())?,
    )?;
    let h = host.clone();
    object.set(
        "argv",
        Function::new(ctx.clone(), move || {
            serde_json::to_string(&h.borrow().argv).unwrap_or_default()
        })?,
    )?;
    let h = host.clone();
    object.set(
        "env",
        Function::new(ctx.clone(), move || {
            serde_json::to_string(&h.borrow().env).unwrap_or_default()
        })?,
    )?;
    let h = host.clone();
    let flag = exiting.clone();
    object.set(
        "exit",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, code: i32| -> rquickjs::Result<()> {
                h.borrow_mut().exit.get_or_insert(code);
                flag.store(true, Ordering::Release);
                Err(Exception::throw_internal(&ctx, "process.exit"))
            },
        )?,
    )?;
    let h = host.clone();
    object.set(
        "hash",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  algorithm: String,
                  key: Option<TypedArray<'js, u8>>,
                  data: TypedArray<'js, u8>| {
                if h.borrow().grants.is_some_and(|grants| !grants.crypto) {
                    return Err(Exception::throw_message(
                        &ctx,
                        "crypto needs the crypto grant",
                    ));
                }
                // SAFETY: no JavaScript runs while the bytes are hashed.
                let (key, data) =
                    unsafe { (key.as_ref().map(|key| key.as_bytes()), data.as_bytes()) };
                digest(
                    &algorithm,
                    key.map(Option::unwrap_or_default),
                    data.unwrap_or_default(),
                )
                .ok_or_else(|| {
                    Exception::throw_message(
                        &ctx,
                        &format!("Digest method not supported: {algorithm}"),
                    )
                })
            },
        )?,
    )?;
    object.set(
        "randomBytes",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, size: usize| -> rquickjs::Result<ArrayBuffer<'js>> {
                match super::crypto::random_bytes(size) {
                    Ok(bytes) => ArrayBuffer::new(ctx, bytes),
                    Err(why) => Err(Exception::throw_message(
                        &ctx,
                        &format!("randomBytes: {why}"),
                    )),
                }
            },
        )?,
    )?;
    let h = host.clone();
    object.set(
        "fetch",
        Function::new(
            ctx.clone(),
            move |method: String, url: String, headers: String, body: Option<String>| {
                encode(h.borrow().fetch(&method, &url, &headers, body.as_deref()))
            },
        )?,
    )?;
    // The http and https modules' requests: bytes both ways, the
    // response as `{status, headers: [name, value, …], body}`.
    let h = host.clone();
    object.set(
        "request",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  method: String,
                  url: String,
                  headers: Vec<String>,
                  body: Option<TypedArray<'js, u8>>|
                  -> rquickjs::Result<Object<'js>> {
                let headers: Vec<(String, String)> = headers
                    .chunks_exact(2)
                    .map(|pair| (pair[0].clone(), pair[1].clone()))
                    .collect();
                // SAFETY: no JavaScript runs while the slice is read.
                let body = body
                    .as_ref()
                    .map(|b| unsafe { b.as_bytes() }.unwrap_or_default().to_vec());
                let answer = h.borrow().request(&method, &url, &headers, body.as_deref());
                match answer {
                    Ok((status, headers, body)) => {
                        let response = Object::new(ctx.clone())?;
                        response.set("status", status)?;
                        let flat: Vec<String> =
                            headers.into_iter().flat_map(|(n, v)| [n, v]).collect();
                        response.set("headers", flat)?;
                        response.set("body", ArrayBuffer::new(ctx, body)?)?;
                        Ok(response)
                    }
                    Err((code, message)) => Err(super::thrown::coded(&ctx, code, &message)),
                }
            },
        )?,
    )?;
    let h = host.clone();
    object.set(
        "tool",
        Function::new(ctx.clone(), move |path: String, stdin: String| {
            let host = h.borrow();
            let Some(tools) = &host.tools else {
                return encode(failed("ENOENT", "this engine has no tools"));
            };
            let path: Vec<String> = serde_json::from_str(&path).unwrap_or_default();
            let called = block_on(tools.call(&path, &stdin, &host.env, &host.cwd));
            encode(match called {
                Ok(stdout) => Ok(String::from_utf8_lossy(&stdout).into_owned().into()),
                Err(error) => Err((error.code, error.message)),
            })
        })?,
    )?;
    let h = host.clone();
    object.set(
        "grants",
        Function::new(ctx.clone(), move || {
            h.borrow()
                .grants
                .map(|grants| serde_json::to_string(&grants).unwrap_or_default())
        })?,
    )?;
    let h = host.clone();
    object.set(
        "returned",
        Function::new(ctx.clone(), move |json: String| {
            let mut host = h.borrow_mut();
            host.finished.get_or_insert(CodeOutcome::Value(json));
        })?,
    )?;
    let h = host.clone();
    object.set(
        "threw",
        Function::new(
            ctx.clone(),
            move |name: String, message: String, stack: String, null: bool| {
                let mut host = h.borrow_mut();
                let refused = host.refused.load(Ordering::Acquire);
                let error = code_error(&name, &message, &stack, null, &host.filename, refused);
                host.finished.get_or_insert(CodeOutcome::Error(error));
            },
        )?,
    )?;
    object.set(
        "compile",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, code: String, file: String| -> rquickjs::Result<Value<'js>> {
                super::compiled::script(&ctx, code, &file)
            },
        )?,
    )?;
    ctx.globals().set("__host", object)
}

/// The canonical name of an encoding, or Node's TypeError.
fn known<'js>(ctx: &Ctx<'js>, encoding: &str) -> rquickjs::Result<&'static str> {
    bytes::canonical(encoding)
        .ok_or_else(|| Exception::throw_type(ctx, &format!("Unknown encoding: {encoding}")))
}
