//! `require("zlib")`'s codecs: gzip, deflate (zlib-wrapped and raw) and
//! brotli, on flate2 (zlib-rs) and the `brotli` crate. Whole buffers in,
//! whole buffers out; what a run may get back is bounded (a small bomb
//! must not fill the worker's memory outside the engine's cap), and bad
//! input fails with zlib's own words and Node's error codes.

use std::io::{Read, Write};

use rquickjs::{ArrayBuffer, Ctx, Function, Object, TypedArray};

use flate2::read::{DeflateDecoder, GzDecoder, MultiGzDecoder, ZlibDecoder};
use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
use flate2::{Compression, GzBuilder};

/// Why a codec failed: Node's `code` and message.
#[derive(Debug, PartialEq, Eq)]
pub struct ZlibError {
    pub code: &'static str,
    pub message: String,
}

/// Runs `op` (a Node method's name without `Sync`) over `data`; `level`
/// is zlib's 0–9 (or -1, its default) or brotli's quality 0–11.
pub fn run(op: &str, data: &[u8], level: i32, limit: usize) -> Result<Vec<u8>, ZlibError> {
    let compression = || Compression::new(if level < 0 { 6 } else { level.min(9) as u32 });
    match op {
        // Node's gzip header: no name, no time, the OS byte Unix (3).
        "gzip" => encode(
            GzBuilder::new()
                .operating_system(3)
                .write(Vec::new(), compression()),
            data,
        ),
        "deflate" => encode(ZlibEncoder::new(Vec::new(), compression()), data),
        "deflateRaw" => encode(DeflateEncoder::new(Vec::new(), compression()), data),
        "gunzip" if !data.starts_with(&[0x1f, 0x8b]) => Err(bad_header()),
        "gunzip" => decode(MultiGzDecoder::new(data), limit),
        "inflate" | "unzip" if !zlib_header(data) && !data.starts_with(&[0x1f, 0x8b]) => {
            Err(bad_header())
        }
        "inflate" => decode(ZlibDecoder::new(data), limit),
        "inflateRaw" => decode(DeflateDecoder::new(data), limit),
        // gzip or zlib, by the first two bytes.
        "unzip" if data.starts_with(&[0x1f, 0x8b]) => decode(GzDecoder::new(data), limit),
        "unzip" => decode(ZlibDecoder::new(data), limit),
        "brotliCompress" => {
            let quality = if level < 0 { 11 } else { level.min(11) };
            let mut out = Vec::new();
            let params = brotli::enc::BrotliEncoderParams {
                quality,
                ..Default::default()
            };
            brotli::BrotliCompress(&mut &data[..], &mut out, &params).map_err(io_error)?;
            Ok(out)
        }
        "brotliDecompress" => {
            decode(brotli::Decompressor::new(data, 4096), limit).map_err(|_| ZlibError {
                code: "ERR__ERROR_FORMAT_PADDING_1",
                message: "Decompression failed".into(),
            })
        }
        _ => Err(ZlibError {
            code: "ERR_INVALID_ARG_VALUE",
            message: format!("zlib has no {op}"),
        }),
    }
}

/// Whether `data` starts as zlib's wrapping does (method 8, a check
/// that divides by 31), as zlib itself checks before inflating.
fn zlib_header(data: &[u8]) -> bool {
    match data {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) * 256 + u16::from(*flg)) % 31 == 0,
        _ => true,
    }
}

fn bad_header() -> ZlibError {
    ZlibError {
        code: "Z_DATA_ERROR",
        message: "incorrect header check".into(),
    }
}

fn encode<W: Write + Finish>(mut encoder: W, data: &[u8]) -> Result<Vec<u8>, ZlibError> {
    encoder.write_all(data).map_err(io_error)?;
    encoder.done().map_err(io_error)
}

/// What an encoder wrote, once it is finished.
trait Finish {
    fn done(self) -> std::io::Result<Vec<u8>>;
}

impl Finish for GzEncoder<Vec<u8>> {
    fn done(self) -> std::io::Result<Vec<u8>> {
        self.finish()
    }
}

impl Finish for ZlibEncoder<Vec<u8>> {
    fn done(self) -> std::io::Result<Vec<u8>> {
        self.finish()
    }
}

impl Finish for DeflateEncoder<Vec<u8>> {
    fn done(self) -> std::io::Result<Vec<u8>> {
        self.finish()
    }
}

