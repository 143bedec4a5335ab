// The Node-like globals of `node` in a sandbox: console, process, require
// ("fs", "path" and the session's own files, CommonJS). `__host` holds the
// native functions (js.rs); each file operation answers JSON,
// {"ok": value} or {"err": code, "msg": text}.
(function (host) {
  "use strict";

  const seen = new WeakSet();

  function quote(text) {
    const q = text.includes("'") && !text.includes('"') ? '"' : "'";
    return q + text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(new RegExp(q, "g"), "\\" + q) + q;
  }

  function key(name) {
    return typeof name === "symbol" ? "[" + name.toString() + "]"
      : /^[A-Za-z_$][\w$]*$/.test(name) ? name : quote(name);
  }

  function join(open, items, close, indent) {
    if (items.length === 0) return open.trim() + close.trim();
    const flat = open + " " + items.join(", ") + " " + close;
    if (flat.length <= 72 && !items.some((item) => item.includes("\n"))) return flat;
    const pad = "  ".repeat(indent + 1);
    return open + "\n" + items.map((item) => pad + item).join(",\n") + "\n" + "  ".repeat(indent) + close;
  }

  function inspect(value, depth, indent, top) {
    switch (typeof value) {
      case "string": return top ? value : quote(value);
      case "number": return Object.is(value, -0) ? "-0" : String(value);
      case "bigint": return value + "n";
      case "undefined": return "undefined";
      case "boolean": return String(value);
      case "symbol": return value.toString();
      case "function": {
        const name = value.name ? ": " + value.name : " (anonymous)";
        const kind = /^class\b/.test(Function.prototype.toString.call(value)) ? "[class" : "[Function";
        return kind + (kind === "[class" ? (value.name ? " " + value.name : " (anonymous)") : name) + "]";
      }
    }
    if (value === null) return "null";
    if (seen.has(value)) return "[Circular *1]";
    if (value instanceof Error) return value.stack && !top ? String(value.stack).trim() : errorText(value);
    if (value instanceof Date) return isNaN(value) ? "Invalid Date" : value.toISOString();
    if (value instanceof RegExp) return String(value);
    if (depth > 2) return Array.isArray(value) ? "[Array]" : "[Object]";
    seen.add(value);
    try {
      if (Array.isArray(value)) {
        const items = [];
        let holes = 0;
        for (let i = 0; i < value.length; i++) {
          if (!(i in value)) { holes++; continue; }
          if (holes) { items.push("<" + holes + " empty item" + (holes > 1 ? "s" : "") + ">"); holes = 0; }
          items.push(inspect(value[i], depth + 1, indent + 1));
        }
        if (holes) items.push("<" + holes + " empty item" + (holes > 1 ? "s" : "") + ">");
        return join("[", items, "]", indent);
      }
      if (value instanceof Map) {
        const items = [...value].map(([k, v]) => inspect(k, depth + 1, indent + 1) + " => " + inspect(v, depth + 1, indent + 1));
        return join("Map(" + value.size + ") {", items, "}", indent);
      }
      if (value instanceof Set) {
        const items = [...value].map((v) => inspect(v, depth + 1, indent + 1));
        return join("Set(" + value.size + ") {", items, "}", indent);
      }
      if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
        const items = Array.from(value, (v) => inspect(v, depth + 1, indent + 1));
        return join(value.constructor.name + "(" + value.length + ") [", items, "]", indent);
      }
      if (value instanceof Promise) return "Promise { <pending> }";
      const proto = Object.getPrototypeOf(value);
      const name = proto === null ? "[Object: null prototype]"
        : proto === Object.prototype ? "" : (proto.constructor && proto.constructor.name) || "";
      const items = Reflect.ownKeys(value)
        .filter((k) => Object.prototype.propertyIsEnumerable.call(value, k))
        .map((k) => {
          const desc = Object.getOwnPropertyDescriptor(value, k);
          const shown = desc.get ? (desc.set ? "[Getter/Setter]" : "[Getter]")
            : desc.set ? "[Setter]" : inspect(value[k], depth + 1, indent + 1);
          return key(k) + ": " + shown;
        });
      return join((name ? name + " " : "") + "{", items, "}", indent);
    } finally {
      seen.delete(value);
    }
  }

  function errorText(error) {
    const head = String(error.name || "Error") + (error.message ? ": " + error.message : "");
    return head;
  }

  function format(args) {
    let rest = args;
    let out = "";
    if (typeof args[0] === "string" && /%[sdifjoO%]/.test(args[0])) {
      let i = 1;
      out = args[0].replace(/%[sdifjoO%]/g, (spec) => {
        if (spec === "%%") return "%";
        if (i >= args.length) return spec;
        const v = args[i++];
        switch (spec) {
          case "%s": return typeof v === "string" ? v : inspect(v, 1, 0, false);
          case "%d": case "%i": return String(spec === "%i" ? parseInt(v) : Number(v));
          case "%f": return String(parseFloat(v));
          case "%j": return JSON.stringify(v);
          default: return inspect(v, 0, 0, false);
        }
      });
      rest = args.slice(i);
      return [out, ...rest.map((v) => inspect(v, 0, 0, true))].join(" ");
    }
    return rest.map((v) => inspect(v, 0, 0, true)).join(" ");
  }

  const write = (fd) => (...args) => host.write(fd, format(args) + "\n");
  globalThis.console = {
    log: write(1), info: write(1), debug: write(1), dir: write(1), table: write(1),
    error: write(2), warn: write(2), trace: write(2),
  };

  function answered(json) {
    const answer = JSON.parse(json);
    if ("ok" in answer) return answer.ok;
    const error = new Error(answer.msg);
    error.code = answer.err;
    throw error;
  }
  function call(op, ...args) { return answered(host.fs(op, JSON.stringify(args))); }
  call.fetch = (...args) => answered(host.fetch(...args));

  const path = {
    sep: "/",
    normalize(p) {
      const absolute = p.startsWith("/");
      const parts = [];
      for (const part of p.split("/")) {
        if (part === "" || part === ".") continue;
        if (part === "..") { if (parts.length && parts[parts.length - 1] !== "..") parts.pop(); else if (!absolute) parts.push(".."); }
        else parts.push(part);
      }
      const joined = (absolute ? "/" : "") + parts.join("/");
      return joined || (absolute ? "/" : ".");
    },
    join(...parts) { return path.normalize(parts.filter((p) => p !== "").join("/") || "."); },
    resolve(...parts) {
      let resolved = "";
      for (let i = parts.length - 1; i >= 0 && !resolved.startsWith("/"); i--) resolved = parts[i] + (resolved ? "/" + resolved : "");
      if (!resolved.startsWith("/")) resolved = host.cwd() + "/" + resolved;
      const normal = path.normalize(resolved);
      return normal.length > 1 && normal.endsWith("/") ? normal.slice(0, -1) : normal;
    },
    dirname(p) { const i = p.replace(/\/+$/, "").lastIndexOf("/"); return i < 0 ? "." : i === 0 ? "/" : p.slice(0, i); },
    basename(p, ext) { let b = p.replace(/\/+$/, ""); b = b.slice(b.lastIndexOf("/") + 1); return ext && b.endsWith(ext) ? b.slice(0, -ext.length) : b; },
    extname(p) { const b = path.basename(p); const i = b.lastIndexOf("."); return i <= 0 ? "" : b.slice(i); },
    isAbsolute(p) { return p.startsWith("/"); },
    relative(from, to) {
      const a = path.resolve(from).split("/").filter(Boolean), b = path.resolve(to).split("/").filter(Boolean);
      let i = 0; while (i < a.length && i < b.length && a[i] === b[i]) i++;
      return [...a.slice(i).map(() => ".."), ...b.slice(i)].join("/");
    },
  };
  path.posix = path;

  const fs = {
    readFileSync(file, options) { return call("read", path.resolve(String(file))); },
    writeFileSync(file, data) { call("write", path.resolve(String(file)), String(data), false); },
    appendFileSync(file, data) { call("write", path.resolve(String(file)), String(data), true); },
    existsSync(file) { return call("exists", path.resolve(String(file))); },
    readdirSync(dir) { return call("readdir", path.resolve(String(dir))); },
    mkdirSync(dir, options) { call("mkdir", path.resolve(String(dir)), !!(options && options.recursive)); },
    rmSync(file, options) { call("remove", path.resolve(String(file)), !!(options && options.recursive)); },
    unlinkSync(file) { call("remove", path.resolve(String(file)), false); },
    statSync(file) {
      const [kind, size] = call("stat", path.resolve(String(file)));
      return { size, isFile: () => kind === "file", isDirectory: () => kind === "dir", isSymbolicLink: () => kind === "symlink" };
    },
  };
  fs.promises = Object.fromEntries(Object.entries(fs).filter(([, f]) => typeof f === "function")
    .map(([name, f]) => [name.replace(/Sync$/, ""), async (...args) => f(...args)]));

  // require("crypto"): hashes and HMAC, digested to hex or base64 (no
  // Buffer here: a digest without an encoding is hex too).
  function hasher(algorithm, key) {
    const parts = [];
    const hash = {
      update(data) { parts.push(String(data)); return hash; },
      digest(encoding) {
        const hex = host.hash(String(algorithm), key, parts.join(""));
        if (encoding !== "base64") return hex;
        const bytes = hex.match(/../g).map((h) => parseInt(h, 16));
        const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let out = "";
        for (let i = 0; i < bytes.length; i += 3) {
          const [a, b = 0, c = 0] = bytes.slice(i, i + 3);
          const n = (a << 16) | (b << 8) | c;
          out += alphabet[(n >> 18) & 63] + alphabet[(n >> 12) & 63] +
            (i + 1 < bytes.length ? alphabet[(n >> 6) & 63] : "=") + (i + 2 < bytes.length ? alphabet[n & 63] : "=");
        }
        return out;
      },
    };
    return hash;
  }
  const crypto = {
    createHash: (algorithm) => hasher(algorithm, undefined),
    createHmac: (algorithm, key) => hasher(algorithm, String(key)),
    randomUUID() {
      const h = () => Math.floor(Math.random() * 16).toString(16);
      return "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".replace(/[xy]/g, (c) => c === "x" ? h() : (8 + Math.floor(Math.random() * 4)).toString(16));
    },
  };

  const cache = Object.create(null);
  function load(file) {
    if (file in cache) return cache[file].exports;
    const module = { exports: {}, filename: file };
    cache[file] = module;
    const source = call("read", file);
    if (file.endsWith(".json")) { module.exports = JSON.parse(source); return module.exports; }
    const wrapped = host.compile("(function (exports, require, module, __filename, __dirname) {" + source + "\n})", file);
    wrapped(module.exports, requireFrom(path.dirname(file)), module, file, path.dirname(file));
    return module.exports;
  }

  function requireFrom(dir) {
    return function require(name) {
      if (name === "fs" || name === "node:fs") return fs;
      if (name === "fs/promises" || name === "node:fs/promises") return fs.promises;
      if (name === "path" || name === "node:path") return path;
      if (name === "crypto" || name === "node:crypto") return crypto;
      if (name.startsWith("/") || name.startsWith("./") || name.startsWith("../")) {
        const base = path.resolve(dir, name);
        for (const file of [base, base + ".js", base + ".json", base + "/index.js"]) {
          if (call("exists", file) && call("stat", file)[0] === "file") return load(file);
        }
      }
      const error = new Error("Cannot find module '" + name + "'");
      error.code = "MODULE_NOT_FOUND";
      throw error;
    };
  }

  globalThis.require = requireFrom(host.cwd());
  globalThis.process = {
    argv: JSON.parse(host.argv()),
    env: JSON.parse(host.env()),
    platform: "linux",
    version: "v20.0.0",
    versions: { node: "20.0.0" },
    exitCode: undefined,
    cwd: () => host.cwd(),
    exit(code) { host.exit(code === undefined ? (process.exitCode || 0) : Number(code) | 0); },
    stdout: { write(text) { host.write(1, String(text)); return true; } },
    stderr: { write(text) { host.write(2, String(text)); return true; } },
    nextTick(fn, ...args) { Promise.resolve().then(() => fn(...args)); },
  };
  globalThis.setTimeout = (fn, ms, ...args) => { Promise.resolve().then(() => fn(...args)); return 0; };
  globalThis.setImmediate = (fn, ...args) => globalThis.setTimeout(fn, 0, ...args);
  globalThis.queueMicrotask = (fn) => { Promise.resolve().then(fn); };
  globalThis.__inspect = (value) => inspect(value, 0, 0, true);

  // fetch: the session's HTTP client (its allowlist; in a worker, the
  // host's egress). Bodies are text; the whole response is read at once.
  function Headers(init) {
    const map = new Map();
    const entries = init instanceof Map || Array.isArray(init) ? init : Object.entries(init || {});
    for (const [name, value] of entries) map.set(String(name).toLowerCase(), String(value));
    return {
      get: (name) => map.has(String(name).toLowerCase()) ? map.get(String(name).toLowerCase()) : null,
      has: (name) => map.has(String(name).toLowerCase()),
      entries: () => map.entries(),
      forEach: (fn) => map.forEach((value, name) => fn(value, name)),
      [Symbol.iterator]: () => map.entries(),
    };
  }
  globalThis.fetch = async function fetch(url, options = {}) {
    const headers = [];
    for (const [name, value] of Object.entries(options.headers || {})) headers.push(String(name), String(value));
    const body = options.body === undefined || options.body === null ? undefined : String(options.body);
    const [status, flat, text] = call.fetch(String(options.method || "GET"), String(url), JSON.stringify(headers), body);
    const pairs = [];
    for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]]);
    return {
      status, ok: status >= 200 && status < 300, url: String(url), headers: Headers(pairs),
      text: async () => text,
      json: async () => JSON.parse(text),
    };
  };

  // tools.orders.list({customer: "acme"}): the session's builtin `orders`
  // with the argument `list` and the object as JSON on stdin (js.rs);
  // resolves to the JSON it prints, or its text.
  function tool(path) {
    return new Proxy(function () {}, {
      get(_, key) { return typeof key === "string" && key !== "then" ? tool([...path, key]) : undefined; },
      apply(_, self, args) {
        return new Promise((resolve) => {
          const out = answered(host.tool(JSON.stringify(path), JSON.stringify(args[0] === undefined ? {} : args[0])));
          try { resolve(JSON.parse(out)); } catch { resolve(out); }
        });
      },
    });
  }
  globalThis.tools = new Proxy({}, {
    get(_, key) { return typeof key === "string" && key !== "then" ? tool([key]) : undefined; },
  });

  // `node --execute`: the code runner's driver (js.rs takes it out of
  // reach before the script runs). It calls execute(input), awaits it,
  // and hands the host the JSON of its value or of what it threw.
  // What execute(input) threw, to the host, which says what it was (a
  // thrown null is QuickJS out of memory only when memory ran out).
  function thrown(error) {
    if (error instanceof Error) host.threw(String(error.name), String(error.message), String(error.stack || ""), false);
    else host.threw("Error", "Uncaught " + inspect(error, 0, 0, false), "", error === null);
  }
  globalThis.__drive = function (execute, input) {
    if (typeof execute !== "function") {
      host.threw("ReferenceError", "the code defines no function execute(input)", "", false);
      return;
    }
    Promise.resolve().then(() => execute(JSON.parse(input))).then((value) => {
      let json;
      try { json = JSON.stringify(value === undefined ? null : value); } catch (error) { return thrown(error); }
      host.returned(json === undefined ? "null" : json);
    }, thrown);
  };

  // In `--execute` mode the script gets only what its grants allow.
  const grants = host.grants();
  if (grants !== undefined && grants !== null) {
    const allowed = JSON.parse(grants);
    delete globalThis.require;
    delete globalThis.process;
    if (!allowed.fetch) delete globalThis.fetch;
    if (allowed.crypto) globalThis.crypto = crypto;
    if (allowed.read_files) {
      const readFileSync = (file) => call("read", path.resolve(String(file)));
      globalThis.fs = {
        readFileSync,
        readFile: async (file) => readFileSync(file),
        existsSync: fs.existsSync,
        readdirSync: fs.readdirSync,
        statSync: fs.statSync,
        promises: { readFile: async (file) => readFileSync(file) },
      };
    }
  }

  // The structured clone algorithm, for the values scripts pass around.
  globalThis.structuredClone = function structuredClone(value, copies = new Map()) {
    if (typeof value === "function" || typeof value === "symbol") {
      const error = new Error(String(value) + " could not be cloned.");
      error.name = "DataCloneError";
      throw error;
    }
    if (value === null || typeof value !== "object") return value;
    if (copies.has(value)) return copies.get(value);
    let copy;
    if (value instanceof Date) copy = new Date(value.getTime());
    else if (value instanceof RegExp) copy = new RegExp(value.source, value.flags);
    else if (ArrayBuffer.isView(value)) copy = value.slice();
    else if (value instanceof Map) { copy = new Map(); copies.set(value, copy); for (const [k, v] of value) copy.set(structuredClone(k, copies), structuredClone(v, copies)); return copy; }
    else if (value instanceof Set) { copy = new Set(); copies.set(value, copy); for (const v of value) copy.add(structuredClone(v, copies)); return copy; }
    else if (Array.isArray(value)) { copy = []; copies.set(value, copy); value.forEach((v, i) => { copy[i] = structuredClone(v, copies); }); return copy; }
    else if (value instanceof Error) { copy = new value.constructor(value.message); }
    else { copy = {}; copies.set(value, copy); for (const k of Object.keys(value)) copy[k] = structuredClone(value[k], copies); return copy; }
    copies.set(value, copy);
    return copy;
  };
})(__host);
