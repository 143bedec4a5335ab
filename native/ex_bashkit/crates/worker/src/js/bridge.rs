//! `__host`: the native functions the prelude (`prelude.js`) builds
//! Node's globals on, taken from the global object before the script runs.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ex_bashkit_core::sync::block_on;
use ex_bashkit_protocol::code::CodeOutcome;
use rquickjs::context::EvalOptions;
use rquickjs::{Ctx, Exception, Function, Object, Value};

use super::crypto::digest;
use super::host::{encode, failed, Host};
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
            move |ctx: Ctx<'js>, algorithm: String, key: Option<String>, data: String| {
                if h.borrow().grants.is_some_and(|grants| !grants.crypto) {
                    return Err(Exception::throw_message(
                        &ctx,
                        "crypto needs the crypto grant",
                    ));
                }
                digest(&algorithm, key.as_deref(), data.as_bytes()).ok_or_else(|| {
                    Exception::throw_message(
                        &ctx,
                        &format!("Digest method not supported: {algorithm}"),
                    )
                })
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
                let mut options = EvalOptions::default();
                options.global = true;
                options.strict = false;
                options.filename = Some(file);
                ctx.eval_with_options(code, options)
            },
        )?,
    )?;
    ctx.globals().set("__host", object)
}
