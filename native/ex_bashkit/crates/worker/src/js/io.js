// Streams: `stream` (Readable, Writable, Duplex, Transform, PassThrough,
// pipeline, finished), `stream/promises` and `readline`; a chunk
// (run.rs), made the first time a program uses one. Events are
// delivered on process.nextTick as Node's are; there is no backpressure
// beyond write()'s callbacks (everything is in memory already).
(function (host) {
  // The host's: the code runner's mode takes the globals away (restrict).
  const { process } = host;
  const EventEmitter = host.modules.events;
  const { Buffer } = host.modules.buffer;
  const { StringDecoder } = host.modules.string_decoder;
  const tick = (fn) => process.nextTick(fn);

  const stream = (() => {
    // Stops a stream: its _destroy (if any) first, then "error" and "close".
    function destroy(stream, error) {
      if (stream.destroyed) return stream;
      stream.destroyed = true;
      const done = (failure) => tick(() => { if (failure) stream.emit("error", failure); stream.emit("close"); });
      if (stream._destroy) stream._destroy(error || null, done); else done(error);
      return stream;
    }
    const Readable = host.constructorOf("Readable", class extends EventEmitter {
      // Node's state, as packages that look inside streams read it.
      get readableEnded() { return this._endEmitted; }
      get readableFlowing() { return this._flowing; }
      get readableLength() { return this._queue.length; }
      get readableObjectMode() { return this._objectMode; }
      get _readableState() {
        const stream = this;
        return {
          get ended() { return stream._ended; }, get endEmitted() { return stream._endEmitted; },
          get flowing() { return stream._flowing; }, get length() { return stream._queue.length; },
          get objectMode() { return stream._objectMode; }, get destroyed() { return stream.destroyed; },
          highWaterMark: stream._objectMode ? 16 : 65536,
        };
      }
      _read() {}
      push(chunk, encoding) {
        if (chunk === null) { this._ended = true; this._schedule(); return false; }
        if (!this._objectMode && typeof chunk === "string") chunk = Buffer.from(chunk, encoding || "utf8");
        else if (!this._objectMode && chunk instanceof Uint8Array && !Buffer.isBuffer(chunk)) chunk = Buffer.from(chunk);
        this._queue.push(chunk);
        this._schedule();
        return this._queue.length < 16;
      }
      unshift(chunk) { this._queue.unshift(chunk); }
      setEncoding(encoding) { this._decoder = new StringDecoder(encoding); return this; }
      _out(chunk) { return this._decoder && !this._objectMode ? this._decoder.write(chunk) : chunk; }
      on(name, listener) {
        super.on(name, listener);
        if (name === "data" && this._flowing !== false) this.resume();
        if (name === "readable") { this._flowing = false; this._schedule(); }
        return this;
      }
      resume() { this._flowing = true; this._schedule(); return this; }
      pause() { this._flowing = false; return this; }
      isPaused() { return this._flowing === false; }
      _schedule() {
        if (this._scheduled) return;
        this._scheduled = true;
        tick(() => { this._scheduled = false; this._flow(); });
      }
      _flow() {
        if (this.destroyed) return;
        if (this._flowing) {
          while (this._flowing && this._queue.length) {
            const chunk = this._out(this._queue.shift());
            // A decoder holding the start of a character has nothing to give.
            if (chunk !== "") this.emit("data", chunk);
          }
        } else if (this.listenerCount("readable") && (this._queue.length || this._ended)) {
          this.emit("readable");
        }
        if (this._ended && this._queue.length === 0) {
          if (!this._endEmitted) {
            this._endEmitted = true;
            this.readable = false;
            this.emit("end");
            tick(() => this.emit("close"));
          }
          return;
        }
        if (!this._ended && this._queue.length === 0 && (this._flowing || this.listenerCount("readable"))) this._read(65536);
      }
      read() {
        if (this._queue.length === 0) { if (!this._ended) this._read(65536); this._schedule(); return null; }
        if (this._objectMode) return this._queue.shift();
        const chunk = Buffer.concat(this._queue.splice(0));
        return this._decoder ? this._decoder.write(chunk) : chunk;
      }
      pipe(destination, options) {
        destination.emit("pipe", this);
        this.on("data", (chunk) => destination.write(chunk));
        if (!options || options.end !== false) this.on("end", () => destination.end());
        return destination;
      }
      unpipe() { this.removeAllListeners("data"); return this; }
      destroy(error) { return destroy(this, error); }
      [Symbol.asyncIterator]() {
        const queue = [];
        let ended = false, failure = null, wake = null;
        const notify = () => { if (wake) { const w = wake; wake = null; w(); } };
        this.on("data", (chunk) => { queue.push(chunk); notify(); });
        this.on("end", () => { ended = true; notify(); });
        this.on("error", (error) => { failure = error; notify(); });
        const stream = this;
        return {
          async next() {
            while (!queue.length && !ended && !failure) await new Promise((resolve) => { wake = resolve; });
            if (queue.length) return { value: queue.shift(), done: false };
            if (failure) throw failure;
            return { value: undefined, done: true };
          },
          async return() { stream.destroy(); return { value: undefined, done: true }; },
          [Symbol.asyncIterator]() { return this; },
        };
      }
      static from(source, options) {
        const readable = new Readable({ objectMode: true, ...options });
        if (typeof source === "string" || source instanceof Uint8Array) {
          readable.push(source);
          readable.push(null);
          return readable;
        }
        (async () => {
          try {
            for await (const item of source) readable.push(item);
            readable.push(null);
          } catch (error) { readable.destroy(error); }
        })();
        return readable;
      }
    }, function (options = {}) {
      EventEmitter.call(this);
      this._queue = [];
      this._ended = false;
      this._endEmitted = false;
      this._flowing = null;
      this._scheduled = false;
      this._objectMode = !!(options.objectMode || options.readableObjectMode);
      this._decoder = null;
      if (options.encoding) this.setEncoding(options.encoding);
      if (options.read) this._read = options.read;
      if (options.destroy) this._destroy = options.destroy;
      this.readable = true;
      this.destroyed = false;
    });

    // Writable's state and methods, shared with Duplex.
    function writableState(stream, options) {
      stream._pending = [];
      stream._writing = false;
      stream._ending = false;
      stream._finishing = false;
      stream.writable = true;
      stream.writableEnded = false;
      stream.writableFinished = false;
      stream._decodeStrings = options.decodeStrings !== false;
      stream._writableObjectMode = !!(options.objectMode || options.writableObjectMode);
      if (options.write) stream._write = options.write;
      if (options.final) stream._final = options.final;
    }
    const writableMethods = {
      _write(chunk, encoding, callback) { callback(); },
      write(chunk, encoding, callback) {
        if (typeof encoding === "function") { callback = encoding; encoding = undefined; }
        if (this._ending) {
          const error = new Error("write after end");
          error.code = "ERR_STREAM_WRITE_AFTER_END";
          // An errored stream does not finish.
          this._errored = error;
          tick(() => { if (callback) callback(error); this.emit("error", error); });
          return false;
        }
        if (!this._writableObjectMode && typeof chunk === "string" && this._decodeStrings) {
          chunk = Buffer.from(chunk, encoding || "utf8");
          encoding = "buffer";
        }
        this._pending.push([chunk, encoding || (Buffer.isBuffer(chunk) ? "buffer" : "utf8"), callback]);
        this._drain();
        return true;
      },
      _drain() {
        if (this._writing || this.destroyed) return;
        const next = this._pending.shift();
        if (!next) {
          if (this._ending && !this._finishing) this._finishNow();
          return;
        }
        this._writing = true;
        this._write(next[0], next[1], (error) => {
          this._writing = false;
          if (next[2]) next[2](error || null);
          if (error) { this.destroy(error); return; }
          tick(() => this._drain());
        });
      },
      _finishNow() {
        this._finishing = true;
        const done = (error) => {
          if (error) { this.destroy(error); return; }
          if (this._errored || this.destroyed) return;
          this.writableFinished = true;
          this.emit("finish");
          if (!(this instanceof Readable)) tick(() => this.emit("close"));
        };
        if (this._final) this._final(done); else tick(() => done());
      },
      end(chunk, encoding, callback) {
        if (typeof chunk === "function") { callback = chunk; chunk = undefined; }
        else if (typeof encoding === "function") { callback = encoding; encoding = undefined; }
        if (chunk !== undefined && chunk !== null) this.write(chunk, encoding);
        if (callback) this.once("finish", callback);
        if (!this._ending) {
          this._ending = true;
          this.writable = false;
          this.writableEnded = true;
          tick(() => this._drain());
        }
        return this;
      },
      cork() {},
      uncork() {},
      setDefaultEncoding() { return this; },
    };

    const Writable = host.constructorOf("Writable", class extends EventEmitter {
      destroy(error) { return destroy(this, error); }
    }, function (options = {}) {
      EventEmitter.call(this);
      writableState(this, options);
      if (options.destroy) this._destroy = options.destroy;
      this.destroyed = false;
    });
    Object.assign(Writable.prototype, writableMethods);

    const Duplex = host.constructorOf("Duplex", class extends Readable {}, function (options = {}) {
      Readable.call(this, options);
      writableState(this, options);
    });
    Object.assign(Duplex.prototype, writableMethods);

    const Transform = host.constructorOf("Transform", class extends Duplex {
      _transform(chunk, encoding, callback) { callback(null, chunk); }
      _write(chunk, encoding, callback) {
        this._transform(chunk, encoding, (error, data) => {
          if (data !== undefined && data !== null) this.push(data);
          callback(error);
        });
      }
      _final(callback) {
        const end = (error) => { if (!error) this.push(null); callback(error); };
        if (this._flush) {
          this._flush((error, data) => {
            if (data !== undefined && data !== null) this.push(data);
            end(error);
          });
        } else end();
      }
    }, function (options = {}) {
      Duplex.call(this, options);
      if (options.transform) this._transform = options.transform;
      if (options.flush) this._flush = options.flush;
    });
    const PassThrough = host.constructorOf("PassThrough", class extends Transform {}, function (options) {
      Transform.call(this, options);
    });

    const isWritable = (stream) => typeof stream.write === "function";
    function finished(stream, options, callback) {
      if (typeof options === "function") { callback = options; options = {}; }
      let done = false;
      const finish = (error) => { if (!done) { done = true; callback(error); } };
      stream.on("error", finish);
      stream.on(stream instanceof Readable ? "end" : "finish", () => finish());
      if (isWritable(stream) && stream instanceof Readable) stream.on("finish", () => { if (stream._endEmitted) finish(); });
      return () => { done = true; };
    }
    function pipeline(...streams) {
      const callback = typeof streams[streams.length - 1] === "function" ? streams.pop() : () => {};
      if (streams.length === 1 && Array.isArray(streams[0])) streams = streams[0];
      let done = false;
      const finish = (error) => {
        if (done) return;
        done = true;
        if (error) for (const stream of streams) if (!stream.destroyed && stream.destroy) stream.destroy();
        callback(error);
      };
      for (let i = 0; i + 1 < streams.length; i++) streams[i].pipe(streams[i + 1]);
      for (const stream of streams) stream.on("error", finish);
      const last = streams[streams.length - 1];
      last.on(isWritable(last) ? "finish" : "end", () => finish());
      return last;
    }
    const { promisify } = host.modules.util;
    const streamPromises = {
      pipeline: (...streams) => new Promise((resolve, reject) => pipeline(...streams, (error) => (error ? reject(error) : resolve()))),
      finished: (stream, options) => new Promise((resolve, reject) => finished(stream, options || {}, (error) => (error ? reject(error) : resolve()))),
    };
    const Stream = Readable;
    const stream = Object.assign(Stream, {
      Stream, Readable, Writable, Duplex, Transform, PassThrough, pipeline, finished, promises: streamPromises,
    });
    pipeline[promisify.custom] = streamPromises.pipeline;
    finished[promisify.custom] = streamPromises.finished;

    return stream;
  })();

  const readline = (() => {
    // readline: lines of a stream, as events or by `for await`.
    class Interface extends EventEmitter {
      constructor(options) {
        super();
        const input = options.input;
        this.input = input;
        this.output = options.output;
        this.closed = false;
        this.terminal = false;
        this.line = "";
        const decoder = new StringDecoder("utf8");
        let rest = "";
        const lines = [];
        this._lines = lines;
        this._waiting = [];
        this._questions = [];
        const deliver = (line) => {
          if (this._questions.length) this._questions.shift()(line);
          else if (this._waiting.length) this._waiting.shift()({ value: line, done: false });
          else if (this.listenerCount("line")) this.emit("line", line);
          else lines.push(line);
        };
        input.on("data", (chunk) => {
          rest += typeof chunk === "string" ? chunk : decoder.write(chunk);
          const parts = rest.split(/\r?\n/);
          rest = parts.pop();
          for (const line of parts) deliver(line);
        });
        input.on("end", () => {
          rest += decoder.end();
          if (rest) deliver(rest);
          rest = "";
          this.close();
        });
      }
      on(name, listener) {
        super.on(name, listener);
        if (name === "line") while (this._lines.length) listener.call(this, this._lines.shift());
        return this;
      }
      close() {
        if (this.closed) return;
        this.closed = true;
        for (const waiting of this._waiting.splice(0)) waiting({ value: undefined, done: true });
        this.emit("close");
      }
      question(query, options, callback) {
        if (typeof options === "function") callback = options;
        if (this.output && query) this.output.write(query);
        if (this._lines.length) { const line = this._lines.shift(); tick(() => callback(line)); } else this._questions.push(callback);
      }
      setPrompt(prompt) { this._prompt = prompt; }
      prompt() { if (this.output && this._prompt) this.output.write(this._prompt); }
      write() {}
      pause() { return this; }
      resume() { return this; }
      [Symbol.asyncIterator]() {
        const self = this;
        return {
          next() {
            if (self._lines.length) return Promise.resolve({ value: self._lines.shift(), done: false });
            if (self.closed) return Promise.resolve({ value: undefined, done: true });
            return new Promise((resolve) => self._waiting.push(resolve));
          },
          return() { self.close(); return Promise.resolve({ value: undefined, done: true }); },
          [Symbol.asyncIterator]() { return this; },
        };
      }
    }
    const readline = {
      Interface,
      createInterface: (input, output) => new Interface(input && input.on ? { input, output } : input),
    };
    return readline;
  })();
  const readlinePromises = (() => {
    const { Interface, createInterface } = readline;
    return {
      Interface,
      createInterface(options) {
        const rl = createInterface(options);
        const question = rl.question.bind(rl);
        rl.question = (query) => new Promise((resolve) => question(query, resolve));
        return rl;
      },
    };
  })();

  // The stream module's helpers over any stream.
  let highWaterMark = 65536, objectHighWaterMark = 16;
  Object.assign(stream, {
    getDefaultHighWaterMark: (objectMode) => objectMode ? objectHighWaterMark : highWaterMark,
    setDefaultHighWaterMark(objectMode, value) { if (objectMode) objectHighWaterMark = value; else highWaterMark = value; },
    isReadable: (s) => !!s && s.readable !== false && !s.destroyed,
    isWritable: (s) => !!s && s.writable !== false && !s.destroyed,
    isErrored: (s) => !!(s && s._errored),
    isDestroyed: (s) => !!(s && s.destroyed),
    isDisturbed: (s) => !!(s && (s._flowing !== null || s._ended)),
    destroy: (s, error) => s.destroy(error),
    addAbortSignal(signal, s) {
      const abort = () => s.destroy(Object.assign(new Error("The operation was aborted"), { name: "AbortError", code: "ABORT_ERR" }));
      if (signal.aborted) abort(); else signal.addEventListener("abort", abort, { once: true });
      return s;
    },
  });
  return { stream, "stream/promises": stream.promises, readline, "readline/promises": readlinePromises };
});
