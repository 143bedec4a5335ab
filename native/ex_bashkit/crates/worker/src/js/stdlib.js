// Node's everyday modules that need nothing from the host but text
// codecs: events, util, os, querystring, url (with the URL and
// URLSearchParams globals), assert, and the TextEncoder/TextDecoder
// globals. A chunk (run.rs): made the first time a program uses one of
// them, it reuses prelude.js's inspect and format (`host.inspect`,
// `host.format`) and answers the modules by name.
(function (host) {
  "use strict";

  // TextEncoder / TextDecoder: UTF-8 (and the decoder's other encodings).
  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(text = "") { return new Uint8Array(host.encode(String(text), "utf8")); }
  }
  class TextDecoder {
    constructor(encoding = "utf-8") { this.encoding = String(encoding).toLowerCase(); }
    decode(bytes) {
      if (bytes === undefined) return "";
      const view = bytes instanceof ArrayBuffer ? new Uint8Array(bytes)
        : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      return host.decode(view, this.encoding === "utf-16le" ? "utf16le" : this.encoding === "latin1" ? "latin1" : "utf8");
    }
  }

  // Node's event and stream classes are functions: older packages set
  // one up on an object of their own (`EventEmitter.call(this)`), which
  // an ES class cannot be. Each is made a function whose prototype is
  // its class's (methods, `super` and subclasses work as before) and
  // whose body is `init`. The classes are anonymous, so that their
  // methods' `Readable` (say) is the function, not the class.
  function constructorOf(name, Class, init) {
    const Constructor = {
      [name]: function (...args) {
        if (!(this instanceof Constructor)) return new Constructor(...args);
        init.apply(this, args);
      },
    }[name];
    Constructor.prototype = Class.prototype;
    Object.defineProperty(Class.prototype, "constructor", { value: Constructor, writable: true, configurable: true });
    Object.setPrototypeOf(Constructor, Object.getPrototypeOf(Class));
    for (const key of Object.getOwnPropertyNames(Class)) {
      if (!["length", "name", "prototype"].includes(key)) Object.defineProperty(Constructor, key, Object.getOwnPropertyDescriptor(Class, key));
    }
    return Constructor;
  }
  host.constructorOf = constructorOf;

  // events
  const EventEmitter = constructorOf("EventEmitter", class {
    _list(name) { if (!this._events) this._events = new Map(); return this._events.get(name) || []; }
    on(name, listener) { return this.addListener(name, listener); }
    addListener(name, listener) {
      if (typeof listener !== "function") throw new TypeError('The "listener" argument must be of type function');
      if (this._events && this._events.has("newListener")) this.emit("newListener", name, listener);
      this._events = this._events || new Map();
      this._events.set(name, [...this._list(name), listener]);
      return this;
    }
    prependListener(name, listener) { this._events = this._events || new Map(); this._events.set(name, [listener, ...this._list(name)]); return this; }
    once(name, listener) {
      const once = (...args) => { this.removeListener(name, once); return listener.apply(this, args); };
      once.listener = listener;
      return this.on(name, once);
    }
    prependOnceListener(name, listener) {
      const once = (...args) => { this.removeListener(name, once); return listener.apply(this, args); };
      once.listener = listener;
      return this.prependListener(name, once);
    }
    off(name, listener) { return this.removeListener(name, listener); }
    removeListener(name, listener) {
      const list = this._list(name);
      const i = list.findIndex((l) => l === listener || l.listener === listener);
      if (i >= 0) {
        const rest = list.slice(0, i).concat(list.slice(i + 1));
        if (rest.length) this._events.set(name, rest); else this._events.delete(name);
        if (this._events.has("removeListener")) this.emit("removeListener", name, listener);
      }
      return this;
    }
    removeAllListeners(name) { if (name === undefined) this._events = new Map(); else if (this._events) this._events.delete(name); return this; }
    emit(name, ...args) {
      const list = this._list(name);
      if (list.length === 0) {
        if (name === "error") {
          const error = args[0] instanceof Error ? args[0] : new Error("Unhandled error. (" + host.inspect(args[0]) + ")");
          if (!(args[0] instanceof Error)) error.code = "ERR_UNHANDLED_ERROR";
          throw error;
        }
        return false;
      }
      for (const listener of list) listener.apply(this, args);
      return true;
    }
    listeners(name) { return this._list(name).map((l) => l.listener || l); }
    rawListeners(name) { return this._list(name).slice(); }
    listenerCount(name) { return this._list(name).length; }
    eventNames() { return this._events ? [...this._events.keys()] : []; }
    setMaxListeners(n) { this._max = n; return this; }
    getMaxListeners() { return this._max === undefined ? EventEmitter.defaultMaxListeners : this._max; }
  }, function () { EventEmitter.init.call(this); });
  EventEmitter.init = function () {
    if (!this._events || this._events === Object.getPrototypeOf(this)._events) this._events = new Map();
    if (this._max === undefined) this._max = EventEmitter.defaultMaxListeners;
  };
  EventEmitter.defaultMaxListeners = 10;
  EventEmitter.EventEmitter = EventEmitter;
  EventEmitter.once = (emitter, name) => new Promise((resolve, reject) => {
    const fail = (error) => { emitter.removeListener(name, done); reject(error); };
    const done = (...args) => { if (name !== "error") emitter.removeListener("error", fail); resolve(args); };
    emitter.once(name, done);
    if (name !== "error") emitter.once("error", fail);
  });

  // util
  const types = {
    isDate: (v) => v instanceof Date,
    isRegExp: (v) => v instanceof RegExp,
    isPromise: (v) => v instanceof Promise,
    isMap: (v) => v instanceof Map,
    isSet: (v) => v instanceof Set,
    isUint8Array: (v) => v instanceof Uint8Array,
    isTypedArray: (v) => ArrayBuffer.isView(v) && !(v instanceof DataView),
    isArrayBuffer: (v) => v instanceof ArrayBuffer,
    isNativeError: (v) => v instanceof Error,
    isAsyncFunction: (v) => typeof v === "function" && v.constructor && v.constructor.name === "AsyncFunction",
  };
  const util = {
    format: (...args) => host.format(args),
    inspect: (value) => host.inspect(value),
    types,
    isDeepStrictEqual: (a, b) => deepEqual(a, b, true),
    inherits(child, parent) { Object.setPrototypeOf(child.prototype, parent.prototype); Object.setPrototypeOf(child, parent); },
    deprecate: (fn) => fn,
    promisify(fn) {
      if (typeof fn !== "function") throw new TypeError('The "original" argument must be of type function');
      if (typeof fn[util.promisify.custom] === "function") return fn[util.promisify.custom];
      return (...args) => new Promise((resolve, reject) =>
        fn(...args, (error, value) => (error ? reject(error) : resolve(value))));
    },
    callbackify(fn) {
      return (...args) => {
        const callback = args.pop();
        fn(...args).then((value) => callback(null, value), (error) => callback(error));
      };
    },
    isArray: Array.isArray,
    TextEncoder,
    TextDecoder,
  };

  // os: the sandbox's view.
  const env = () => (globalThis.process && process.env) || {};
  const os = {
    EOL: "\n",
    platform: () => "linux",
    type: () => "Linux",
    arch: () => "x64",
    release: () => "6.0.0-bashkit",
    hostname: () => env().HOSTNAME || "bashkit-sandbox",
    homedir: () => env().HOME || "/home/user",
    tmpdir: () => "/tmp",
    userInfo: () => ({ username: env().USER || "user", uid: 1000, gid: 1000, shell: "/bin/bash", homedir: os.homedir() }),
    cpus: () => [{ model: "bashkit", speed: 0, times: { user: 0, nice: 0, sys: 0, idle: 0, irq: 0 } }],
    totalmem: () => 1 << 30,
    freemem: () => 1 << 29,
    uptime: () => Math.floor(performance.now() / 1000),
    loadavg: () => [0, 0, 0],
    networkInterfaces: () => ({}),
    endianness: () => "LE",
    availableParallelism: () => 1,
    machine: () => "x86_64",
    version: () => "#1 SMP",
    devNull: "/dev/null",
    getPriority: () => 0,
    setPriority: () => {},
    constants: {
      signals: {
        SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGILL: 4, SIGTRAP: 5, SIGABRT: 6, SIGIOT: 6, SIGBUS: 7, SIGFPE: 8,
        SIGKILL: 9, SIGUSR1: 10, SIGSEGV: 11, SIGUSR2: 12, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15, SIGCHLD: 17,
        SIGSTKFLT: 16, SIGCONT: 18, SIGSTOP: 19, SIGTSTP: 20, SIGTTIN: 21, SIGTTOU: 22, SIGURG: 23, SIGXCPU: 24,
        SIGXFSZ: 25, SIGVTALRM: 26, SIGPROF: 27, SIGWINCH: 28, SIGIO: 29, SIGPOLL: 29, SIGPWR: 30, SIGSYS: 31,
      },
      errno: {
        E2BIG: 7, EACCES: 13, EADDRINUSE: 98, EAGAIN: 11, EBADF: 9, EBUSY: 16, ECONNREFUSED: 111, ECONNRESET: 104,
        EEXIST: 17, EINTR: 4, EINVAL: 22, EIO: 5, EISDIR: 21, EMFILE: 24, ENOENT: 2, ENOMEM: 12, ENOSPC: 28,
        ENOTDIR: 20, ENOTEMPTY: 39, EPERM: 1, EPIPE: 32, ETIMEDOUT: 110, EXDEV: 18,
      },
      priority: { PRIORITY_LOW: 19, PRIORITY_BELOW_NORMAL: 10, PRIORITY_NORMAL: 0, PRIORITY_ABOVE_NORMAL: -7, PRIORITY_HIGH: -14, PRIORITY_HIGHEST: -20 },
      dlopen: { RTLD_LAZY: 1, RTLD_NOW: 2, RTLD_GLOBAL: 256, RTLD_LOCAL: 0 },
      UV_UDP_REUSEADDR: 4,
    },
  };

  // querystring
  const escape = (text) => encodeURIComponent(text).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
  const unescape = (text) => { try { return decodeURIComponent(text); } catch { return text; } };
  const querystring = {
    escape, unescape,
    parse(text, sep = "&", eq = "=") {
      const out = Object.create(null);
      if (typeof text !== "string" || text === "") return out;
      for (const part of text.split(sep)) {
        if (part === "") continue;
        const at = part.indexOf(eq);
        const key = unescape((at < 0 ? part : part.slice(0, at)).replace(/\+/g, " "));
        const value = at < 0 ? "" : unescape(part.slice(at + eq.length).replace(/\+/g, " "));
        if (key in out) out[key] = [].concat(out[key], value); else out[key] = value;
      }
      return out;
    },
    stringify(object, sep = "&", eq = "=") {
      const plain = (v) => typeof v === "string" || typeof v === "number" || typeof v === "boolean" || typeof v === "bigint" ? String(v) : "";
      return Object.keys(object || {}).map((key) => {
        const value = object[key];
        return Array.isArray(value) ? value.map((v) => escape(key) + eq + escape(plain(v))).join(sep)
          : escape(key) + eq + escape(plain(value));
      }).join(sep);
    },
  };
  querystring.decode = querystring.parse;
  querystring.encode = querystring.stringify;

  // url: WHATWG URL for the special schemes an agent meets (http, https,
  // ws, wss, ftp, file) and opaque ones (mailto:, data:).
  const special = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21", "file:": "" };
  class URLSearchParams {
    constructor(init = "") {
      this._pairs = [];
      if (typeof init === "string") {
        for (const part of init.replace(/^\?/, "").split("&")) {
          if (part === "") continue;
          const at = part.indexOf("=");
          const decode = (s) => unescape(s.replace(/\+/g, " "));
          this._pairs.push(at < 0 ? [decode(part), ""] : [decode(part.slice(0, at)), decode(part.slice(at + 1))]);
        }
      } else if (init && typeof init[Symbol.iterator] === "function") {
        for (const [k, v] of init) this._pairs.push([String(k), String(v)]);
      } else if (init && typeof init === "object") {
        for (const k of Object.keys(init)) this._pairs.push([k, String(init[k])]);
      }
    }
    _changed() { if (this._url) this._url._search = this._pairs.length ? "?" + this.toString() : ""; }
    append(k, v) { this._pairs.push([String(k), String(v)]); this._changed(); }
    delete(k) { this._pairs = this._pairs.filter(([key]) => key !== String(k)); this._changed(); }
    get(k) { const pair = this._pairs.find(([key]) => key === String(k)); return pair ? pair[1] : null; }
    getAll(k) { return this._pairs.filter(([key]) => key === String(k)).map(([, v]) => v); }
    has(k) { return this._pairs.some(([key]) => key === String(k)); }
    set(k, v) {
      const i = this._pairs.findIndex(([key]) => key === String(k));
      if (i < 0) this._pairs.push([String(k), String(v)]);
      else { this._pairs[i][1] = String(v); this._pairs = this._pairs.filter(([key], j) => j <= i || key !== String(k)); }
      this._changed();
    }
    sort() { this._pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)); this._changed(); }
    forEach(fn, self) { for (const [k, v] of this._pairs) fn.call(self, v, k, this); }
    keys() { return this._pairs.map(([k]) => k)[Symbol.iterator](); }
    values() { return this._pairs.map(([, v]) => v)[Symbol.iterator](); }
    entries() { return this._pairs.map(([k, v]) => [k, v])[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
    get size() { return this._pairs.length; }
    toString() {
      const form = (s) => encodeURIComponent(s).replace(/%20/g, "+").replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
      return this._pairs.map(([k, v]) => form(k) + "=" + form(v)).join("&");
    }
  }
  function invalidUrl(input) {
    const error = new TypeError("Invalid URL");
    error.code = "ERR_INVALID_URL";
    error.input = input;
    return error;
  }
  function dotSegments(path) {
    const out = [];
    const parts = path.split("/");
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      if (part === "..") { if (out.length > 1) out.pop(); if (i === parts.length - 1) out.push(""); }
      else if (part === ".") { if (i === parts.length - 1) out.push(""); }
      else out.push(part);
    }
    return out.join("/");
  }
  class URL {
    constructor(input, base) {
      input = String(input).trim();
      const match = /^([a-zA-Z][a-zA-Z0-9+.-]*:)(.*)$/.exec(input);
      if (!match) {
        if (base === undefined) throw invalidUrl(input);
        const from = base instanceof URL ? base : new URL(base);
        this._resolve(input, from);
        return;
      }
      this._protocol = match[1].toLowerCase();
      let rest = match[2];
      if (!(this._protocol in special)) {
        // An opaque URL: mailto:, data:, urn:.
        this._set(rest, "", "", "", "");
        this._opaque = true;
        return;
      }
      rest = rest.replace(/\\/g, "/");
      if (!rest.startsWith("//")) {
        if (base !== undefined) {
          const from = base instanceof URL ? base : new URL(base);
          if (from._protocol === this._protocol) return this._resolve(rest, from);
        }
        rest = "//" + rest.replace(/^\/*/, "");
      }
      const authorityEnd = rest.slice(2).search(/[/?#]/);
      const authority = authorityEnd < 0 ? rest.slice(2) : rest.slice(2, authorityEnd + 2);
      const after = authorityEnd < 0 ? "" : rest.slice(authorityEnd + 2);
      const at = authority.lastIndexOf("@");
      const userinfo = at < 0 ? "" : authority.slice(0, at);
      const hostport = at < 0 ? authority : authority.slice(at + 1);
      const portAt = hostport.match(/:(\d*)$/);
      const hostname = (portAt ? hostport.slice(0, portAt.index) : hostport).toLowerCase();
      if (hostname === "" && this._protocol !== "file:") throw invalidUrl(input);
      if (/[\s<>^|%]/.test(hostname) && !/%[0-9a-f]{2}/i.test(hostname)) throw invalidUrl(input);
      const port = portAt && portAt[1] !== "" && portAt[1] !== special[this._protocol] ? String(Number(portAt[1])) : "";
      const [user, pass] = userinfo === "" ? ["", ""] : userinfo.split(":").concat([""]);
      this._username = user;
      this._password = pass;
      this._hostname = hostname;
      this._port = port;
      this._splitRest(after);
    }
    _splitRest(rest) {
      const hashAt = rest.indexOf("#");
      const hash = hashAt < 0 ? "" : rest.slice(hashAt);
      rest = hashAt < 0 ? rest : rest.slice(0, hashAt);
      const queryAt = rest.indexOf("?");
      const search = queryAt < 0 ? "" : rest.slice(queryAt);
      const path = queryAt < 0 ? rest : rest.slice(0, queryAt);
      this._pathname = dotSegments(path.startsWith("/") ? path : "/" + path).replace(/ /g, "%20");
      this._search = search === "?" ? "" : search.replace(/ /g, "%20");
      this._hash = hash === "#" ? "" : hash.replace(/ /g, "%20");
    }
    _set(pathname, search, hash, hostname, port) {
      this._username = ""; this._password = "";
      this._hostname = hostname; this._port = port;
      this._pathname = pathname; this._search = search; this._hash = hash;
    }
    _resolve(input, from) {
      this._protocol = from._protocol;
      this._username = from._username; this._password = from._password;
      this._hostname = from._hostname; this._port = from._port;
      if (input.startsWith("//")) return Object.assign(this, new URL(this._protocol + input));
      if (input.startsWith("/")) return this._splitRest(input);
      if (input.startsWith("?")) { this._pathname = from._pathname; this._splitRest(from._pathname + input); return; }
      if (input.startsWith("#")) { this._splitRest(from._pathname + from._search + input); return; }
      if (input === "") { this._splitRest(from._pathname + from._search); return; }
      const dir = from._pathname.slice(0, from._pathname.lastIndexOf("/") + 1);
      this._splitRest(dir + input);
    }
    get protocol() { return this._protocol; }
    set protocol(v) { this._protocol = String(v).replace(/:?$/, ":"); }
    get username() { return this._username; }
    set username(v) { this._username = String(v); }
    get password() { return this._password; }
    set password(v) { this._password = String(v); }
    get hostname() { return this._hostname; }
    set hostname(v) { this._hostname = String(v).toLowerCase(); }
    get port() { return this._port; }
    set port(v) { v = String(v); this._port = v === special[this._protocol] ? "" : v; }
    get host() { return this._hostname + (this._port ? ":" + this._port : ""); }
    set host(v) { const [h, p = ""] = String(v).split(":"); this.hostname = h; this.port = p; }
    get origin() { return this._opaque || this._protocol === "file:" ? "null" : this._protocol + "//" + this.host; }
    get pathname() { return this._pathname; }
    set pathname(v) { v = String(v); this._pathname = v.startsWith("/") ? v : "/" + v; }
    get search() { return this._search; }
    set search(v) { v = String(v); this._search = v === "" || v === "?" ? "" : v.startsWith("?") ? v : "?" + v; this._params = undefined; }
    get searchParams() {
      if (!this._params) { this._params = new URLSearchParams(this._search); this._params._url = this; }
      return this._params;
    }
    get hash() { return this._hash; }
    set hash(v) { v = String(v); this._hash = v === "" || v === "#" ? "" : v.startsWith("#") ? v : "#" + v; }
    get href() {
      if (this._opaque) return this._protocol + this._pathname + this._search + this._hash;
      const auth = this._username ? this._username + (this._password ? ":" + this._password : "") + "@" : "";
      return this._protocol + "//" + auth + this.host + this._pathname + this._search + this._hash;
    }
    set href(v) { Object.assign(this, new URL(v)); }
    toString() { return this.href; }
    toJSON() { return this.href; }
    static canParse(input, base) { try { new URL(input, base); return true; } catch { return false; } }
  }
  const url = {
    URL, URLSearchParams,
    fileURLToPath(u) {
      const parsed = typeof u === "string" ? new URL(u) : u;
      if (parsed.protocol !== "file:") { const e = new TypeError("The URL must be of scheme file"); e.code = "ERR_INVALID_URL_SCHEME"; throw e; }
      return decodeURIComponent(parsed.pathname);
    },
    pathToFileURL(path) { return new URL("file://" + encodeURI(path.startsWith("/") ? path : host.cwd() + "/" + path)); },
    parse(text) {
      const u = new URL(text);
      return { protocol: u.protocol, host: u.host, hostname: u.hostname, port: u.port || null, pathname: u.pathname,
        search: u.search || null, query: u.search ? u.search.slice(1) : null, hash: u.hash || null, href: u.href,
        path: u.pathname + u.search };
    },
    format: (u) => (u instanceof URL ? u.href : String(u.href || "")),
  };

  // assert
  class AssertionError extends Error {
    constructor(options) {
      super(options.message);
      this.name = "AssertionError";
      this.code = "ERR_ASSERTION";
      this.actual = options.actual;
      this.expected = options.expected;
      this.operator = options.operator;
      this.generatedMessage = !options.given;
    }
  }
  function deepEqual(a, b, strict, seen = new Map()) {
    if (strict ? Object.is(a, b) : a == b || (a !== a && b !== b)) return true;
    if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
    if (strict && Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
    if (seen.get(a) === b) return true;
    seen.set(a, b);
    if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
    if (a instanceof RegExp && b instanceof RegExp) return String(a) === String(b);
    if (ArrayBuffer.isView(a) && ArrayBuffer.isView(b)) return a.length === b.length && a.every((v, i) => v === b[i]);
    if (a instanceof Map && b instanceof Map) {
      if (a.size !== b.size) return false;
      for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k), strict, seen)) return false;
      return true;
    }
    if (a instanceof Set && b instanceof Set) {
      if (a.size !== b.size) return false;
      for (const v of a) if (!b.has(v)) return false;
      return true;
    }
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    const ka = Object.keys(a), kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k], strict, seen));
  }
  function fail(actual, expected, message, operator, fallback) {
    if (message instanceof Error) throw message;
    throw new AssertionError({ message: message === undefined ? fallback : message, actual, expected, operator, given: message !== undefined });
  }
  const show = (v) => host.inspect(v);
  function assert(value, message) { if (!value) fail(value, true, message, "==", "The expression evaluated to a falsy value:\n\n  assert(" + show(value) + ")\n"); }
  assert.ok = assert;
  assert.AssertionError = AssertionError;
  assert.fail = (message = "Failed") => fail(undefined, undefined, message, "fail");
  assert.equal = (a, b, m) => { if (!(a == b || (a !== a && b !== b))) fail(a, b, m, "==", show(a) + " == " + show(b)); };
  assert.notEqual = (a, b, m) => { if (a == b) fail(a, b, m, "!=", show(a) + " != " + show(b)); };
  assert.strictEqual = (a, b, m) => {
    if (!Object.is(a, b)) fail(a, b, m, "strictEqual", "Expected values to be strictly equal:\n\n" + show(a) + " !== " + show(b) + "\n");
  };
  assert.notStrictEqual = (a, b, m) => { if (Object.is(a, b)) fail(a, b, m, "notStrictEqual", 'Expected "actual" to be strictly unequal to: ' + show(b)); };
  assert.deepEqual = (a, b, m) => { if (!deepEqual(a, b, false)) fail(a, b, m, "deepEqual", "Expected values to be loosely deep-equal:\n\n" + show(a) + "\n\nshould loosely deep-equal\n\n" + show(b)); };
  assert.deepStrictEqual = (a, b, m) => { if (!deepEqual(a, b, true)) fail(a, b, m, "deepStrictEqual", "Expected values to be strictly deep-equal:\n" + show(a) + "\n\nshould equal\n\n" + show(b)); };
  assert.notDeepStrictEqual = (a, b, m) => { if (deepEqual(a, b, true)) fail(a, b, m, "notDeepStrictEqual", 'Expected "actual" not to be strictly deep-equal to: ' + show(b)); };
  assert.notDeepEqual = (a, b, m) => { if (deepEqual(a, b, false)) fail(a, b, m, "notDeepEqual", '"actual" deepEqual "expected"'); };
  assert.match = (s, re, m) => { if (!re.test(s)) fail(s, re, m, "match", "The input did not match the regular expression " + String(re) + ". Input:\n\n" + show(s) + "\n"); };
  function matches(error, expected) {
    if (expected === undefined) return true;
    if (typeof expected === "function") return expected.prototype !== undefined && error instanceof expected ? true : expected.prototype === undefined ? expected(error) === true : false;
    if (expected instanceof RegExp) return expected.test(String(error));
    return Object.keys(expected).every((k) => expected[k] instanceof RegExp ? expected[k].test(error[k]) : deepEqual(error[k], expected[k], true));
  }
  assert.throws = (fn, expected, message) => {
    try { fn(); } catch (error) {
      if (!matches(error, expected)) throw error;
      return;
    }
    fail(undefined, expected, typeof expected === "string" ? expected : message, "throws", "Missing expected exception.");
  };
  assert.doesNotThrow = (fn, message) => { try { fn(); } catch (error) { fail(error, undefined, message, "doesNotThrow", "Got unwanted exception.\nActual message: \"" + error.message + "\""); } };
  assert.rejects = async (promise, expected, message) => {
    try { await (typeof promise === "function" ? promise() : promise); } catch (error) {
      if (!matches(error, expected)) throw error;
      return;
    }
    fail(undefined, expected, message, "rejects", "Missing expected rejection.");
  };
  assert.strict = Object.assign((v, m) => assert(v, m), assert, {
    equal: assert.strictEqual, notEqual: assert.notStrictEqual,
    deepEqual: assert.deepStrictEqual, notDeepEqual: assert.notDeepStrictEqual,
  });

  util.promisify.custom = Symbol.for("nodejs.util.promisify.custom");

  // util/types: what a value is, by its internal tag (as V8 answers it).
  const tag = (v) => Object.prototype.toString.call(v).slice(8, -1);
  const boxed = { Number: "isNumberObject", String: "isStringObject", Boolean: "isBooleanObject", BigInt: "isBigIntObject", Symbol: "isSymbolObject" };
  Object.assign(types, {
    isAnyArrayBuffer: (v) => v instanceof ArrayBuffer || (typeof SharedArrayBuffer !== "undefined" && v instanceof SharedArrayBuffer),
    isSharedArrayBuffer: (v) => typeof SharedArrayBuffer !== "undefined" && v instanceof SharedArrayBuffer,
    isArrayBufferView: (v) => ArrayBuffer.isView(v),
    isDataView: (v) => v instanceof DataView,
    isArgumentsObject: (v) => tag(v) === "Arguments",
    isGeneratorFunction: (v) => typeof v === "function" && /^(Async)?GeneratorFunction$/.test(v.constructor && v.constructor.name),
    isGeneratorObject: (v) => tag(v) === "Generator" || tag(v) === "AsyncGenerator",
    isMapIterator: (v) => tag(v) === "Map Iterator",
    isSetIterator: (v) => tag(v) === "Set Iterator",
    isWeakMap: (v) => v instanceof WeakMap,
    isWeakSet: (v) => v instanceof WeakSet,
    isBoxedPrimitive: (v) => v !== null && typeof v === "object" && tag(v) in boxed,
    isModuleNamespaceObject: (v) => tag(v) === "Module",
    isProxy: () => false,
    isExternal: () => false,
    isCryptoKey: () => false,
    isKeyObject: () => false,
  });
  for (const [name, check] of Object.entries(boxed)) types[check] = (v) => v !== null && typeof v === "object" && tag(v) === name;
  for (const kind of ["Int8", "Uint8Clamped", "Int16", "Uint16", "Int32", "Uint32", "Float32", "Float64", "BigInt64", "BigUint64"]) {
    const Type = globalThis[kind + "Array"];
    types["is" + kind + "Array"] = (v) => Type !== undefined && v instanceof Type;
  }
  // util's others: debuglog by NODE_DEBUG, the legacy type checks, and
  // the text helpers.
  const debugs = new Map();
  util.debuglog = util.debug = (section, callback) => {
    const key = String(section).toUpperCase();
    const pattern = String(env().NODE_DEBUG || "").split(/[\s,]+/).filter(Boolean)
      .some((want) => new RegExp("^" + want.toUpperCase().replace(/[|\\{}()[\]^$+?.]/g, "\\$&").replace(/\*/g, ".*") + "$").test(key));
    const log = (...args) => { if (pattern) host.process.stderr.write(key + " " + host.process.pid + ": " + host.format(args) + "\n"); };
    Object.defineProperty(log, "enabled", { get: () => pattern });
    if (callback) callback(log);
    debugs.set(key, log);
    return log;
  };
  Object.assign(util, {
    isBoolean: (v) => typeof v === "boolean", isNull: (v) => v === null, isNullOrUndefined: (v) => v == null,
    isNumber: (v) => typeof v === "number", isString: (v) => typeof v === "string", isSymbol: (v) => typeof v === "symbol",
    isUndefined: (v) => v === undefined, isRegExp: types.isRegExp, isObject: (v) => v !== null && typeof v === "object",
    isDate: types.isDate, isError: (v) => v instanceof Error, isFunction: (v) => typeof v === "function",
    isPrimitive: (v) => v === null || (typeof v !== "object" && typeof v !== "function"),
    isBuffer: (v) => host.modules.buffer.Buffer.isBuffer(v),
    _extend: (target, source) => Object.assign(target, source),
    log: (...args) => { const d = new Date(); const p = (n) => String(n).padStart(2, "0"); console.log(d.getDate() + " " + ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][d.getMonth()] + " " + p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds()) + " - " + host.format(args)); },
    stripVTControlCharacters: (text) => String(text).replace(/[\u001B\u009B][[\]()#;?]*(?:(?:(?:(?:;[-a-zA-Z\d/#&.:=?%@~_]+)*|[a-zA-Z\d]+(?:;[-a-zA-Z\d/#&.:=?%@~_]*)*)?\u0007)|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PR-TZcf-ntqry=><~]))/g, ""),
    toUSVString: (text) => String(text).toWellFormed ? String(text).toWellFormed() : String(text).replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD"),
    formatWithOptions: (options, ...args) => host.format(args),
    getSystemErrorName: (code) => { for (const [name, n] of Object.entries(os.constants.errno)) if (-n === code) return name; return "Unknown system error " + code; },
    getSystemErrorMap: () => new Map(Object.entries(os.constants.errno).map(([name, n]) => [-n, [name, name]])),
    aborted: (signal) => new Promise((resolve) => signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })),
  });

  // events' helpers on the class, as Node has them.
  Object.assign(EventEmitter, {
    errorMonitor: Symbol("events.errorMonitor"),
    captureRejectionSymbol: Symbol.for("nodejs.rejection"),
    captureRejections: false,
    usingDomains: false,
    getEventListeners: (emitter, name) => typeof emitter.listeners === "function" ? emitter.listeners(name) : [],
    getMaxListeners: (emitter) => typeof emitter.getMaxListeners === "function" ? emitter.getMaxListeners() : EventEmitter.defaultMaxListeners,
    setMaxListeners: (n = EventEmitter.defaultMaxListeners, ...emitters) => { if (emitters.length === 0) EventEmitter.defaultMaxListeners = n; for (const e of emitters) if (e.setMaxListeners) e.setMaxListeners(n); },
    listenerCount: (emitter, name) => emitter.listenerCount(name),
    on(emitter, name) {
      // The events as an async iterator, queued until asked for.
      const queue = [], waiting = [];
      let failed = null;
      const push = (...args) => { if (waiting.length) waiting.shift().resolve({ value: args, done: false }); else queue.push(args); };
      const fail = (error) => { failed = error; while (waiting.length) waiting.shift().reject(error); };
      emitter.on(name, push);
      if (name !== "error") emitter.on("error", fail);
      const stop = () => { emitter.removeListener(name, push); emitter.removeListener("error", fail); };
      return {
        next() {
          if (queue.length) return Promise.resolve({ value: queue.shift(), done: false });
          if (failed) { const error = failed; failed = null; return Promise.reject(error); }
          return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
        },
        return() { stop(); return Promise.resolve({ value: undefined, done: true }); },
        throw(error) { stop(); return Promise.reject(error); },
        [Symbol.asyncIterator]() { return this; },
      };
    },
  });

  // The web's events and cancellation, as Node 20 has them globally.
  class Event {
    constructor(type, options = {}) {
      if (arguments.length === 0) throw new TypeError('The "type" argument must be specified');
      Object.defineProperties(this, { type: { value: String(type), enumerable: true } });
      this.bubbles = !!options.bubbles; this.cancelable = !!options.cancelable; this.composed = !!options.composed;
      this.defaultPrevented = false; this.timeStamp = Date.now(); this.target = null; this.currentTarget = null;
      this.isTrusted = false;
    }
    preventDefault() { if (this.cancelable) this.defaultPrevented = true; }
    stopPropagation() {}
    stopImmediatePropagation() { this._stopped = true; }
  }
  class EventTarget {
    constructor() { Object.defineProperty(this, "_listeners", { value: new Map() }); }
    addEventListener(type, listener, options = {}) {
      if (!listener) return;
      const once = typeof options === "object" && !!options.once;
      const list = this._listeners.get(type) || [];
      if (list.some((l) => l.listener === listener)) return;
      list.push({ listener, once });
      this._listeners.set(type, list);
      if (typeof options === "object" && options.signal) options.signal.addEventListener("abort", () => this.removeEventListener(type, listener), { once: true });
    }
    removeEventListener(type, listener) {
      const list = this._listeners.get(type);
      if (list) this._listeners.set(type, list.filter((l) => l.listener !== listener));
    }
    dispatchEvent(event) {
      event.target = event.currentTarget = this;
      for (const entry of (this._listeners.get(event.type) || []).slice()) {
        if (entry.once) this.removeEventListener(event.type, entry.listener);
        if (typeof entry.listener === "function") entry.listener.call(this, event); else entry.listener.handleEvent(event);
        if (event._stopped) break;
      }
      const handler = this["on" + event.type];
      if (typeof handler === "function") handler.call(this, event);
      return !event.defaultPrevented;
    }
  }
  const abortError = (reason) => reason !== undefined ? reason
    : Object.assign(new Error("This operation was aborted"), { name: "AbortError", code: 20 });
  class AbortSignal extends EventTarget {
    constructor() { super(); this.aborted = false; this.reason = undefined; this.onabort = null; }
    throwIfAborted() { if (this.aborted) throw this.reason; }
    static abort(reason) { const c = new AbortController(); c.abort(reason); return c.signal; }
    static timeout(ms) {
      const c = new AbortController();
      setTimeout(() => c.abort(Object.assign(new Error("The operation was aborted due to timeout"), { name: "TimeoutError", code: 23 })), ms).unref();
      return c.signal;
    }
    static any(signals) {
      const c = new AbortController();
      for (const signal of signals) {
        if (signal.aborted) { c.abort(signal.reason); break; }
        signal.addEventListener("abort", () => c.abort(signal.reason), { once: true });
      }
      return c.signal;
    }
  }
  class AbortController {
    constructor() { this.signal = new AbortSignal(); }
    abort(reason) {
      const signal = this.signal;
      if (signal.aborted) return;
      signal.aborted = true;
      signal.reason = abortError(reason);
      signal.dispatchEvent(new Event("abort"));
    }
  }
  EventEmitter.addAbortListener = (signal, listener) => {
    signal.addEventListener("abort", listener, { once: true });
    return { [Symbol.dispose || Symbol.for("nodejs.dispose")]() { signal.removeEventListener("abort", listener); } };
  };
  // punycode (RFC 3492), as Node's deprecated builtin (punycode.js 2.1.0).
  const punycode = (() => {
    const base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700, initialBias = 72, initialN = 128;
    const overflow = () => Object.assign(new RangeError("Overflow: input needs wider integers to process"));
    const adapt = (delta, points, first) => {
      let k = 0;
      delta = first ? Math.floor(delta / damp) : delta >> 1;
      delta += Math.floor(delta / points);
      for (; delta > ((base - tMin) * tMax) >> 1; k += base) delta = Math.floor(delta / (base - tMin));
      return Math.floor(k + ((base - tMin + 1) * delta) / (delta + skew));
    };
    const digit = (d) => d + 22 + 75 * (d < 26);
    const ucs2decode = (text) => Array.from(String(text), (c) => c.codePointAt(0));
    const ucs2encode = (points) => String.fromCodePoint(...points);
    function encode(input) {
      const points = ucs2decode(input);
      let n = initialN, delta = 0, bias = initialBias;
      const out = points.filter((c) => c < 0x80).map((c) => String.fromCharCode(c));
      const basic = out.length;
      let handled = basic;
      if (basic) out.push("-");
      while (handled < points.length) {
        const m = Math.min(...points.filter((c) => c >= n));
        if (m - n > Math.floor((0x7fffffff - delta) / (handled + 1))) throw overflow();
        delta += (m - n) * (handled + 1);
        n = m;
        for (const c of points) {
          if (c < n && ++delta > 0x7fffffff) throw overflow();
          if (c !== n) continue;
          let q = delta;
          for (let k = base; ; k += base) {
            const t = k <= bias ? tMin : k >= bias + tMax ? tMax : k - bias;
            if (q < t) break;
            out.push(String.fromCharCode(digit(t + ((q - t) % (base - t)))));
            q = Math.floor((q - t) / (base - t));
          }
          out.push(String.fromCharCode(digit(q)));
          bias = adapt(delta, handled + 1, handled === basic);
          delta = 0;
          handled++;
        }
        delta++;
        n++;
      }
      return out.join("");
    }
    function decode(input) {
      input = String(input);
      const out = [];
      let basic = input.lastIndexOf("-");
      if (basic < 0) basic = 0;
      for (let j = 0; j < basic; j++) {
        if (input.charCodeAt(j) >= 0x80) throw new RangeError("Illegal input >= 0x80 (not a basic code point)");
        out.push(input.charCodeAt(j));
      }
      let n = initialN, bias = initialBias, i = 0;
      for (let index = basic > 0 ? basic + 1 : 0; index < input.length;) {
        const old = i;
        for (let w = 1, k = base; ; k += base) {
          if (index >= input.length) throw new RangeError("Invalid input");
          const c = input.charCodeAt(index++);
          const d = c - 48 < 10 ? c - 22 : c - 65 < 26 ? c - 65 : c - 97 < 26 ? c - 97 : base;
          if (d >= base || d > Math.floor((0x7fffffff - i) / w)) throw new RangeError("Invalid input");
          i += d * w;
          const t = k <= bias ? tMin : k >= bias + tMax ? tMax : k - bias;
          if (d < t) break;
          w *= base - t;
        }
        const length = out.length + 1;
        bias = adapt(i - old, length, old === 0);
        n += Math.floor(i / length);
        i %= length;
        out.splice(i++, 0, n);
      }
      return String.fromCodePoint(...out);
    }
    const domain = (text, fn) => {
      const [local, at] = String(text).includes("@") ? [String(text).split("@")[0] + "@", String(text).split("@")[1]] : ["", String(text)];
      return local + at.replace(/[\x2E\u3002\uFF0E\uFF61]/g, ".").split(".").map(fn).join(".");
    };
    return {
      version: "2.1.0",
      ucs2: { decode: ucs2decode, encode: ucs2encode },
      decode, encode,
      toASCII: (text) => domain(text, (label) => /[^\0-\x7F]/.test(label) ? "xn--" + encode(label) : label),
      toUnicode: (text) => domain(text, (label) => /^xn--/.test(label) ? decode(label.slice(4).toLowerCase()) : label),
    };
  })();

  url.domainToASCII = (domain) => { try { return punycode.toASCII(String(domain).toLowerCase()); } catch { return ""; } };
  url.domainToUnicode = (domain) => { try { return punycode.toUnicode(String(domain).toLowerCase()); } catch { return ""; } };

  // Intl: QuickJS has none. This one has English ("en", "en-US") only,
  // for what packages ask of it most: grapheme and word segments (text
  // widths), plain numbers, the time zone, plural forms and comparison.
  // Anything needing locale data it lacks is a RangeError saying so.
  const intlRefused = (what) => Object.assign(new RangeError("Intl " + what + " is not available in the sandbox's node (it has English only)"), { code: "ERR_SANDBOX_UNAVAILABLE" });
  const english = (locales) => {
    const list = locales === undefined ? [] : [].concat(locales);
    if (list.some((l) => !/^en(-US)?$/i.test(String(l)))) throw intlRefused("locale " + list.join(", "));
    return "en-US";
  };
  const allowed = (options, names, what) => {
    for (const key of Object.keys(options || {})) if (!names.includes(key)) throw intlRefused(what + " option " + key);
    return options || {};
  };
  const graphemes = /\p{RI}\p{RI}|(?:\r\n)|(?:\P{M}|^)\p{M}*(?:\u200D\P{M}\p{M}*)*[\uFE0E\uFE0F]?(?:\p{Emoji_Modifier})?/gu;
  class Segmenter {
    constructor(locales, options) {
      this._locale = english(locales);
      const { granularity = "grapheme" } = allowed(options, ["granularity", "localeMatcher"], "Segmenter");
      if (granularity !== "grapheme" && granularity !== "word") throw intlRefused("Segmenter granularity " + granularity);
      this._granularity = granularity;
    }
    resolvedOptions() { return { locale: this._locale, granularity: this._granularity }; }
    segment(input) {
      input = String(input);
      const pattern = this._granularity === "word" ? /[\p{L}\p{N}_'’]+|\s+|[^\p{L}\p{N}_\s]/gu : graphemes;
      const word = this._granularity === "word";
      const parts = [];
      for (const match of input.matchAll(pattern)) {
        if (match[0] === "") continue;
        const part = { segment: match[0], index: match.index, input };
        if (word) part.isWordLike = /[\p{L}\p{N}]/u.test(match[0]);
        parts.push(part);
      }
      return {
        [Symbol.iterator]: () => parts[Symbol.iterator](),
        containing: (at = 0) => parts.find((p) => at >= p.index && at < p.index + p.segment.length),
      };
    }
    static supportedLocalesOf(locales) { return [].concat(locales || []).filter((l) => /^en(-US)?$/i.test(l)); }
  }
  class NumberFormat {
    constructor(locales, options) {
      this._locale = english(locales);
      const o = allowed(options, ["style", "minimumFractionDigits", "maximumFractionDigits", "useGrouping", "localeMatcher", "minimumIntegerDigits"], "NumberFormat");
      if (o.style !== undefined && o.style !== "decimal" && o.style !== "percent") throw intlRefused("NumberFormat style " + o.style);
      this._style = o.style || "decimal";
      this._min = o.minimumFractionDigits === undefined ? 0 : o.minimumFractionDigits;
      this._max = o.maximumFractionDigits === undefined ? Math.max(this._min, this._style === "percent" ? 0 : 3) : o.maximumFractionDigits;
      this._grouping = o.useGrouping !== false;
      this._integer = o.minimumIntegerDigits || 1;
    }
    format(value) {
      let n = Number(value);
      if (Number.isNaN(n)) return "NaN";
      if (!Number.isFinite(n)) return (n < 0 ? "-" : "") + "∞";
      if (this._style === "percent") n *= 100;
      let [int, frac = ""] = Math.abs(n).toFixed(this._max).split(".");
      frac = frac.replace(/0+$/, "");
      while (frac.length < this._min) frac += "0";
      int = int.padStart(this._integer, "0");
      if (this._grouping) int = int.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
      const negative = n < 0 && (Number(int.replace(/,/g, "")) !== 0 || /[1-9]/.test(frac));
      return (negative ? "-" : "") + int + (frac ? "." + frac : "") + (this._style === "percent" ? "%" : "");
    }
    formatToParts(value) { return [{ type: "literal", value: this.format(value) }]; }
    resolvedOptions() { return { locale: this._locale, numberingSystem: "latn", style: this._style, minimumFractionDigits: this._min, maximumFractionDigits: this._max, useGrouping: this._grouping }; }
    static supportedLocalesOf(locales) { return Segmenter.supportedLocalesOf(locales); }
  }
  class DateTimeFormat {
    constructor(locales, options) {
      this._locale = english(locales);
      const o = allowed(options, ["timeZone", "localeMatcher"], "DateTimeFormat");
      const zone = o.timeZone || env().TZ || "UTC";
      if (!/^(UTC|Etc\/UTC|GMT|Etc\/GMT)$/i.test(zone)) throw intlRefused("time zone " + zone + " (node here runs in UTC)");
      this._zone = o.timeZone ? String(o.timeZone) : "UTC";
    }
    format(date = Date.now()) {
      const d = new Date(date);
      return (d.getUTCMonth() + 1) + "/" + d.getUTCDate() + "/" + d.getUTCFullYear();
    }
    formatToParts(date) {
      const [month, day, year] = this.format(date).split("/");
      return [{ type: "month", value: month }, { type: "literal", value: "/" }, { type: "day", value: day }, { type: "literal", value: "/" }, { type: "year", value: year }];
    }
    resolvedOptions() { return { locale: this._locale, calendar: "gregory", numberingSystem: "latn", timeZone: this._zone, year: "numeric", month: "numeric", day: "numeric" }; }
    static supportedLocalesOf(locales) { return Segmenter.supportedLocalesOf(locales); }
  }
  class Collator {
    constructor(locales, options) {
      this._locale = english(locales);
      const o = allowed(options, ["sensitivity", "numeric", "usage", "localeMatcher"], "Collator");
      this._numeric = !!o.numeric;
      this._base = o.sensitivity === "base" || o.sensitivity === "accent";
    }
    get compare() {
      return (a, b) => {
        let x = String(a), y = String(b);
        if (this._base) { x = x.toLowerCase(); y = y.toLowerCase(); }
        if (this._numeric) {
          const split = (t) => t.split(/(\d+)/).map((p, i) => i % 2 ? Number(p) : p);
          const [px, py] = [split(x), split(y)];
          for (let i = 0; i < Math.min(px.length, py.length); i++) {
            if (px[i] === py[i]) continue;
            if (typeof px[i] === "number" && typeof py[i] === "number") return px[i] < py[i] ? -1 : 1;
            return String(px[i]).localeCompare(String(py[i]));
          }
          return px.length - py.length;
        }
        return x.localeCompare(y);
      };
    }
    resolvedOptions() { return { locale: this._locale, usage: "sort", sensitivity: this._base ? "base" : "variant", numeric: this._numeric }; }
    static supportedLocalesOf(locales) { return Segmenter.supportedLocalesOf(locales); }
  }
  class PluralRules {
    constructor(locales, options) {
      this._locale = english(locales);
      this._type = allowed(options, ["type", "localeMatcher"], "PluralRules").type || "cardinal";
    }
    select(value) {
      const n = Math.abs(Number(value));
      if (this._type !== "ordinal") return n === 1 ? "one" : "other";
      const [ten, hundred] = [n % 10, n % 100];
      return ten === 1 && hundred !== 11 ? "one" : ten === 2 && hundred !== 12 ? "two" : ten === 3 && hundred !== 13 ? "few" : "other";
    }
    resolvedOptions() { return { locale: this._locale, type: this._type }; }
    static supportedLocalesOf(locales) { return Segmenter.supportedLocalesOf(locales); }
  }
  // These three may be called without `new`, as the spec has it.
  const callable = (Class) => new Proxy(Class, { apply: (target, self, args) => new target(...args) });
  const Intl = {
    Segmenter, PluralRules,
    NumberFormat: callable(NumberFormat), DateTimeFormat: callable(DateTimeFormat), Collator: callable(Collator),
    getCanonicalLocales: (locales) => { english(locales); return [].concat(locales || []).map(() => "en-US"); },
  };
  Object.defineProperty(Intl, Symbol.toStringTag, { value: "Intl" });

  util.transferableAbortController = () => new AbortController();
  util.transferableAbortSignal = (signal) => signal;

  return {
    events: EventEmitter, util, os, querystring, url, assert, "assert/strict": assert.strict, punycode,
    "util/types": types,
    globals: { TextEncoder, TextDecoder, URL, URLSearchParams, Event, EventTarget, AbortController, AbortSignal, Intl },
  };
});
