// child_process, a chunk (run.rs): commands run in a new shell of the same session
// (`__host.spawn`, shells.rs): its files, exported environment, command
// policy and limits, within what is left of the script's deadline. The
// script waits while a command runs; `exec` and `spawn` run it from the
// event loop and deliver its output as Node does.
(function (host) {
  // The host's: the code runner's mode takes the globals away (restrict).
  const { process, require } = host;
  const EventEmitter = host.modules.events;
  const { Buffer } = host.modules.buffer;
  const { Readable, Writable } = host.modules.stream;
  const { promisify } = host.modules.util;
  const path = require("path");

  const quote = (word) => /^[\w@%+=:,./-]+$/.test(word) ? word : "'" + word.replace(/'/g, "'\\''") + "'";
  const commandLine = (file, args) => [file, ...args].map((word) => quote(String(word))).join(" ");
  const bytesOf = (input, encoding) => {
    if (input === undefined || input === null) return undefined;
    const buffer = typeof input === "string" ? Buffer.from(input, encoding || "utf8") : Buffer.from(input);
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  };
  const textOrBytes = (buffer, encoding) => encoding && encoding !== "buffer" ? buffer.toString(encoding) : buffer;
  let lastPid = 1000;

  // Runs `script` and waits: { status, stdout, stderr } as Buffers.
  function run(script, options) {
    const cwd = options.cwd ? path.resolve(String(options.cwd)) : process.cwd();
    const env = {};
    for (const [name, value] of Object.entries(options.env || process.env)) {
      if (value !== undefined) env[name] = String(value);
    }
    const ran = host.spawn(String(script), cwd, env, bytesOf(options.input));
    return { status: ran.status, stdout: Buffer.from(ran.stdout), stderr: Buffer.from(ran.stderr) };
  }
  // A program that is not there, as Node reports it (bash says 127).
  function missing(file, args, ran, syscall) {
    if (ran.status !== 127 || !/command not found|No such file/.test(ran.stderr.toString())) return null;
    const error = new Error(syscall + " " + file + " ENOENT");
    Object.assign(error, { errno: -2, code: "ENOENT", syscall: syscall + " " + file, path: file, spawnargs: args });
    return error;
  }
  const stdioOf = (options, index) => {
    const stdio = options.stdio;
    if (stdio === undefined) return index === 2 ? "inherit-by-default" : "pipe";
    return typeof stdio === "string" ? stdio : stdio[index] || "pipe";
  };
  // What a synchronous call does with output not piped back: the
  // parent's own stdout/stderr ("inherit"), or nowhere ("ignore").
  function passOn(ran, options) {
    for (const [index, name] of [[1, "stdout"], [2, "stderr"]]) {
      const stdio = stdioOf(options, index);
      if (stdio === "inherit" || stdio === "inherit-by-default") host.write(index, ran[name].toString());
    }
  }
  function failure(message, ran, encoding) {
    const error = new Error(message);
    const stdout = textOrBytes(ran.stdout, encoding), stderr = textOrBytes(ran.stderr, encoding);
    return Object.assign(error, { status: ran.status, signal: null, output: [null, stdout, stderr], pid: ++lastPid, stdout, stderr });
  }

  function execSync(command, options = {}) {
    const ran = run(command, options);
    passOn(ran, options);
    if (ran.status !== 0) {
      throw failure("Command failed: " + command + (ran.stderr.length ? "\n" + ran.stderr.toString() : ""), ran, options.encoding);
    }
    return stdioOf(options, 1) === "pipe" ? textOrBytes(ran.stdout, options.encoding) : null;
  }
  function execFileSync(file, args, options) {
    if (!Array.isArray(args)) { options = args; args = []; }
    options = options || {};
    const ran = run(options.shell ? [file, ...args].join(" ") : commandLine(file, args), options);
    const notThere = missing(file, args, ran, "spawnSync");
    if (notThere) throw notThere;
    passOn(ran, options);
    if (ran.status !== 0) {
      throw failure("Command failed: " + [file, ...args].join(" ") + (ran.stderr.length ? "\n" + ran.stderr.toString() : ""), ran, options.encoding);
    }
    return stdioOf(options, 1) === "pipe" ? textOrBytes(ran.stdout, options.encoding) : null;
  }
  function spawnSync(file, args, options) {
    if (!Array.isArray(args)) { options = args; args = []; }
    options = options || {};
    const ran = run(options.shell ? [file, ...args].join(" ") : commandLine(file, args), options);
    const pid = ++lastPid;
    const notThere = missing(file, args, ran, "spawnSync");
    if (notThere) return { error: notThere, status: null, signal: null, output: null, pid: 0, stdout: null, stderr: null };
    const out = (index, name) => {
      const stdio = stdioOf(options, index);
      if (stdio === "inherit") { host.write(index, ran[name].toString()); return null; }
      return stdio === "ignore" ? null : textOrBytes(ran[name], options.encoding);
    };
    const stdout = out(1, "stdout"), stderr = out(2, "stderr");
    return { pid, output: [null, stdout, stderr], stdout, stderr, status: ran.status, signal: null };
  }

  // A command run from the event loop, its output as streams.
  class ChildProcess extends EventEmitter {
    constructor(script, options, done) {
      super();
      this.pid = ++lastPid;
      this.exitCode = null;
      this.signalCode = null;
      this.killed = false;
      this.spawnfile = script;
      const input = [];
      let started = false, inputEnded = false;
      this.stdout = new Readable();
      this.stderr = new Readable();
      this.stdin = new Writable({
        write(chunk, encoding, callback) { input.push(chunk); callback(); },
        final: (callback) => { inputEnded = true; callback(); if (!started) start(); },
      });
      this.stdio = [this.stdin, this.stdout, this.stderr];
      const start = () => {
        if (started || this.killed) return;
        started = true;
        let ran;
        try {
          ran = run(script, { ...options, input: input.length ? Buffer.concat(input) : options.input });
        } catch (error) {
          this.emit("error", error);
          if (done) done(error, "", "");
          return;
        }
        for (const [name, index] of [["stdout", 1], ["stderr", 2]]) {
          const stdio = stdioOf(options, index);
          if (stdio === "inherit") host.write(index, ran[name].toString());
          else if (ran[name].length) this[name].push(ran[name]);
          this[name].push(null);
        }
        this.exitCode = ran.status;
        const finish = () => {
          this.emit("exit", ran.status, null);
          this.emit("close", ran.status, null);
          if (done) done(ran);
        };
        // After the output's own events, as Node orders them.
        setImmediate(finish);
      };
      // Started once the script has had its turn to attach listeners, or
      // once stdin, written to, is ended.
      setImmediate(() => { if (!this.stdin._pending.length && !input.length || inputEnded) start(); });
      this._start = start;
    }
    kill(signal) {
      if (this.exitCode !== null || this.killed) return false;
      this.killed = true;
      this.signalCode = signal || "SIGTERM";
      setImmediate(() => {
        this.emit("exit", null, this.signalCode);
        this.emit("close", null, this.signalCode);
      });
      return true;
    }
    ref() { return this; }
    unref() { return this; }
  }

  function spawn(file, args, options) {
    if (!Array.isArray(args)) { options = args; args = []; }
    options = options || {};
    const script = options.shell ? [file, ...args].join(" ") : commandLine(file, args);
    return new ChildProcess(script, options, null);
  }
  function exec(command, options, callback) {
    if (typeof options === "function") { callback = options; options = {}; }
    options = options || {};
    const child = new ChildProcess(command, options, (ran, stdout, stderr) => {
      if (!callback) return;
      if (ran instanceof Error) { callback(ran, stdout, stderr); return; }
      const out = textOrBytes(ran.stdout, options.encoding === undefined ? "utf8" : options.encoding);
      const err = textOrBytes(ran.stderr, options.encoding === undefined ? "utf8" : options.encoding);
      if (ran.status !== 0) {
        const error = new Error("Command failed: " + command + "\n" + ran.stderr.toString());
        Object.assign(error, { code: ran.status, killed: false, signal: null, cmd: command, stdout: out, stderr: err });
        callback(error, out, err);
      } else callback(null, out, err);
    });
    return child;
  }
  function execFile(file, args, options, callback) {
    if (typeof args === "function") { callback = args; args = []; options = {}; }
    else if (!Array.isArray(args)) { callback = options; options = args; args = []; }
    if (typeof options === "function") { callback = options; options = {}; }
    return exec(commandLine(file, args), options || {}, callback);
  }
  // util.promisify(exec) answers { stdout, stderr }, as Node's does.
  for (const fn of [exec, execFile]) {
    fn[promisify.custom] = (...args) => new Promise((resolve, reject) => {
      fn(...args, (error, stdout, stderr) => (error ? reject(Object.assign(error, { stdout, stderr })) : resolve({ stdout, stderr })));
    });
  }
  function fork() {
    const error = new Error("child_process.fork is not supported here: run `node FILE` with execSync or spawn");
    error.code = "ERR_NOT_SUPPORTED";
    throw error;
  }

  const child_process = { execSync, execFileSync, spawnSync, exec, execFile, spawn, fork, ChildProcess };
  return { child_process };
});
