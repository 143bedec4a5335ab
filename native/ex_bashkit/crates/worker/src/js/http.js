// http and https: Node's clients over the session's HTTP client (its
// allowlist, its limits, and in a worker the host's egress); a chunk
// (run.rs), made the first time a program uses one. A request goes out
// when it ends and its response comes back whole, as an IncomingMessage
// stream. No redirects are followed and no body is decompressed, as in
// Node. What needs a socket of its own (servers, custom agents, Unix
// sockets, a client certificate) is refused, saying so.
(function (host) {
  const { process } = host;
  const EventEmitter = host.modules.events;
  const { Buffer } = host.modules.buffer;
  const { Readable, Writable } = host.modules.stream;
  const { URL } = host.modules.url;

  const STATUS_CODES = {
    100: "Continue", 101: "Switching Protocols", 102: "Processing", 103: "Early Hints", 200: "OK", 201: "Created",
    202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content", 205: "Reset Content",
    206: "Partial Content", 207: "Multi-Status", 208: "Already Reported", 226: "IM Used", 300: "Multiple Choices",
    301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified", 305: "Use Proxy",
    307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized",
    402: "Payment Required", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
    407: "Proxy Authentication Required", 408: "Request Timeout", 409: "Conflict", 410: "Gone",
    411: "Length Required", 412: "Precondition Failed", 413: "Payload Too Large", 414: "URI Too Long",
    415: "Unsupported Media Type", 416: "Range Not Satisfiable", 417: "Expectation Failed", 418: "I'm a Teapot",
    421: "Misdirected Request", 422: "Unprocessable Entity", 423: "Locked", 424: "Failed Dependency",
    425: "Too Early", 426: "Upgrade Required", 428: "Precondition Required", 429: "Too Many Requests",
    431: "Request Header Fields Too Large", 451: "Unavailable For Legal Reasons", 500: "Internal Server Error",
    501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    505: "HTTP Version Not Supported", 506: "Variant Also Negotiates", 507: "Insufficient Storage",
    508: "Loop Detected", 509: "Bandwidth Limit Exceeded", 510: "Not Extended", 511: "Network Authentication Required",
  };
  const METHODS = ["ACL", "BIND", "CHECKOUT", "CONNECT", "COPY", "DELETE", "GET", "HEAD", "LINK", "LOCK", "M-SEARCH",
    "MERGE", "MKACTIVITY", "MKCALENDAR", "MKCOL", "MOVE", "NOTIFY", "OPTIONS", "PATCH", "POST", "PROPFIND",
    "PROPPATCH", "PURGE", "PUT", "QUERY", "REBIND", "REPORT", "SEARCH", "SOURCE", "SUBSCRIBE", "TRACE", "UNBIND",
    "UNLINK", "UNLOCK", "UNSUBSCRIBE"];
  const refused = (what, why) => Object.assign(new Error(what + " is not available in the sandbox: " + why), { code: "ERR_SANDBOX_UNAVAILABLE" });
  const noSockets = "node here has no sockets of its own; requests go through the session's HTTP client";

  class Agent extends EventEmitter {
    constructor(options = {}) {
      super();
      this.options = { ...options };
      this.keepAlive = !!options.keepAlive;
      this.maxSockets = options.maxSockets || Infinity;
      this.maxFreeSockets = options.maxFreeSockets || 256;
      this.sockets = {}; this.freeSockets = {}; this.requests = {};
      this.defaultPort = 80; this.protocol = "http:";
    }
    destroy() {}
    getName(options = {}) { return (options.host || "localhost") + ":" + (options.port || "") + ":" + (options.localAddress || ""); }
  }
  // An agent's own way to connect (a proxy agent's) is a socket this node
  // does not have: such agents are refused rather than bypassed.
  const ownConnection = (agent) => agent && (agent.createConnection !== Agent.prototype.createConnection ||
    typeof agent.connect === "function" || typeof agent.callback === "function");
  Agent.prototype.createConnection = function () { throw refused("http.Agent.createConnection", noSockets); };

  class IncomingMessage extends Readable {
    constructor(response, method, url) {
      super();
      this.statusCode = response.status;
      this.statusMessage = STATUS_CODES[response.status] || "";
      this.httpVersion = "1.1"; this.httpVersionMajor = 1; this.httpVersionMinor = 1;
      this.method = null; this.url = "";
      this.rawHeaders = response.headers.slice();
      this.headers = {};
      this.headersDistinct = {};
      for (let i = 0; i + 1 < this.rawHeaders.length; i += 2) {
        const name = this.rawHeaders[i].toLowerCase();
        const value = this.rawHeaders[i + 1];
        (this.headersDistinct[name] = this.headersDistinct[name] || []).push(value);
        if (name === "set-cookie") (this.headers[name] = this.headers[name] || []).push(value);
        else if (name in this.headers) this.headers[name] += (name === "cookie" ? "; " : ", ") + value;
        else this.headers[name] = value;
      }
      this.trailers = {}; this.rawTrailers = [];
      this.complete = false;
      this.socket = this.connection = null;
      this._request = { method, url };
    }
    setTimeout(ms, callback) { if (callback) this.once("timeout", callback); return this; }
  }

  class ClientRequest extends Writable {
    constructor(protocol, options, callback) {
      super();
      this.method = String(options.method || "GET").toUpperCase();
      if (!/^[A-Z!#$%&'*+.^_`|~-]+$/.test(this.method)) {
        throw Object.assign(new TypeError("Method must be a valid HTTP token [\"" + options.method + "\"]"), { code: "ERR_INVALID_HTTP_TOKEN" });
      }
      for (const [option, why] of [["socketPath", "node here cannot reach Unix sockets"], ["lookup", "names are resolved by the session's HTTP client"],
        ["localAddress", noSockets], ["createConnection", noSockets], ["cert", "no client certificates"], ["key", "no client certificates"],
        ["pfx", "no client certificates"], ["ca", "the session's HTTP client trusts the system's certificates only"]]) {
        if (options[option] !== undefined) throw refused(protocol.slice(0, -1) + ".request's " + option, why);
      }
      if (options.rejectUnauthorized === false) throw refused(protocol.slice(0, -1) + ".request's rejectUnauthorized: false", "certificates are always checked");
      if (ownConnection(options.agent)) throw refused("a custom http.Agent (such as a proxy agent)", noSockets);
      const host = options.hostname || (options.host || "localhost").replace(/:\d+$/, "");
      const port = options.port ? ":" + options.port : "";
      const path = options.path || "/";
      if (/[\u0000-\u0020]/.test(path)) throw Object.assign(new TypeError("Request path contains unescaped characters"), { code: "ERR_UNESCAPED_CHARACTERS" });
      this.protocol = protocol;
      this.host = host;
      this.path = path;
      this._url = protocol + "//" + (host.includes(":") ? "[" + host + "]" : host) + port + path;
      this._headers = new Map();
      for (const [name, value] of Object.entries(options.headers || {})) this.setHeader(name, value);
      if (options.auth && !this.hasHeader("authorization")) this.setHeader("Authorization", "Basic " + Buffer.from(options.auth).toString("base64"));
      this._body = [];
      this.finished = false; this.aborted = false; this.reusedSocket = false;
      this.socket = this.connection = null;
      this.timeout = options.timeout;
      if (callback) this.once("response", callback);
      if (options.signal) {
        const abort = () => this.destroy(Object.assign(new Error("The operation was aborted"), { name: "AbortError", code: "ABORT_ERR" }));
        if (options.signal.aborted) process.nextTick(abort); else options.signal.addEventListener("abort", abort, { once: true });
      }
    }
    setHeader(name, value) { this._headers.set(String(name).toLowerCase(), [String(name), value]); return this; }
    getHeader(name) { const entry = this._headers.get(String(name).toLowerCase()); return entry && entry[1]; }
    getHeaders() { const out = Object.create(null); for (const [key, [, value]] of this._headers) out[key] = value; return out; }
    getHeaderNames() { return [...this._headers.keys()]; }
    getRawHeaderNames() { return [...this._headers.values()].map(([name]) => name); }
    hasHeader(name) { return this._headers.has(String(name).toLowerCase()); }
    removeHeader(name) { this._headers.delete(String(name).toLowerCase()); }
    flushHeaders() {}
    setNoDelay() {}
    setSocketKeepAlive() {}
    setTimeout(ms, callback) { this.timeout = ms; if (callback) this.once("timeout", callback); return this; }
    abort() { if (!this.aborted) { this.aborted = true; process.nextTick(() => this.emit("abort")); this.destroy(); } }
    _write(chunk, encoding, callback) {
      this._body.push(typeof chunk === "string" ? Buffer.from(chunk, encoding) : Buffer.from(chunk));
      callback();
    }
    _final(callback) {
      callback();
      this.finished = true;
      // Sent once the caller's code has returned (so that it can listen).
      process.nextTick(() => this._send());
    }
    _send() {
      if (this.destroyed) return;
      const headers = [];
      for (const [, [name, value]] of this._headers) {
        for (const one of Array.isArray(value) ? value : [value]) headers.push(name, String(one));
      }
      const body = this._body.length ? Buffer.concat(this._body) : undefined;
      let response;
      try {
        response = host.request(this.method, this._url, headers, body);
      } catch (error) {
        // The session's client says why in words; Node's code for them.
        const code = /allowlist|access denied|no network access|grant/.test(error.message) ? "EACCES"
          : /timed? ?out/i.test(error.message) ? "ETIMEDOUT"
            : /dns|resolve|lookup/i.test(error.message) ? "ENOTFOUND" : "ECONNREFUSED";
        this.destroy(Object.assign(new Error(error.message), { code }));
        return;
      }
      const message = new IncomingMessage(response, this.method, this._url);
      message.req = this;
      this.res = message;
      const bytes = Buffer.from(response.body);
      if (!this.emit("response", message)) message.resume();
      if (bytes.length) message.push(bytes);
      message.push(null);
      message.once("end", () => { message.complete = true; this.emit("close"); });
    }
  }

  function client(protocol, defaultPort) {
    // request(url[, options][, callback]) or request(options[, callback]), as Node reads them.
    function request(input, options, callback) {
      if (typeof options === "function") { callback = options; options = undefined; }
      let merged;
      if (typeof input === "string" || input instanceof URL) {
        const url = new URL(String(input));
        if (url.protocol !== protocol) {
          throw Object.assign(new TypeError('Protocol "' + url.protocol + '" not supported. Expected "' + protocol + '"'), { code: "ERR_INVALID_PROTOCOL" });
        }
        merged = {
          protocol: url.protocol, hostname: url.hostname.replace(/^\[|\]$/g, ""), port: url.port || undefined,
          path: url.pathname + url.search, auth: url.username ? decodeURIComponent(url.username) + ":" + decodeURIComponent(url.password) : undefined,
          ...(options || {}),
        };
      } else {
        merged = { ...(input || {}) };
        if (typeof options === "object" && options) Object.assign(merged, options);
      }
      if (merged.protocol && merged.protocol !== protocol) {
        throw Object.assign(new TypeError('Protocol "' + merged.protocol + '" not supported. Expected "' + protocol + '"'), { code: "ERR_INVALID_PROTOCOL" });
      }
      if (merged.port && Number(merged.port) === defaultPort) delete merged.port;
      return new ClientRequest(protocol, merged, callback);
    }
    const get = (input, options, callback) => {
      const req = request(input, options, callback);
      req.end();
      return req;
    };
    const agent = new Agent();
    agent.defaultPort = defaultPort;
    agent.protocol = protocol;
    return {
      request, get, Agent, globalAgent: agent, ClientRequest, IncomingMessage, STATUS_CODES, METHODS,
      maxHeaderSize: 16384,
      validateHeaderName(name) { if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(String(name))) throw Object.assign(new TypeError('Header name must be a valid HTTP token ["' + name + '"]'), { code: "ERR_INVALID_HTTP_TOKEN" }); },
      validateHeaderValue(name, value) { if (value === undefined) throw Object.assign(new TypeError('Invalid value "undefined" for header "' + name + '"'), { code: "ERR_HTTP_INVALID_HEADER_VALUE" }); },
      createServer() { throw refused(protocol.slice(0, -1) + ".createServer", noSockets); },
      Server: function Server() { throw refused(protocol.slice(0, -1) + ".Server", noSockets); },
      OutgoingMessage: Writable,
      ServerResponse: function ServerResponse() { throw refused(protocol.slice(0, -1) + ".ServerResponse", noSockets); },
      setMaxIdleHTTPParsers() {},
    };
  }

  return { http: client("http:", 80), https: client("https:", 443) };
});
