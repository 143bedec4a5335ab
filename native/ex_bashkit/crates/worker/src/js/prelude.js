// The Node-like globals of `node` in a sandbox: console, process, require
// (Node's modules, the session's CommonJS files and node_modules' packages),
// fs, path, crypto, the timers and the loop's hooks, fetch, tools.
// `__host` holds the native functions (bridge.rs); each file operation
// answers JSON, {"ok": value} or {"err": code, "msg": text}. Over 500
// lines: these share one closure (inspect, the module cache, the timers'
// queues); Buffer (buffer.js) and the modules that need none of it
// (stdlib.js) are files of their own.
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
    if (value instanceof Buffer) {
      const shown = Array.from(value.subarray(0, 50), (b) => b.toString(16).padStart(2, "0")).join(" ");
      return "<Buffer" + (shown ? " " + shown : "") + (value.length > 50 ? " ... " + (value.length - 50) + " more bytes" : "") + ">";
    }
    if (value instanceof RegExp) return String(value);
    if (depth > 2) {
      if (Array.isArray(value)) return "[Array]";
      const name = Object.getPrototypeOf(value) === null ? "Object: null prototype" : (value.constructor && value.constructor.name) || "Object";
      return "[" + name + "]";
    }
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
    if (typeof args[0] === "string" && args.length > 1 && /%[sdifjoO%]/.test(args[0])) {
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

  // console: group indents what follows; time, count and assert as Node's.
  let indent = "";
  const write = (fd) => (...args) => host.write(fd, (indent ? format(args).replace(/^/gm, indent) : format(args)) + "\n");
  const timings = new Map();
  const counts = new Map();
  globalThis.console = {
    log: write(1), info: write(1), debug: write(1), dir: write(1), dirxml: write(1), table: write(1),
    error: write(2), warn: write(2), trace: write(2),
    group(...label) { if (label.length) console.log(...label); indent += "  "; },
    groupEnd() { indent = indent.slice(2); },
    assert(value, ...message) { if (!value) console.error(...(message.length ? ["Assertion failed:", ...message] : ["Assertion failed"])); },
    count(label = "default") { const n = (counts.get(label) || 0) + 1; counts.set(label, n); console.log(label + ": " + n); },
    countReset(label = "default") { counts.delete(label); },
    time(label = "default") { if (!timings.has(label)) timings.set(label, host.now()); },
    timeLog(label = "default", ...data) { if (timings.has(label)) console.log(label + ": " + elapsed(host.now() - timings.get(label)), ...data); },
    timeEnd(label = "default") { if (timings.has(label)) { console.log(label + ": " + elapsed(host.now() - timings.get(label))); timings.delete(label); } },
    clear() {},
    timeStamp() {}, profile() {}, profileEnd() {},
  };
  console.groupCollapsed = console.group;
  const elapsed = (ms) => ms < 1000 ? ms.toFixed(3) + "ms" : (ms / 1000).toFixed(3) + "s";

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
  path.parse = (p) => {
    const root = p.startsWith("/") ? "/" : "";
    const base = path.basename(p), ext = path.extname(p);
    const dir = p.includes("/") ? path.dirname(p) : "";
    return { root, dir, base, ext, name: ext ? base.slice(0, -ext.length) : base };
  };
  path.format = (o) => {
    const base = o.base || (o.name || "") + (o.ext || "");
    const dir = o.dir || o.root || "";
    return dir ? (dir === o.root ? dir + base : dir + "/" + base) : base;
  };
  path.delimiter = ":";
  path.toNamespacedPath = (p) => p;
  path.posix = path;

  // An encoding given as a string or as {encoding}; none means bytes.
  const encodingOf = (options) => typeof options === "string" ? options : options && options.encoding;
  function readFile(file, options) {
    const bytes = host.readBytes(path.resolve(String(file)));
    if (typeof bytes === "string") answered(bytes);
    const encoding = encodingOf(options);
    const buffer = Buffer.from(bytes);
    return encoding ? buffer.toString(encoding) : buffer;
  }
  function writeFile(file, data, options, append) {
    const bytes = ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(String(data), encodingOf(options) || "utf8");
    answered(host.writeBytes(path.resolve(String(file)), bytes, append));
  }
  const fs = {
    readFileSync: (file, options) => readFile(file, options),
    writeFileSync(file, data, options) { writeFile(file, data, options, false); },
    appendFileSync(file, data, options) { writeFile(file, data, options, true); },
    existsSync(file) { return call("exists", path.resolve(String(file))); },
    readdirSync(dir) { return call("readdir", path.resolve(String(dir))); },
    mkdirSync(dir, options) { call("mkdir", path.resolve(String(dir)), !!(options && options.recursive)); },
    rmSync(file, options) { call("remove", path.resolve(String(file)), !!(options && options.recursive)); },
    unlinkSync(file) { call("remove", path.resolve(String(file)), false); },
    statSync(file) {
      const [kind, size, mode, mtimeMs] = call("stat", path.resolve(String(file)));
      const mtime = new Date(mtimeMs);
      return {
        size, mode, mtimeMs, mtime, ctime: mtime, atime: mtime, birthtime: mtime,
        isFile: () => kind === "file", isDirectory: () => kind === "dir", isSymbolicLink: () => kind === "symlink",
      };
    },
    lstatSync(file) { return fs.statSync(file); },
    accessSync(file) { fs.statSync(file); },
    renameSync(from, to) { call("rename", path.resolve(String(from)), path.resolve(String(to))); },
    copyFileSync(from, to) { call("copy", path.resolve(String(from)), path.resolve(String(to))); },
    rmdirSync(dir, options) { call("remove", path.resolve(String(dir)), !!(options && options.recursive)); },
    realpathSync(file) { fs.statSync(file); return path.resolve(String(file)); },
    mkdtempSync(prefix) {
      for (;;) {
        const dir = path.resolve(String(prefix) + Math.random().toString(36).slice(2, 8));
        if (!fs.existsSync(dir)) { call("mkdir", dir, true); return dir; }
      }
    },
  };
  const readdir = fs.readdirSync;
  fs.readdirSync = (dir, options) => {
    const names = readdir(dir);
    if (!(options && options.withFileTypes)) return names;
    return names.map((name) => {
      const stat = fs.statSync(path.join(path.resolve(String(dir)), name));
      return { name, isFile: stat.isFile, isDirectory: stat.isDirectory, isSymbolicLink: stat.isSymbolicLink };
    });
  };
  fs.constants = { F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1 };
  fs.realpathSync.native = fs.realpathSync;
  Object.assign(fs, { F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1 });
  fs.promises = Object.fromEntries(Object.entries(fs).filter(([name, f]) => typeof f === "function" && name.endsWith("Sync") && name !== "existsSync")
    .map(([name, f]) => [name.replace(/Sync$/, ""), async (...args) => f(...args)]));

  // require("crypto"): hashes and HMAC, digested to hex or base64 (no
  // Buffer here: a digest without an encoding is hex too).
  const bytesOf = (data, encoding) => {
    const buffer = typeof data === "string" ? Buffer.from(data, encoding || "utf8") : Buffer.from(data);
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  };
  function hasher(algorithm, key) {
    const parts = [];
    const hash = {
      update(data, encoding) { parts.push(bytesOf(data, encoding)); return hash; },
      digest(encoding) {
        const hex = host.hash(String(algorithm), key, bytesOf(Buffer.concat(parts)));
        const bytes = Buffer.from(hex, "hex");
        return encoding === undefined || encoding === "buffer" ? bytes : bytes.toString(encoding);
      },
    };
    return hash;
  }
  // Random bytes from the kernel (getrandom), not Math.random.
  const randomBytes = (size, callback) => {
    if (!Number.isInteger(size) || size < 0) throw new RangeError('The argument \'size\' is invalid. Received ' + size);
    const bytes = Buffer.from(host.randomBytes(size));
    if (typeof callback === "function") { process.nextTick(() => callback(null, bytes)); return undefined; }
    return bytes;
  };
  const crypto = {
    createHash: (algorithm) => hasher(algorithm, undefined),
    createHmac: (algorithm, key) => hasher(algorithm, bytesOf(key)),
    randomBytes,
    getRandomValues(array) {
      const bytes = host.randomBytes(array.byteLength);
      new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(new Uint8Array(bytes));
      return array;
    },
    randomInt(min, max) {
      if (max === undefined) { max = min; min = 0; }
      const range = max - min;
      const n = new Uint32Array(host.randomBytes(4))[0];
      return min + (n % range);
    },
    randomFillSync(buffer, offset = 0, size) {
      const view = new Uint8Array(buffer.buffer || buffer, buffer.byteOffset || 0, buffer.byteLength);
      if (size === undefined) size = view.length - offset;
      if (!Number.isInteger(offset) || offset < 0 || offset > view.length) throw Object.assign(new RangeError('The value of "offset" is out of range. It must be >= 0 && <= ' + view.length + '. Received ' + offset), { code: "ERR_OUT_OF_RANGE" });
      if (!Number.isInteger(size) || size < 0 || offset + size > view.length) throw Object.assign(new RangeError('The value of "size" is out of range. It must be >= 0 && <= ' + (view.length - offset) + '. Received ' + size), { code: "ERR_OUT_OF_RANGE" });
      view.set(new Uint8Array(host.randomBytes(size)), offset);
      return buffer;
    },
    randomFill(buffer, ...rest) {
      const callback = rest.pop();
      if (typeof callback !== "function") throw Object.assign(new TypeError('The "callback" argument must be of type function'), { code: "ERR_INVALID_ARG_TYPE" });
      let result;
      try { result = crypto.randomFillSync(buffer, ...rest); } catch (error) { throw error; }
      process.nextTick(() => callback(null, result));
    },
    getHashes: () => ["md5", "sha1", "sha256", "sha384", "sha512"],
    timingSafeEqual(a, b) {
      if (a.byteLength !== b.byteLength) throw Object.assign(new RangeError("Input buffers must have the same byte length"), { code: "ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH" });
      const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      let diff = 0;
      for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
      return diff === 0;
    },
    randomUUID() {
      const b = new Uint8Array(host.randomBytes(16));
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
      return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-" + hex.slice(12, 16) + "-" + hex.slice(16, 20) + "-" + hex.slice(20);
    },
  };
  crypto.webcrypto = { getRandomValues: crypto.getRandomValues, randomUUID: crypto.randomUUID };
  crypto.randomInt = function randomInt(min, max, callback) {
    if (typeof max === "function" || max === undefined) { callback = max; max = min; min = 0; }
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max <= min) {
      throw Object.assign(new RangeError('The value of "max" is out of range. It must be greater than the value of "min" (' + min + '). Received ' + max), { code: "ERR_OUT_OF_RANGE" });
    }
    // Rejection sampling over 48 bits, so that no value is likelier than another.
    const range = max - min;
    const limit = 2 ** 48 - (2 ** 48 % range);
    let n;
    do {
      const b = new Uint8Array(host.randomBytes(6));
      n = b.reduce((acc, byte) => acc * 256 + byte, 0);
    } while (n >= limit);
    const value = min + (n % range);
    if (typeof callback === "function") { process.nextTick(() => callback(null, value)); return undefined; }
    return value;
  };

  // Node's modules the prelude makes; the rarer ones come in a chunk
  // (modules.js) the first time a program asks for one.
  const builtins = {
    fs: () => fs,
    "fs/promises": () => fs.promises,
    path: () => path,
    "path/posix": () => path,
    crypto: () => crypto,
    timers: () => timers,
    "timers/promises": () => timersPromises,
    process: () => process,
    console: () => console,
    sys: () => host.modules.util,
    constants: () => ({ ...fs.constants, ...(host.modules.os.constants || {}) }),
  };

  // Node's module system: where a module is comes from resolve.rs (the
  // one resolver `import` uses too); loaded modules are kept by file.
  const cache = Object.create(null);
  const moduleError = (message, code) => Object.assign(new Error(message), { code });
  // Node's modules as this node has them; a name Node's has and this one
  // lacks answers its use with why (so that `import { name }` of it
  // loads, and a call says what is missing).
  const made = Object.create(null);
  function builtin(name) {
    if (name in made) return made[name];
    let module;
    if (name in builtins) module = builtins[name]();
    else if (name in host.modules) module = host.modules[name];
    else throw moduleError("No such built-in module: " + name, "ERR_UNKNOWN_BUILTIN_MODULE");
    if (module && (typeof module === "object" || typeof module === "function") && !Object.isFrozen(module)) {
      for (const key of JSON.parse(host.nodeExports(name))) {
        if (key in module) continue;
        const missing = function () {
          throw moduleError(name + "." + key + " is not available in the sandbox's node", "ERR_SANDBOX_UNAVAILABLE");
        };
        Object.defineProperty(module, key, { value: missing, enumerable: true, configurable: true, writable: true });
      }
    }
    return made[name] = module;
  }
  function Module(file, parent) {
    this.id = file;
    this.path = path.dirname(file);
    this.filename = file;
    this.exports = {};
    this.loaded = false;
    this.children = [];
    this.paths = [];
    this.parent = parent;
    this.require = requireFrom(file, this);
  }
  function load(file, format, parent) {
    if (file in cache) return cache[file];
    if (format === "addon") {
      throw moduleError("Cannot load native addon " + file + ": node in a sandbox runs JavaScript only; " +
        "use a pure JavaScript package instead", "ERR_DLOPEN_FAILED");
    }
    const [kind, source] = answered(host.source(file, format));
    const module = new Module(file, parent);
    if (parent && parent.children) parent.children.push(module);
    cache[file] = module;
    try {
      if (kind === "module") {
        // Node 20.19's require(esm): the namespace, marked as transpiled
        // ES modules mark theirs, or what it exports as "module.exports".
        const namespace = host.requireModule(file);
        if ("module.exports" in namespace) module.exports = namespace["module.exports"];
        else if ("default" in namespace && !("__esModule" in namespace)) {
          module.exports = Object.assign(Object.create(null), { __esModule: true }, namespace);
        } else module.exports = namespace;
      } else if (kind === "json") {
        try { module.exports = JSON.parse(source); } catch (error) { error.message = file + ": " + error.message; throw error; }
      } else {
        const wrapped = host.compile("(function (exports, require, module, __filename, __dirname) {" + source + "\n})", file);
        wrapped.call(module.exports, module.exports, module.require, module, file, path.dirname(file));
      }
    } catch (error) {
      delete cache[file];
      throw error;
    }
    module.loaded = true;
    return module;
  }
  function requireFrom(parentFile, parentModule) {
    const resolve = (name, mode) => {
      if (typeof name !== "string") {
        throw Object.assign(new TypeError('The "id" argument must be of type string. Received ' + inspect(name, 0, 0)), { code: "ERR_INVALID_ARG_TYPE" });
      }
      return answered(host.resolve(name, parentFile, mode));
    };
    const require = function require(name) {
      const [file, format] = resolve(name, "require");
      return format === "builtin" ? builtin(file) : load(file, format, parentModule).exports;
    };
    require.resolve = (name) => resolve(name, "require")[0];
    require.resolve.paths = (name) => /^(\.|\/)/.test(name) ? [path.dirname(parentFile)] :
      path.dirname(parentFile).split("/").map((_, i, all) => (all.slice(0, all.length - i).join("/") || "") + "/node_modules");
    require.cache = cache;
    Object.defineProperty(require, "main", { get: () => mainModule, enumerable: true });
    require.extensions = { ".js": null, ".json": null, ".node": null };
    return require;
  }
  // For the chunk of Node's rarer modules (modules.js).
  host.internal = { moduleError, requireFrom, Module, cache, inspect };
  // import() and `import` of a CommonJS file or of Node's own modules (modules.rs).
  Object.defineProperty(globalThis, "__commonjs", {
    value: (name) => name.startsWith("node:") ? builtin(name.slice(5)) : load(name, "commonjs", mainModule).exports,
  });

  // The program's own module: a file run by name, or `[eval]` in the
  // working directory; a CommonJS program sees it as `module`.
  const [mainFile, mainModuleFlag] = host.main();
  const mainIsModule = mainModuleFlag === "true";
  const mainModule = new Module(mainFile, null);
  mainModule.id = ".";
  cache[mainFile] = mainModule;
  globalThis.require = mainModule.require;
  if (!mainIsModule) {
    Object.assign(globalThis, { module: mainModule, exports: mainModule.exports, __filename: mainFile, __dirname: path.dirname(mainFile) });
  }
  // process: an event emitter of its own (Node's `events` is a chunk
  // made on first use; most programs only listen for 'exit').
  const listeners = new Map();
  const listening = (name) => listeners.get(name) || (listeners.set(name, []), listeners.get(name));
  const started = Date.now() - host.now();
  const hrtime = (previous) => {
    const ns = BigInt(Math.round((started + host.now()) * 1e6));
    const now = [Number(ns / 1000000000n), Number(ns % 1000000000n)];
    if (!previous) return now;
    let [s, n] = [now[0] - previous[0], now[1] - previous[1]];
    if (n < 0) { s -= 1; n += 1e9; }
    return [s, n];
  };
  hrtime.bigint = () => BigInt(Math.round((started + host.now()) * 1e6));
  let exiting = false;
  globalThis.process = {
    title: "node",
    argv: JSON.parse(host.argv()),
    argv0: "node",
    execArgv: [],
    execPath: "/usr/bin/node",
    env: JSON.parse(host.env()),
    platform: "linux",
    arch: "x64",
    pid: 1,
    ppid: 0,
    version: "v20.0.0",
    versions: { node: "20.0.0", modules: "115" },
    release: { name: "node", lts: "Iron" },
    features: { inspector: false, debug: false, uv: false, ipv6: true, tls: false, cached_builtins: true },
    config: { variables: {} },
    exitCode: undefined,
    allowedNodeEnvironmentFlags: new Set(),
    cwd: () => host.cwd(),
    exit(code) {
      if (code !== undefined) process.exitCode = Number(code) | 0;
      if (!exiting) { exiting = true; process.emit("exit", process.exitCode || 0); }
      host.exit(process.exitCode || 0);
    },
    stdout: { write(text) { host.write(1, String(text)); return true; } },
    stderr: { write(text) { host.write(2, String(text)); return true; } },
    // Run by the engine's loop (run.rs) before the promise jobs, as Node does.
    nextTick(fn, ...args) { callable(fn); ticks.push(() => fn(...args)); },
    hrtime,
    uptime: () => host.now() / 1000,
    memoryUsage: Object.assign(() => ({ rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 }), { rss: () => 0 }),
    cpuUsage: () => ({ user: 0, system: 0 }),
    resourceUsage: () => ({}),
    umask: () => 0o22,
    getuid: () => 0, geteuid: () => 0, getgid: () => 0, getegid: () => 0, getgroups: () => [0],
    emitWarning(warning, type, code) {
      const options = type && typeof type === "object" ? type : { type, code };
      const name = warning instanceof Error ? warning.name : options.type || "Warning";
      const message = warning instanceof Error ? warning.message : String(warning);
      if (process.noDeprecation && name === "DeprecationWarning") return;
      host.write(2, "(node:" + process.pid + ") " + (options.code ? "[" + options.code + "] " : "") + name + ": " + message +
        "\n(Use `node --trace-warnings ...` to show where the warning was created)\n");
    },
    kill() { throw moduleError("process.kill is not available in the sandbox: node here cannot signal processes", "ERR_SANDBOX_UNAVAILABLE"); },
    chdir() { throw moduleError("process.chdir is not available in the sandbox: change directory in the shell before running node", "ERR_SANDBOX_UNAVAILABLE"); },
    abort() { host.exit(134); },
    binding(name) { throw moduleError("No such module: " + name, "ERR_INVALID_MODULE"); },
    on(name, fn) { listening(name).push(fn); return process; },
    once(name, fn) { const once = (...args) => { process.off(name, once); fn(...args); }; once.listener = fn; return process.on(name, once); },
    off(name, fn) {
      const list = listening(name);
      const at = list.findIndex((l) => l === fn || l.listener === fn);
      if (at >= 0) list.splice(at, 1);
      return process;
    },
    prependListener(name, fn) { listening(name).unshift(fn); return process; },
    removeAllListeners(name) { if (name === undefined) listeners.clear(); else listeners.delete(name); return process; },
    emit(name, ...args) {
      const list = listening(name).slice();
      for (const fn of list) fn.apply(process, args);
      return list.length > 0;
    },
    listeners: (name) => listening(name).map((l) => l.listener || l),
    listenerCount: (name) => listening(name).length,
    setMaxListeners() { return process; },
    getMaxListeners: () => 10,
  };
  process.addListener = process.on;
  Object.defineProperty(process, Symbol.toStringTag, { value: "process" });
  process.removeListener = process.off;
  globalThis.global = globalThis;
  // V8's own property, which packages read (`Object.keys(Error)` shows it).
  Object.defineProperty(Error, "stackTraceLimit", { ...Object.getOwnPropertyDescriptor(Error, "stackTraceLimit"), enumerable: true });
  // The stack frames Error.prepareStackTrace is given: the methods V8's
  // have that QuickJS's lack (packages such as depd call them), added
  // the first time a program sets it (finding their prototype costs a
  // stack trace, too much for every run).
  {
    const own = Object.getOwnPropertyDescriptor(Error, "prepareStackTrace");
    let patched = false;
    const patch = () => {
      patched = true;
      own.set.call(Error, (_, frames) => frames);
      const probe = {};
      Error.captureStackTrace(probe);
      own.set.call(Error, undefined);
      const proto = Array.isArray(probe.stack) && probe.stack[0] && Object.getPrototypeOf(probe.stack[0]);
      if (!proto) return;
      const methods = {
        isEval: () => false, getEvalOrigin: () => undefined, isToplevel() { return this.getFunctionName() === null; },
        getTypeName: () => null, getMethodName: () => null, getThis: () => undefined, isAsync: () => false,
        isPromiseAll: () => false, getPromiseIndex: () => null,
        getScriptNameOrSourceURL() { return this.getFileName(); },
        getEnclosingLineNumber() { return this.getLineNumber(); },
        getEnclosingColumnNumber() { return this.getColumnNumber(); },
        toString() { return (this.getFunctionName() || "<anonymous>") + " (" + this.getFileName() + ":" + this.getLineNumber() + ":" + this.getColumnNumber() + ")"; },
      };
      for (const [name, fn] of Object.entries(methods)) if (!(name in proto)) Object.defineProperty(proto, name, { value: fn, configurable: true, writable: true });
    };
    if (own && own.set) {
      Object.defineProperty(Error, "prepareStackTrace", {
        configurable: true,
        enumerable: own.enumerable,
        get: own.get,
        set(fn) {
          if (!patched && typeof fn === "function") patch();
          own.set.call(Error, fn);
        },
      });
    }
  }
  // Node 20's global `crypto` (the Web Crypto API's random part).
  globalThis.crypto = {
    getRandomValues: crypto.getRandomValues,
    randomUUID: crypto.randomUUID,
    get subtle() { throw moduleError("crypto.subtle is not available in the sandbox's node; use require('crypto')", "ERR_SANDBOX_UNAVAILABLE"); },
  };
  // Timers that wait: the engine's loop (run.rs) asks `__timers.next()`
  // how long until one is due, sleeps that long (within the script's
  // deadline) and calls `__timers.fire()`, one callback at a time with
  // the microtasks between, as Node does. Due times are ordered in a heap
  // (due, then order of creation); a cleared timer stays in it until it
  // comes up. Immediates run before the loop sleeps. A flood of pending
  // timers stops at MAX_TIMERS with a RangeError.
  const MAX_TIMERS = 10000;
  const TIMEOUT_MAX = 2147483647;
  const pending = new Map();
  const heap = [];
  const immediates = [];
  const ticks = [];
  let lastId = 0;
  let order = 0;
  const before = (a, b) => a.due < b.due || (a.due === b.due && a.order < b.order);
  function push(entry) {
    heap.push(entry);
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i], heap[parent])) break;
      [heap[i], heap[parent]] = [heap[parent], heap[i]];
      i = parent;
    }
  }
  function pop() {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l], heap[m])) m = l;
        if (r < heap.length && before(heap[r], heap[m])) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m], heap[i]];
        i = m;
      }
    }
    return top;
  }
  // The first live entry of the heap, the dead ones dropped.
  function first() {
    while (heap.length > 0 && pending.get(heap[0].id) !== heap[0].timer) pop();
    return heap[0];
  }
  function callable(fn) {
    if (typeof fn !== "function") {
      const error = new TypeError('The "callback" argument must be of type function. Received ' + inspect(fn, 0, 0, false));
      error.code = "ERR_INVALID_ARG_TYPE";
      throw error;
    }
  }
  function arm(timer) {
    timer.due = host.now() + timer._idleTimeout;
    push({ due: timer.due, order: order++, id: timer.id, timer });
  }
  class Timeout {
    constructor(fn, ms, args, repeat) {
      ms = Number(ms);
      this._idleTimeout = ms >= 1 && ms <= TIMEOUT_MAX ? ms : 1;
      this._onTimeout = fn;
      this._args = args;
      this._repeat = repeat;
      this._ref = true;
      this.id = ++lastId;
    }
    ref() { this._ref = true; return this; }
    unref() { this._ref = false; return this; }
    hasRef() { return this._ref; }
    refresh() { if (pending.get(this.id) === this) arm(this); return this; }
    close() { pending.delete(this.id); return this; }
    [Symbol.toPrimitive]() { return this.id; }
  }
  function schedule(fn, ms, args, repeat) {
    callable(fn);
    if (pending.size >= MAX_TIMERS) {
      const error = new RangeError("too many timers pending (" + MAX_TIMERS + "): clear some before setting more");
      error.code = "ERR_TOO_MANY_TIMERS";
      throw error;
    }
    const timer = new Timeout(fn, ms, args, repeat);
    pending.set(timer.id, timer);
    arm(timer);
    return timer;
  }
  function clear(timer) {
    if (timer === null || timer === undefined) return;
    if (timer instanceof Immediate) { timer._cleared = true; return; }
    pending.delete(typeof timer === "object" ? timer.id : Number(timer));
  }
  class Immediate {
    constructor(fn, args) { this._onImmediate = fn; this._args = args; this._ref = true; this._cleared = false; }
    ref() { this._ref = true; return this; }
    unref() { this._ref = false; return this; }
    hasRef() { return this._ref; }
  }
  globalThis.setTimeout = (fn, ms, ...args) => schedule(fn, ms, args, false);
  globalThis.setInterval = (fn, ms, ...args) => schedule(fn, ms, args, true);
  globalThis.clearTimeout = clear;
  globalThis.clearInterval = clear;
  globalThis.setImmediate = (fn, ...args) => {
    callable(fn);
    const immediate = new Immediate(fn, args);
    immediates.push(immediate);
    return immediate;
  };
  globalThis.clearImmediate = clear;
  globalThis.queueMicrotask = (fn) => { Promise.resolve().then(fn); };
  const timers = {
    setTimeout: globalThis.setTimeout, setInterval: globalThis.setInterval,
    setImmediate: globalThis.setImmediate, clearTimeout: clear, clearInterval: clear,
    clearImmediate: clear,
  };
  const timersPromises = {
    setTimeout: (ms, value) => new Promise((resolve) => schedule(resolve, ms, [value], false)),
    setImmediate: (value) => new Promise((resolve) => globalThis.setImmediate(resolve, value)),
    async *setInterval(ms, value) {
      while (true) yield await timersPromises.setTimeout(ms, value);
    },
    scheduler: { wait: (ms) => timersPromises.setTimeout(ms), yield: () => timersPromises.setImmediate() },
  };
  // What the engine's loop calls (run.rs takes it before the script runs).
  globalThis.__timers = {
    // -1: nothing keeps the script alive; 0: something to run now; else
    // the milliseconds until the next timer is due.
    next() {
      if (ticks.length > 0 || immediates.some((i) => !i._cleared)) return 0;
      immediates.length = 0;
      let alive = false;
      for (const timer of pending.values()) if (timer._ref) { alive = true; break; }
      if (!alive && !exiting) {
        // Nothing left: 'beforeExit' may schedule more; then 'exit'.
        process.emit("beforeExit", process.exitCode || 0);
        if (ticks.length > 0 || immediates.length > 0 || [...pending.values()].some((t) => t._ref)) return 0;
        exiting = true;
        process.emit("exit", process.exitCode || 0);
        return ticks.length > 0 ? 0 : -1;
      }
      if (!alive) return -1;
      const entry = first();
      return entry ? Math.max(0, entry.due - host.now()) : -1;
    },
    // The process.nextTick queue, emptied; whether there was one.
    tick() {
      if (ticks.length === 0) return false;
      while (ticks.length > 0) ticks.shift()();
      return true;
    },
    // The timer due first, if one is due (Node's timers phase), or else
    // the first immediate queued (its check phase).
    fire() {
      const due = first();
      if (!due || due.due > host.now()) {
        while (immediates.length > 0) {
          const immediate = immediates.shift();
          if (!immediate._cleared) return immediate._onImmediate(...immediate._args);
        }
      }
      const entry = first();
      if (!entry || entry.due > host.now()) return;
      pop();
      const timer = entry.timer;
      if (timer._repeat) arm(timer); else pending.delete(timer.id);
      timer._onTimeout.apply(timer, timer._args);
    },
  };
  globalThis.__inspect = (value) => inspect(value, 0, 0, true);
  // For util (stdlib.js): inspect as util.inspect shows a value, format as console does.
  host.inspect = (value) => inspect(value, 0, 0, typeof value !== "string");
  host.format = format;

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

  // fs: streams, and the callback API over the synchronous one.
  fs.createReadStream = (file, options) => {
    const { Readable } = host.modules.stream;
    options = typeof options === "string" ? { encoding: options } : options || {};
    const size = options.highWaterMark || 65536;
    let bytes = null, at = options.start || 0;
    const readable = new Readable({
      encoding: options.encoding,
      read() {
        try {
          if (bytes === null) {
            bytes = fs.readFileSync(file);
            const end = options.end === undefined ? bytes.length : options.end + 1;
            bytes = bytes.subarray(0, end);
          }
        } catch (error) { this.destroy(error); return; }
        if (at >= bytes.length) { this.push(null); return; }
        const chunk = bytes.subarray(at, at + size);
        at += chunk.length;
        this.push(chunk);
      },
    });
    readable.path = file;
    readable.bytesRead = 0;
    readable.on("data", (chunk) => { readable.bytesRead += chunk.length; });
    return readable;
  };
  fs.createWriteStream = (file, options) => {
    const { Writable } = host.modules.stream;
    options = typeof options === "string" ? { encoding: options } : options || {};
    let first = !(options.flags || "w").startsWith("a");
    const writable = new Writable({
      write(chunk, encoding, callback) {
        try {
          if (first) fs.writeFileSync(file, chunk); else fs.appendFileSync(file, chunk);
          first = false;
          writable.bytesWritten += chunk.length;
          callback();
        } catch (error) { callback(error); }
      },
      final(callback) {
        try { if (first) fs.writeFileSync(file, ""); callback(); } catch (error) { callback(error); }
      },
    });
    writable.path = file;
    writable.bytesWritten = 0;
    writable.close = (callback) => writable.end(callback);
    return writable;
  };
  for (const name of Object.keys(fs)) {
    if (!name.endsWith("Sync") || name === "existsSync") continue;
    const sync = fs[name];
    fs[name.slice(0, -4)] = function (...args) {
      const callback = typeof args[args.length - 1] === "function" ? args.pop() : null;
      if (!callback) throw new TypeError('The "cb" argument must be of type function. Received undefined');
      let value, failure = null;
      try { value = sync(...args); } catch (error) { failure = error; }
      process.nextTick(() => (failure ? callback(failure) : callback(null, value)));
    };
  }
  fs.exists = (file, callback) => { const found = fs.existsSync(file); process.nextTick(() => callback(found)); };
  fs.realpath.native = fs.realpath;

  // process.stdout and stderr: written at once, and enough of a stream
  // to be piped into.
  for (const [name, fd] of [["stdout", 1], ["stderr", 2]]) {
    const out = {
      fd,
      isTTY: false,
      writable: true,
      write(chunk, encoding, callback) {
        host.write(fd, typeof chunk === "string" ? chunk : Buffer.from(chunk).toString());
        const done = typeof encoding === "function" ? encoding : callback;
        if (typeof done === "function") process.nextTick(done);
        return true;
      },
      end(chunk, encoding, callback) {
        if (typeof chunk === "function") callback = chunk;
        else if (chunk !== undefined && chunk !== null) out.write(chunk, encoding);
        if (typeof callback === "function") process.nextTick(callback);
        return out;
      },
      on() { return out; },
      once() { return out; },
      off() { return out; },
      removeListener() { return out; },
      emit() { return false; },
    };
    process[name] = out;
  }

  // process.stdin: what was piped in, read when the script asks.
  let stdin = null;
  Object.defineProperty(process, "stdin", {
    configurable: true,
    enumerable: true,
    get() {
      if (stdin) return stdin;
      stdin = new host.modules.stream.Readable({
        read() {
          const bytes = host.stdin();
          if (bytes !== undefined && bytes.byteLength) this.push(Buffer.from(bytes));
          this.push(null);
          this._read = () => {};
        },
      });
      stdin.fd = 0;
      stdin.isTTY = undefined;
      return stdin;
    },
  });


  // Node's other modules come in chunks (run.rs), each made the first
  // time a program uses one of its modules: a run that never does, does
  // not pay for them.
  host.process = process;
  host.require = globalThis.require;
  const chunks = Object.create(null);
  const chunk = (name) => chunks[name] || (chunks[name] = host.chunk(name)(host));
  const lazily = (object, name, make) => Object.defineProperty(object, name, {
    configurable: true,
    enumerable: object === host.modules,
    get() {
      const value = make();
      Object.defineProperty(object, name, { value, configurable: true, enumerable: object === host.modules, writable: true });
      return value;
    },
  });
  for (const [name, modules] of [
    ["stdlib", ["events", "util", "util/types", "os", "querystring", "url", "assert", "assert/strict", "punycode"]],
    ["io", ["stream", "stream/promises", "readline", "readline/promises"]],
    ["child_process", ["child_process"]],
    ["zlib", ["zlib"]],
    ["http", ["http", "https"]],
    ["modules", ["tty", "module", "perf_hooks", "diagnostics_channel", "async_hooks", "stream/consumers", "worker_threads", "cluster", "net", "dgram", "tls", "http2", "dns", "dns/promises", "inspector", "inspector/promises", "repl", "vm", "v8", "wasi", "trace_events", "domain", "path/win32", "stream/web", "test/reporters", "test", "sea"]],
  ]) {
    for (const module of modules) lazily(host.modules, module, () => chunk(name)[module]);
  }
  for (const name of ["TextEncoder", "TextDecoder", "URL", "URLSearchParams", "Event", "EventTarget", "AbortController", "AbortSignal", "Intl"]) {
    lazily(globalThis, name, () => chunk("stdlib").globals[name]);
  }

  // In `--execute` mode the script gets only what its grants allow: once
  // every module is built (the end of the prelude, run.rs), since they
  // are built on `process` and `require`.
  host.restrict = function () {
    const grants = host.grants();
    if (grants === undefined || grants === null) return;
    const allowed = JSON.parse(grants);
    const modules = host.modules;
    delete globalThis.require;
    delete globalThis.process;
    if (!allowed.fetch) delete globalThis.fetch;
    if (allowed.crypto) globalThis.crypto = crypto; else delete globalThis.crypto;
    if (allowed.commands) globalThis.child_process = modules.child_process;
    if (allowed.read_files) {
      // The runner's fs reads text unless asked for another encoding.
      const readFileSync = (file, options) => readFile(file, options === undefined ? "utf8" : options);
      globalThis.fs = {
        readFileSync,
        readFile: async (file) => readFileSync(file),
        existsSync: fs.existsSync,
        readdirSync: fs.readdirSync,
        statSync: fs.statSync,
        promises: { readFile: async (file) => readFileSync(file) },
      };
    }
  };

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
