// Node's rarer modules (tty, module, perf_hooks, async_hooks,
// diagnostics_channel, stream/consumers) and those a sandbox cannot have,
// which load and refuse each use saying why; a chunk (run.rs), made the
// first time a program asks for one of them. `host.internal` is the
// prelude's module system.
(function (host) {
  const { moduleError, requireFrom, Module, cache, inspect } = host.internal;
  // A module a sandbox cannot have: each use says why.
  const unavailable = (name, why, shape = {}) => {
    const refuse = (what) => function () {
      throw moduleError(name + "." + what + " is not available in the sandbox: " + why, "ERR_SANDBOX_UNAVAILABLE");
    };
    const module = { ...shape };
    for (const what of JSON.parse(host.nodeExports(name))) if (!(what in module)) module[what] = refuse(what);
    return new Proxy(module, {
      get(target, key) {
        if (key in target || typeof key === "symbol" || key === "then" || key === "__esModule") return target[key];
        return refuse(key);
      },
    });
  };
  const ip4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
  const isIPv6 = (s) => /^[0-9a-f:.]+$/i.test(s) && s.includes(":") && (() => { try { new (host.modules.url.URL)("http://[" + s + "]"); return true; } catch { return false; } })();
  const noSockets = "node here has no sockets; use fetch or the http and https clients";
  const channels = new Map();
  const factories = {
    tty: () => ({
      isatty: () => false,
      ReadStream: function ReadStream() { throw moduleError("tty.ReadStream: the sandbox has no terminal", "ERR_SANDBOX_UNAVAILABLE"); },
      WriteStream: function WriteStream() { throw moduleError("tty.WriteStream: the sandbox has no terminal", "ERR_SANDBOX_UNAVAILABLE"); },
    }),
    module: () => {
      const builtinModules = JSON.parse(host.builtinModules());
      const createRequire = (from) => {
        const file = String(from instanceof Object && from.href ? from.href : from).replace(/^file:\/\//, "");
        if (!file.startsWith("/")) throw Object.assign(new TypeError("The argument 'filename' must be a file URL object, file URL string, or absolute path string. Received " + inspect(from, 0, 0)), { code: "ERR_INVALID_ARG_VALUE" });
        return requireFrom(file.endsWith("/") ? file + "noop.js" : file, null);
      };
      const isBuiltin = (name) => builtinModules.includes(String(name).replace(/^node:/, "")) || /^node:(test|sea)$/.test(name);
      return Object.assign(Module, { Module, createRequire, builtinModules, isBuiltin, _cache: cache });
    },
    perf_hooks: () => ({ performance: globalThis.performance || { now: () => host.now(), timeOrigin: Date.now() - host.now() } }),
    diagnostics_channel: () => {
      const channel = (name) => {
        if (!channels.has(name)) {
          const subscribers = new Set();
          channels.set(name, {
            name,
            get hasSubscribers() { return subscribers.size > 0; },
            subscribe(fn) { subscribers.add(fn); },
            unsubscribe(fn) { return subscribers.delete(fn); },
            publish(message) { for (const fn of subscribers) fn(message, name); },
          });
        }
        return channels.get(name);
      };
      const tracingChannel = (name) => {
        const parts = ["start", "end", "asyncStart", "asyncEnd", "error"];
        const tracing = Object.fromEntries(parts.map((part) => [part, channel("tracing:" + name + ":" + part)]));
        return Object.assign(tracing, {
          get hasSubscribers() { return parts.some((part) => tracing[part].hasSubscribers); },
          subscribe(handlers) { for (const part of parts) if (handlers[part]) tracing[part].subscribe(handlers[part]); },
          unsubscribe(handlers) { for (const part of parts) if (handlers[part]) tracing[part].unsubscribe(handlers[part]); return true; },
          traceSync(fn, context = {}, self, ...args) {
            tracing.start.publish(context);
            try { return (context.result = fn.apply(self, args)); } catch (error) { context.error = error; tracing.error.publish(context); throw error; } finally { tracing.end.publish(context); }
          },
          tracePromise(fn, context = {}, self, ...args) { return tracing.traceSync(fn, context, self, ...args); },
          traceCallback(fn, position, context = {}, self, ...args) { return tracing.traceSync(fn, context, self, ...args); },
        });
      };
      return {
        channel,
        tracingChannel,
        hasSubscribers: (name) => channel(name).hasSubscribers,
        subscribe: (name, fn) => channel(name).subscribe(fn),
        unsubscribe: (name, fn) => channel(name).unsubscribe(fn),
      };
    },
    async_hooks: () => {
      // One thread and no async resource tracking: a store lives while
      // its `run` callback runs (not across the awaits it starts).
      class AsyncLocalStorage {
        getStore() { return this._store; }
        run(store, fn, ...args) {
          const before = this._store;
          this._store = store;
          try { return fn(...args); } finally { this._store = before; }
        }
        enterWith(store) { this._store = store; }
        exit(fn, ...args) { return this.run(undefined, fn, ...args); }
        disable() { this._store = undefined; }
      }
      class AsyncResource {
        constructor(type) { this.type = type; }
        runInAsyncScope(fn, self, ...args) { return fn.apply(self, args); }
        emitDestroy() { return this; }
        bind(fn) { return fn.bind(this); }
        static bind(fn) { return fn; }
      }
      return {
        AsyncLocalStorage, AsyncResource,
        createHook: () => ({ enable() { return this; }, disable() { return this; } }),
        executionAsyncId: () => 1, triggerAsyncId: () => 0,
      };
    },
    "stream/consumers": () => {
      const chunks = async (stream) => {
        const parts = [];
        for await (const chunk of stream) parts.push(typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk));
        return Buffer.concat(parts);
      };
      return {
        buffer: chunks,
        arrayBuffer: async (s) => { const b = await chunks(s); return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength); },
        text: async (s) => (await chunks(s)).toString("utf8"),
        json: async (s) => JSON.parse((await chunks(s)).toString("utf8")),
      };
    },
    worker_threads: () => unavailable("worker_threads", "node here runs one thread", {
      isMainThread: true, parentPort: null, workerData: null, threadId: 0, resourceLimits: {},
      SHARE_ENV: Symbol("nodejs.worker_threads.SHARE_ENV"),
    }),
    cluster: () => unavailable("cluster", "node here runs one process", {
      isPrimary: true, isMaster: true, isWorker: false, workers: {}, settings: {},
    }),
    net: () => unavailable("net", noSockets, {
      isIP: (s) => ip4.test(String(s)) ? 4 : isIPv6(String(s)) ? 6 : 0,
      isIPv4: (s) => ip4.test(String(s)),
      isIPv6: (s) => isIPv6(String(s)),
    }),
    dgram: () => unavailable("dgram", noSockets),
    tls: () => unavailable("tls", noSockets, { rootCertificates: [], DEFAULT_MIN_VERSION: "TLSv1.2", DEFAULT_MAX_VERSION: "TLSv1.3" }),
    http2: () => unavailable("http2", noSockets, { constants: {} }),
    dns: () => unavailable("dns", "names are resolved by the session's HTTP client, not by node"),
    "dns/promises": () => unavailable("dns/promises", "names are resolved by the session's HTTP client, not by node"),
    inspector: () => unavailable("inspector", "node here has no debugger", { url: () => undefined }),
    "inspector/promises": () => unavailable("inspector/promises", "node here has no debugger"),
    repl: () => unavailable("repl", "node here has no interactive prompt"),
    vm: () => unavailable("vm", "node here has one context; use a function instead"),
    v8: () => unavailable("v8", "node here runs on QuickJS, not V8", {
      getHeapStatistics: () => ({ total_heap_size: 0, used_heap_size: 0, heap_size_limit: 0 }),
    }),
    wasi: () => unavailable("wasi", "node here runs no WebAssembly"),
    trace_events: () => unavailable("trace_events", "node here has no tracing"),
    domain: () => unavailable("domain", "domains are deprecated and not in this node"),
    "path/win32": () => unavailable("path/win32", "node here runs on POSIX paths only"),
    "stream/web": () => unavailable("stream/web", "node here has no web streams; use the stream module"),
    "test/reporters": () => unavailable("test/reporters", "node here has no test runner"),
    test: () => unavailable("test", "node here has no test runner"),
    sea: () => unavailable("sea", "node here is not a single executable application", { isSea: () => false }),
  };
  const made = {};
  for (const name of Object.keys(factories)) Object.defineProperty(made, name, { enumerable: true, get: factories[name] });
  return made;
});
