// zlib: gzip, deflate (zlib-wrapped and raw) and brotli over the host's
// codecs (zlib.rs), as Node's sync calls, callbacks and streams; a chunk
// (run.rs), made the first time a program uses it. A stream codes what
// it was written when it ends (everything is in memory already).
(function (host) {
  const { process } = host;
  const { Buffer } = host.modules.buffer;
  const { Transform } = host.modules.stream;

  const constants = {
    Z_NO_FLUSH: 0, Z_PARTIAL_FLUSH: 1, Z_SYNC_FLUSH: 2, Z_FULL_FLUSH: 3, Z_FINISH: 4, Z_BLOCK: 5,
    Z_OK: 0, Z_STREAM_END: 1, Z_NEED_DICT: 2, Z_ERRNO: -1, Z_STREAM_ERROR: -2, Z_DATA_ERROR: -3,
    Z_MEM_ERROR: -4, Z_BUF_ERROR: -5, Z_VERSION_ERROR: -6,
    Z_NO_COMPRESSION: 0, Z_BEST_SPEED: 1, Z_BEST_COMPRESSION: 9, Z_DEFAULT_COMPRESSION: -1,
    Z_FILTERED: 1, Z_HUFFMAN_ONLY: 2, Z_RLE: 3, Z_FIXED: 4, Z_DEFAULT_STRATEGY: 0, ZLIB_VERNUM: 4865,
    DEFLATE: 1, INFLATE: 2, GZIP: 3, GUNZIP: 4, DEFLATERAW: 5, INFLATERAW: 6, UNZIP: 7,
    BROTLI_DECODE: 8, BROTLI_ENCODE: 9,
    Z_MIN_WINDOWBITS: 8, Z_MAX_WINDOWBITS: 15, Z_DEFAULT_WINDOWBITS: 15,
    Z_MIN_CHUNK: 64, Z_MAX_CHUNK: Infinity, Z_DEFAULT_CHUNK: 16384,
    Z_MIN_MEMLEVEL: 1, Z_MAX_MEMLEVEL: 9, Z_DEFAULT_MEMLEVEL: 8,
    Z_MIN_LEVEL: -1, Z_MAX_LEVEL: 9, Z_DEFAULT_LEVEL: -1,
    BROTLI_OPERATION_PROCESS: 0, BROTLI_OPERATION_FLUSH: 1, BROTLI_OPERATION_FINISH: 2,
    BROTLI_OPERATION_EMIT_METADATA: 3, BROTLI_PARAM_MODE: 0, BROTLI_MODE_GENERIC: 0,
    BROTLI_MODE_TEXT: 1, BROTLI_MODE_FONT: 2, BROTLI_DEFAULT_MODE: 0, BROTLI_PARAM_QUALITY: 1,
    BROTLI_MIN_QUALITY: 0, BROTLI_MAX_QUALITY: 11, BROTLI_DEFAULT_QUALITY: 11, BROTLI_PARAM_LGWIN: 2,
    BROTLI_PARAM_SIZE_HINT: 5,
  };
  const codes = { Z_OK: 0, Z_STREAM_END: 1, Z_NEED_DICT: 2, Z_ERRNO: -1, Z_STREAM_ERROR: -2, Z_DATA_ERROR: -3, Z_MEM_ERROR: -4, Z_BUF_ERROR: -5, Z_VERSION_ERROR: -6 };
  for (const [name, value] of Object.entries(codes)) codes[value] = name;

  const typeError = (message) => Object.assign(new TypeError(message), { code: "ERR_INVALID_ARG_TYPE" });
  function bytes(data) {
    if (typeof data === "string") return Buffer.from(data);
    if (data instanceof ArrayBuffer) return new Uint8Array(data);
    if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    throw typeError('The "buffer" argument must be of type string or an instance of Buffer, TypedArray, DataView, or ArrayBuffer. Received ' + host.inspect(data));
  }
  // The options that change what comes out; the rest (chunkSize, info,
  // flush) change only how Node hands it over. Settings this zlib does
  // not have are refused, not ignored.
  const defaults = { windowBits: [15, 0], memLevel: [8], strategy: [0], dictionary: [undefined] };
  function level(brotli, options) {
    if (options === undefined || options === null) return [-1, undefined];
    if (typeof options !== "object") throw typeError('The "options" argument must be of type object. Received ' + host.inspect(options));
    for (const [name, allowed] of Object.entries(defaults)) {
      if (options[name] !== undefined && !allowed.includes(options[name])) {
        throw Object.assign(new Error("zlib option " + name + " is not supported in the sandbox (only its default)"), { code: "ERR_SANDBOX_UNAVAILABLE" });
      }
    }
    const max = options.maxOutputLength;
    if (brotli) {
      const quality = options.params && options.params[constants.BROTLI_PARAM_QUALITY];
      return [quality === undefined ? -1 : quality, max];
    }
    const value = options.level === undefined ? -1 : options.level;
    if (!Number.isInteger(value) || value < -1 || value > 9) {
      throw Object.assign(new RangeError('The value of "options.level" is out of range. It must be >= -1 and <= 9. Received ' + value), { code: "ERR_OUT_OF_RANGE" });
    }
    return [value, max];
  }
  function code(op, data, options) {
    const [lvl, max] = level(op.startsWith("brotli"), options);
    try {
      return Buffer.from(host.zlib(op, bytes(data), lvl, max === undefined ? -1 : max));
    } catch (error) {
      if (error.code in codes) error.errno = codes[error.code];
      throw error;
    }
  }

  const zlib = { constants, codes };
  const classes = {
    gzip: "Gzip", gunzip: "Gunzip", deflate: "Deflate", inflate: "Inflate", deflateRaw: "DeflateRaw",
    inflateRaw: "InflateRaw", unzip: "Unzip", brotliCompress: "BrotliCompress", brotliDecompress: "BrotliDecompress",
  };
  for (const [op, name] of Object.entries(classes)) {
    zlib[op + "Sync"] = (data, options) => code(op, data, options);
    zlib[op] = (data, options, callback) => {
      if (typeof options === "function") { callback = options; options = undefined; }
      if (typeof callback !== "function") throw typeError('The "callback" argument must be of type function. Received ' + host.inspect(callback));
      let result, failure = null;
      try { result = code(op, data, options); } catch (error) { failure = error; }
      process.nextTick(() => failure ? callback(failure) : callback(null, result));
    };
    const Codec = {
      [name]: class extends Transform {
        constructor(options) {
          super();
          level(op.startsWith("brotli"), options);
          this._options = options;
          this._parts = [];
          this.bytesWritten = 0;
        }
        _transform(chunk, encoding, callback) {
          const part = typeof chunk === "string" ? Buffer.from(chunk, encoding) : Buffer.from(chunk);
          this._parts.push(part);
          this.bytesWritten += part.length;
          callback();
        }
        _flush(callback) {
          let out;
          try { out = code(op, Buffer.concat(this._parts), this._options); } catch (error) { callback(error); return; }
          this._parts = [];
          callback(null, out.length ? out : undefined);
        }
        flush(kind, callback) { if (typeof kind === "function") callback = kind; if (callback) process.nextTick(callback); }
        params(level, strategy, callback) { if (callback) process.nextTick(callback); }
        reset() { this._parts = []; }
        close(callback) { if (callback) process.nextTick(callback); this.destroy(); }
      },
    }[name];
    zlib[name] = Codec;
    zlib["create" + name] = (options) => new Codec(options);
  }
  zlib.crc32 = (data, value = 0) => host.crc32(bytes(data), value >>> 0);
  Object.assign(zlib, constants);
  return { zlib };
});