/// Reads all `decoder` gives, up to `limit` bytes (Node's
/// `maxOutputLength`): past it, Node's ERR_BUFFER_TOO_LARGE.
fn decode<R: Read>(decoder: R, limit: usize) -> Result<Vec<u8>, ZlibError> {
    let mut out = Vec::new();
    let read = decoder
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(io_error)?;
    if read > limit {
        return Err(ZlibError {
            code: "ERR_BUFFER_TOO_LARGE",
            message: format!("Cannot create a Buffer larger than {limit} bytes"),
        });
    }
    Ok(out)
}

/// zlib's messages as Node passes them on.
fn io_error(error: std::io::Error) -> ZlibError {
    if error.kind() == std::io::ErrorKind::UnexpectedEof {
        return ZlibError {
            code: "Z_BUF_ERROR",
            message: "unexpected end of file".into(),
        };
    }
    let text = error.to_string();
    let message = if text.contains("header") {
        "incorrect header check".to_string()
    } else {
        text.strip_prefix("deflate decompression error: ")
            .unwrap_or(&text)
            .to_string()
    };
    ZlibError {
        code: "Z_DATA_ERROR",
        message,
    }
}

/// `__host.zlib(op, bytes, level, maxOutputLength)` and `__host.crc32`,
/// for the prelude's `zlib` (zlib.js); what comes out is bounded by the
/// engine's memory cap, `limit`.
pub fn install<'js>(ctx: &Ctx<'js>, limit: usize) -> rquickjs::Result<()> {
    let object: Object = ctx.globals().get("__host")?;
    object.set(
        "zlib",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  op: String,
                  data: TypedArray<'js, u8>,
                  level: i32,
                  max: f64|
                  -> rquickjs::Result<ArrayBuffer<'js>> {
                let limit = if max >= 0.0 {
                    limit.min(max as usize)
                } else {
                    limit
                };
                // SAFETY: no JavaScript runs while the slice is read.
                let data = unsafe { data.as_bytes() }.unwrap_or_default();
                match run(&op, data, level, limit) {
                    Ok(out) => ArrayBuffer::new(ctx, out),
                    Err(error) => Err(super::thrown::coded(&ctx, error.code, &error.message)),
                }
            },
        )?,
    )?;
    object.set(
        "crc32",
        Function::new(ctx.clone(), |data: TypedArray<'js, u8>, start: u32| {
            // SAFETY: no JavaScript runs while the slice is read.
            crc32(unsafe { data.as_bytes() }.unwrap_or_default(), start)
        })?,
    )?;
    Ok(())
}

/// The CRC-32 of `data`, continuing from `start` (Node 20.15's `zlib.crc32`).
pub fn crc32(data: &[u8], start: u32) -> u32 {
    let mut value = !start;
    for &byte in data {
        value ^= byte as u32;
        for _ in 0..8 {
            value = if value & 1 != 0 {
                (value >> 1) ^ 0xEDB8_8320
            } else {
                value >> 1
            };
        }
    }
    !value
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 1 << 20;

    #[test]
    fn every_codec_round_trips() {
        let text = b"hello hello hello hello, zlib".repeat(20);
        for (encode, decode) in [
            ("gzip", "gunzip"),
            ("gzip", "unzip"),
            ("deflate", "inflate"),
            ("deflate", "unzip"),
            ("deflateRaw", "inflateRaw"),
            ("brotliCompress", "brotliDecompress"),
        ] {
            let packed = run(encode, &text, -1, LIMIT).unwrap();
            assert!(packed.len() < text.len(), "{encode}");
            assert_eq!(run(decode, &packed, -1, LIMIT).unwrap(), text, "{decode}");
        }
    }

    #[test]
    fn gzip_writes_nodes_header() {
        let packed = run("gzip", b"x", -1, LIMIT).unwrap();
        assert_eq!(&packed[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    }

    #[test]
    fn bad_input_cut_input_and_bombs_fail_as_node_says() {
        assert_eq!(
            run("inflate", b"not zlib at all", -1, LIMIT)
                .unwrap_err()
                .code,
            "Z_DATA_ERROR"
        );
        let packed = run("gzip", &[7u8; 10_000], -1, LIMIT).unwrap();
        let cut = run("gunzip", &packed[..packed.len() / 2], -1, LIMIT).unwrap_err();
        assert_eq!(cut.code, "Z_BUF_ERROR");
        let bomb = run("gzip", &vec![0u8; 4 << 20], 9, LIMIT).unwrap();
        assert_eq!(
            run("gunzip", &bomb, -1, LIMIT).unwrap_err().code,
            "ERR_BUFFER_TOO_LARGE"
        );
    }

    #[test]
    fn crc32_continues_from_a_value() {
        assert_eq!(crc32(b"hello", 0), 0x3610_a686);
        assert_eq!(crc32(b"lo", crc32(b"hel", 0)), crc32(b"hello", 0));
    }
}
