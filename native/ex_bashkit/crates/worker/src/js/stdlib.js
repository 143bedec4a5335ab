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

  // events
  class EventEmitter {
    constructor() { this._events = new Map(); this._max = EventEmitter.defaultMaxListeners; }
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
    getMaxListeners() { return this._max; }
  }
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

  return {
    events: EventEmitter, util, os, querystring, url, assert, "assert/strict": assert.strict,
    "util/types": types,
    globals: { TextEncoder, TextDecoder, URL, URLSearchParams },
  };
});
