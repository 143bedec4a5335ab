// Node's Buffer (a Uint8Array with encodings, js/bytes.rs does the text
// work) and string_decoder, for `node` in a sandbox. Runs before
// prelude.js, which finds them in `__host.modules`.
(function (host) {
  "use strict";

  const normal = (encoding) => (encoding === undefined || encoding === null ? "utf8" : String(encoding));

  function invalid(name, expected, value) {
    const error = new TypeError('The "' + name + '" argument must be ' + expected + ". Received " + typeof value);
    error.code = "ERR_INVALID_ARG_TYPE";
    return error;
  }

  class Buffer extends Uint8Array {
    static from(value, encodingOrOffset, length) {
      if (typeof value === "string") return fromBytes(host.encode(value, normal(encodingOrOffset)));
      if (value instanceof ArrayBuffer) {
        const offset = encodingOrOffset === undefined ? 0 : Number(encodingOrOffset);
        const size = length === undefined ? value.byteLength - offset : Number(length);
        return new Buffer(value, offset, size);
      }
      if (ArrayBuffer.isView(value)) {
        const copy = new Buffer(value.length);
        for (let i = 0; i < value.length; i++) copy[i] = value[i] & 255;
        return copy;
      }
      if (Array.isArray(value)) {
        const copy = new Buffer(value.length);
        for (let i = 0; i < value.length; i++) copy[i] = Number(value[i]) & 255;
        return copy;
      }
      if (value && value.type === "Buffer" && Array.isArray(value.data)) return Buffer.from(value.data);
      throw invalid("first argument", "of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object", value);
    }
    static alloc(size, fill, encoding) {
      const buffer = new Buffer(checkedSize(size));
      if (fill !== undefined && fill !== 0) buffer.fill(fill, 0, buffer.length, encoding);
      return buffer;
    }
    static allocUnsafe(size) { return new Buffer(checkedSize(size)); }
    static allocUnsafeSlow(size) { return new Buffer(checkedSize(size)); }
    static isBuffer(value) { return value instanceof Buffer; }
    static isEncoding(encoding) {
      return typeof encoding === "string" &&
        /^(utf-?8|hex|base64|base64url|latin1|binary|ascii|utf-?16le|ucs-?2)$/i.test(encoding);
    }
    static byteLength(value, encoding) {
      if (typeof value !== "string") return value.byteLength;
      return host.encode(value, normal(encoding)).byteLength;
    }
    static concat(list, total) {
      if (!Array.isArray(list)) throw invalid("list", "an instance of Array", list);
      if (total === undefined) total = list.reduce((sum, item) => sum + item.length, 0);
      const out = Buffer.alloc(total);
      let at = 0;
      for (const item of list) {
        if (at >= total) break;
        const part = item.length > total - at ? item.subarray(0, total - at) : item;
        out.set(part, at);
        at += part.length;
      }
      return out;
    }
    static compare(a, b) { return a.compare(b); }

    toString(encoding, start, end) {
      start = start === undefined ? 0 : Math.max(0, start | 0);
      end = end === undefined ? this.length : Math.min(this.length, end | 0);
      if (end <= start) return "";
      return host.decode(this.subarray(start, end), normal(encoding));
    }
    toJSON() { return { type: "Buffer", data: Array.from(this) }; }
    equals(other) { return this.compare(other) === 0; }
    compare(other) {
      const n = Math.min(this.length, other.length);
      for (let i = 0; i < n; i++) if (this[i] !== other[i]) return this[i] < other[i] ? -1 : 1;
      return this.length === other.length ? 0 : this.length < other.length ? -1 : 1;
    }
    // A view on the same memory, as Node's slice is.
    slice(start, end) { return this.subarray(start, end); }
    subarray(start, end) {
      const view = Uint8Array.prototype.subarray.call(this, start, end);
      return new Buffer(view.buffer, view.byteOffset, view.length);
    }
    write(text, offset, length, encoding) {
      if (typeof offset === "string") { encoding = offset; offset = 0; length = undefined; }
      else if (typeof length === "string") { encoding = length; length = undefined; }
      offset = offset === undefined ? 0 : offset | 0;
      const bytes = new Uint8Array(host.encode(String(text), normal(encoding)));
      const n = Math.min(bytes.length, this.length - offset, length === undefined ? Infinity : length);
      this.set(bytes.subarray(0, n), offset);
      return n;
    }
    fill(value, offset, end, encoding) {
      if (typeof offset === "string") { encoding = offset; offset = 0; end = this.length; }
      offset = offset === undefined ? 0 : offset;
      end = end === undefined ? this.length : end;
      if (typeof value === "number") return Uint8Array.prototype.fill.call(this, value & 255, offset, end);
      const bytes = typeof value === "string" ? new Uint8Array(host.encode(value, normal(encoding))) : value;
      if (bytes.length === 0) return Uint8Array.prototype.fill.call(this, 0, offset, end);
      for (let i = offset, j = 0; i < end; i++, j = (j + 1) % bytes.length) this[i] = bytes[j];
      return this;
    }
    copy(target, targetStart = 0, sourceStart = 0, sourceEnd = this.length) {
      const part = this.subarray(sourceStart, Math.min(sourceEnd, sourceStart + target.length - targetStart));
      target.set(part, targetStart);
      return part.length;
    }
    indexOf(value, from = 0, encoding) {
      const needle = typeof value === "number" ? [value & 255] : typeof value === "string" ? Buffer.from(value, encoding) : value;
      if (from < 0) from = Math.max(0, this.length + from);
      outer: for (let i = from; i <= this.length - needle.length; i++) {
        for (let j = 0; j < needle.length; j++) if (this[i + j] !== needle[j]) continue outer;
        return i;
      }
      return -1;
    }
    includes(value, from, encoding) { return this.indexOf(value, from, encoding) !== -1; }
    readUInt8(at = 0) { return this[check(this, at, 1)]; }
    readInt8(at = 0) { return (this[check(this, at, 1)] << 24) >> 24; }
    writeUInt8(value, at = 0) { this[check(this, at, 1)] = value; return at + 1; }
    writeInt8(value, at = 0) { this[check(this, at, 1)] = value; return at + 1; }
  }
  // The multi-byte readers and writers, little- and big-endian, on a DataView.
  const fixed = [["UInt16", "Uint16", 2], ["Int16", "Int16", 2], ["UInt32", "Uint32", 4], ["Int32", "Int32", 4],
    ["Float", "Float32", 4], ["Double", "Float64", 8], ["BigUInt64", "BigUint64", 8], ["BigInt64", "BigInt64", 8]];
  for (const [name, view, size] of fixed) {
    for (const [suffix, little] of [["LE", true], ["BE", false]]) {
      Buffer.prototype["read" + name + suffix] = function (at = 0) {
        return new DataView(this.buffer, this.byteOffset, this.length)["get" + view](check(this, at, size), little);
      };
      Buffer.prototype["write" + name + suffix] = function (value, at = 0) {
        new DataView(this.buffer, this.byteOffset, this.length)["set" + view](check(this, at, size), value, little);
        return at + size;
      };
    }
  }
  for (const name of ["UInt8", "UInt16LE", "UInt16BE", "UInt32LE", "UInt32BE", "BigUInt64LE", "BigUInt64BE"]) {
    Buffer.prototype["read" + name.replace("UInt", "Uint")] = Buffer.prototype["read" + name];
    Buffer.prototype["write" + name.replace("UInt", "Uint")] = Buffer.prototype["write" + name];
  }

  function check(buffer, at, size) {
    if (buffer.length < size) {
      const error = new RangeError("Attempt to access memory outside buffer bounds");
      error.code = "ERR_BUFFER_OUT_OF_BOUNDS";
      throw error;
    }
    if (!Number.isInteger(at) || at < 0 || at + size > buffer.length) {
      const error = new RangeError('The value of "offset" is out of range. It must be >= 0 and <= ' +
        (buffer.length - size) + ". Received " + at);
      error.code = "ERR_OUT_OF_RANGE";
      throw error;
    }
    return at;
  }

  const MAX_LENGTH = 2 ** 31 - 1;
  function checkedSize(size) {
    if (typeof size !== "number") throw invalid("size", "of type number", size);
    if (!(size >= 0 && size <= MAX_LENGTH)) {
      const error = new RangeError('The value of "size" is out of range. It must be >= 0 && <= ' + MAX_LENGTH +
        ". Received " + size);
      error.code = "ERR_OUT_OF_RANGE";
      throw error;
    }
    return size;
  }

  function fromBytes(arrayBuffer) { return new Buffer(arrayBuffer, 0, arrayBuffer.byteLength); }

  // Decodes a stream of chunks without splitting a character between them.
  class StringDecoder {
    constructor(encoding) { this.encoding = normal(encoding).toLowerCase().replace("-", ""); this.rest = new Uint8Array(0); }
    write(chunk) {
      const bytes = new Uint8Array(this.rest.length + chunk.length);
      bytes.set(this.rest);
      bytes.set(chunk, this.rest.length);
      const keep = this.pending(bytes);
      this.rest = bytes.slice(bytes.length - keep);
      return host.decode(bytes.subarray(0, bytes.length - keep), this.encoding);
    }
    end(chunk) {
      const text = chunk ? this.write(chunk) : "";
      const rest = this.rest.length ? host.decode(this.rest, this.encoding) : "";
      this.rest = new Uint8Array(0);
      return text + rest;
    }
    // Bytes at the end that start a character not yet complete.
    pending(bytes) {
      if (this.encoding === "utf16le" || this.encoding === "ucs2") return bytes.length % 2;
      if (this.encoding === "base64") return bytes.length % 3;
      if (this.encoding !== "utf8") return 0;
      for (let back = 1; back <= Math.min(3, bytes.length); back++) {
        const byte = bytes[bytes.length - back];
        if ((byte & 0xc0) === 0x80) continue;
        const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
        return need > back ? back : 0;
      }
      return 0;
    }
  }

  // Blob and File: bytes with a type, read back whole.
  const partBytes = (part) => part instanceof Blob ? part._bytes
    : typeof part === "string" ? Buffer.from(part)
      : part instanceof ArrayBuffer ? new Uint8Array(part)
        : ArrayBuffer.isView(part) ? new Uint8Array(part.buffer, part.byteOffset, part.byteLength) : Buffer.from(String(part));
  class Blob {
    constructor(parts = [], options = {}) {
      const bytes = Buffer.concat(Array.from(parts, partBytes));
      Object.defineProperty(this, "_bytes", { value: new Uint8Array(bytes) });
      this.type = options.type ? String(options.type).toLowerCase() : "";
    }
    get size() { return this._bytes.length; }
    async arrayBuffer() { return this._bytes.slice().buffer; }
    async bytes() { return this._bytes.slice(); }
    async text() { return host.decode(this._bytes, "utf8"); }
    slice(start, end, type) { return new Blob([this._bytes.slice(start, end)], { type }); }
  }
  class File extends Blob {
    constructor(parts, name, options = {}) {
      super(parts, options);
      this.name = String(name);
      this.lastModified = options.lastModified === undefined ? Date.now() : Number(options.lastModified);
    }
  }
  const atob = (text) => {
    const clean = String(text).replace(/[\t\n\f\r ]/g, "");
    if (clean.length % 4 === 1 || /[^A-Za-z0-9+/=]/.test(clean)) {
      throw Object.assign(new Error("The string to be decoded is not correctly encoded."), { name: "InvalidCharacterError", code: 5 });
    }
    return Buffer.from(clean, "base64").toString("latin1");
  };
  const btoa = (text) => {
    text = String(text);
    if (/[^\u0000-\u00ff]/.test(text)) throw Object.assign(new Error("Invalid character"), { name: "InvalidCharacterError", code: 5 });
    return Buffer.from(text, "latin1").toString("base64");
  };
  const isUtf8 = (input) => {
    const bytes = input instanceof ArrayBuffer ? new Uint8Array(input) : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    for (let i = 0; i < bytes.length;) {
      const b = bytes[i];
      const n = b < 0x80 ? 0 : b >= 0xc2 && b < 0xe0 ? 1 : b >= 0xe0 && b < 0xf0 ? 2 : b >= 0xf0 && b < 0xf5 ? 3 : -1;
      if (n < 0 || i + n >= bytes.length + (n ? 0 : 1)) return false;
      for (let k = 1; k <= n; k++) if ((bytes[i + k] & 0xc0) !== 0x80) return false;
      const c = bytes[i + 1];
      if ((b === 0xe0 && c < 0xa0) || (b === 0xed && c > 0x9f) || (b === 0xf0 && c < 0x90) || (b === 0xf4 && c > 0x8f)) return false;
      i += n + 1;
    }
    return true;
  };
  const isAscii = (input) => {
    const bytes = input instanceof ArrayBuffer ? new Uint8Array(input) : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    return bytes.every((b) => b < 0x80);
  };
  const STRING_MAX = (1 << 29) - 24;

  Object.assign(globalThis, { Buffer, Blob, File, atob, btoa });
  host.modules = {
    buffer: {
      Buffer, Blob, File, atob, btoa, isUtf8, isAscii, SlowBuffer: Buffer, INSPECT_MAX_BYTES: 50,
      constants: { MAX_LENGTH, MAX_STRING_LENGTH: STRING_MAX }, kMaxLength: MAX_LENGTH, kStringMaxLength: STRING_MAX,
    },
    string_decoder: { StringDecoder },
  };
})(__host);
