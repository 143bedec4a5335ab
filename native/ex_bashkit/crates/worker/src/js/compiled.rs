//! The session's JavaScript files compiled once per worker: the QuickJS
//! bytecode of each CommonJS file and ES module a run loads, kept by the
//! SHA-256 of its name and source, so that a later run (a fresh engine)
//! loading the same file reads the bytecode instead of parsing it again.
//!
//! The cache lives in this worker's memory only and is never shared:
//! QuickJS does not check the bytecode it reads, so bytecode from anywhere
//! else (another worker, which the host treats as hostile, or a file a
//! script could write) could corrupt the engine. Bytecode this process
//! compiled from a source is as safe to read as that source was to parse.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use rquickjs::module::{Declared, WriteOptions};
use rquickjs::{qjs, Ctx, Error, Module, Result, Value};
use sha2::{Digest, Sha256};

/// What the cache holds at most (bytecode, and files: a flood of tiny
/// ones must not grow the index); the oldest entries go first.
const MAX_BYTES: usize = 32 << 20;
const MAX_FILES: usize = 16_384;

type Key = [u8; 32];

struct Cache {
    entries: HashMap<Key, Arc<[u8]>>,
    order: VecDeque<Key>,
    bytes: usize,
    max_bytes: usize,
    max_files: usize,
}

impl Cache {
    fn new(max_bytes: usize, max_files: usize) -> Self {
        Cache {
            entries: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            max_bytes,
            max_files,
        }
    }

    fn keep(&mut self, key: Key, bytecode: Vec<u8>) {
        if bytecode.len() > self.max_bytes / 4 || self.entries.contains_key(&key) {
            return;
        }
        while self.bytes + bytecode.len() > self.max_bytes || self.order.len() >= self.max_files {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.entries.remove(&oldest) {
                self.bytes -= gone.len();
            }
        }
        self.bytes += bytecode.len();
        self.order.push_back(key);
        self.entries.insert(key, bytecode.into());
    }
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// The key of `source` compiled as `kind` under `name`.
fn key(kind: &str, name: &str, source: &str) -> Key {
    let mut hasher = Sha256::new();
    for part in [kind, name] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.update(source.as_bytes());
    hasher.finalize().into()
}

fn cached(key: &Key) -> Option<Arc<[u8]>> {
    let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.as_ref()?.entries.get(key).cloned()
}

fn keep(key: Key, bytecode: Vec<u8>) {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .get_or_insert_with(|| Cache::new(MAX_BYTES, MAX_FILES))
        .keep(key, bytecode);
}

/// Whether the cache holds `source` compiled as `kind` (`script` or
/// `module`) under `name`, and what all it holds takes.
#[cfg(test)]
pub fn holds(kind: &str, name: &str, source: &str) -> (bool, usize) {
    let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.as_ref().map_or((false, 0), |cache| {
        let key = key(kind, name, source);
        (cache.entries.contains_key(&key), cache.bytes)
    })
}

/// A raw value the engine answered, or the exception it left pending.
///
/// SAFETY: `value` is owned and from `ctx`'s runtime.
unsafe fn owned<'js>(ctx: &Ctx<'js>, value: qjs::JSValue) -> Result<Value<'js>> {
    if unsafe { qjs::JS_IsException(value) } {
        return Err(Error::Exception);
    }
    Ok(unsafe { Value::from_raw(ctx.clone(), value) })
}

/// `code`, a sloppy-mode script named `file` (a CommonJS file in its
/// wrapper), evaluated: compiled here the first time this worker sees it.
pub fn script<'js>(ctx: &Ctx<'js>, code: String, file: &str) -> Result<Value<'js>> {
    let key = key("script", file, &code);
    let raw = ctx.as_raw().as_ptr();
    let function = match cached(&key) {
        // SAFETY: bytecode this process wrote of a source it parsed.
        Some(bytecode) => unsafe {
            let read = qjs::JS_ReadObject(
                raw,
                bytecode.as_ptr(),
                bytecode.len() as _,
                qjs::JS_READ_OBJ_BYTECODE as i32,
            );
            owned(ctx, read)?
        },
        None => {
            let name = std::ffi::CString::new(file)?;
            let length = code.len();
            // JS_Eval reads up to a NUL past the source.
            let mut source = code.into_bytes();
            source.push(0);
            let flags = qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY;
            // SAFETY: the source is NUL-terminated past `length`, the name
            // a C string; the result is owned.
            let function = unsafe {
                let compiled = qjs::JS_Eval(
                    raw,
                    source.as_ptr().cast(),
                    length as _,
                    name.as_ptr(),
                    flags as i32,
                );
                owned(ctx, compiled)?
            };
            let mut length = 0;
            // SAFETY: the function is alive; the buffer is the engine's,
            // copied and freed here.
            unsafe {
                let written = qjs::JS_WriteObject(
                    raw,
                    &mut length,
                    function.as_raw(),
                    qjs::JS_WRITE_OBJ_BYTECODE as i32,
                );
                if !written.is_null() {
                    keep(
                        key,
                        std::slice::from_raw_parts(written, length as _).to_vec(),
                    );
                    qjs::js_free(raw, written.cast());
                }
            }
            function
        }
    };
    // SAFETY: JS_EvalFunction takes over a reference, so it gets its own.
    unsafe {
        let function = qjs::JS_DupValue(raw, function.as_raw());
        owned(ctx, qjs::JS_EvalFunction(raw, function))
    }
}

/// `source`, the ES module `name`, declared: compiled here the first time
/// this worker sees it.
pub fn module<'js>(ctx: &Ctx<'js>, name: &str, source: String) -> Result<Module<'js, Declared>> {
    let key = key("module", name, &source);
    if let Some(bytecode) = cached(&key) {
        // SAFETY: bytecode this process wrote of a source it parsed.
        return unsafe { Module::load(ctx.clone(), &bytecode) };
    }
    let module = Module::declare(ctx.clone(), name, source)?;
    if let Ok(bytecode) = module.write(WriteOptions::default()) {
        keep(key, bytecode);
    }
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::{key, Cache};

    #[test]
    fn the_oldest_bytecode_goes_first_and_a_flood_stays_bounded() {
        let mut cache = Cache::new(1_000, 8);
        let name = |n: usize| key("script", &format!("/f{n}.js"), "");
        for n in 0..100 {
            cache.keep(name(n), vec![0; 100]);
            assert!(cache.bytes <= 1_000 && cache.entries.len() <= 8);
            assert_eq!(cache.entries.len(), cache.order.len());
        }
        assert!(cache.entries.contains_key(&name(99)) && !cache.entries.contains_key(&name(91)));
        // Too big for the cache: not kept, nothing evicted for it.
        cache.keep(name(100), vec![0; 251]);
        assert!(!cache.entries.contains_key(&name(100)) && cache.entries.len() == 8);
        // A big one evicts as many as it needs.
        cache.keep(name(101), vec![0; 250]);
        assert_eq!((cache.entries.len(), cache.bytes), (8, 950));
        assert!(!cache.entries.contains_key(&name(92)) && cache.entries.contains_key(&name(93)));
    }
}
