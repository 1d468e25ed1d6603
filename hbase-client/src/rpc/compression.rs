//! Cell-block compression with Hadoop's block framing, as HBase's `SnappyCodec` expects:
//! for each block, `u32 raw length`, then chunks of `u32 compressed length | raw snappy bytes`
//! until the block's raw bytes are covered. All integers are big-endian.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{Error, Result};

/// Compression of cell blocks on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CellBlockCompression {
    /// Cell blocks travel as they are (the default).
    #[default]
    None,
    /// Snappy, as `org.apache.hadoop.io.compress.SnappyCodec`.
    Snappy,
}

impl CellBlockCompression {
    /// The Hadoop codec class named in the connection header.
    pub(crate) fn codec_class(self) -> Option<&'static str> {
        match self {
            CellBlockCompression::None => None,
            CellBlockCompression::Snappy => Some("org.apache.hadoop.io.compress.SnappyCodec"),
        }
    }
}

/// Hadoop's snappy buffer (256 KiB) less its worst-case expansion, as its stream writes it.
const CHUNK: usize = 256 * 1024 * 5 / 6 - 32;
/// Decompressed cell blocks larger than this are taken as corrupt.
const MAX_RAW: usize = 512 * 1024 * 1024;

/// Compresses a cell block.
pub fn compress_snappy(raw: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = snap::raw::Encoder::new();
    let mut out = Vec::with_capacity(raw.len() / 2 + 16);
    for block in raw.chunks(CHUNK) {
        let compressed = encoder
            .compress_vec(block)
            .map_err(|e| Error::InvalidInput(format!("snappy compression failed: {e}")))?;
        out.put_u32(block.len() as u32);
        out.put_u32(compressed.len() as u32);
        out.extend_from_slice(&compressed);
    }
    Ok(out)
}

/// Decompresses a cell block; every length is checked against the input.
pub fn decompress_snappy(mut input: &[u8]) -> Result<Bytes> {
    let bad = |what: String| Error::Protocol(format!("bad snappy cell block: {what}"));
    let mut decoder = snap::raw::Decoder::new();
    let mut out = BytesMut::new();
    let read_u32 = |input: &mut &[u8]| -> Result<usize> {
        if input.len() < 4 {
            return Err(Error::Protocol(
                "bad snappy cell block: truncated length".into(),
            ));
        }
        let n = u32::from_be_bytes([input[0], input[1], input[2], input[3]]) as usize;
        *input = &input[4..];
        Ok(n)
    };
    while !input.is_empty() {
        let raw_len = read_u32(&mut input)?;
        if out.len() + raw_len > MAX_RAW {
            return Err(bad(format!("{raw_len} raw bytes announced")));
        }
        let block_end = out.len() + raw_len;
        while out.len() < block_end {
            let len = read_u32(&mut input)?;
            if len > input.len() {
                return Err(bad(format!("chunk of {len} bytes, {} left", input.len())));
            }
            let (chunk, rest) = input.split_at(len);
            input = rest;
            let n = snap::raw::decompress_len(chunk).map_err(|e| bad(e.to_string()))?;
            if out.len() + n > block_end {
                return Err(bad("chunk larger than its block".into()));
            }
            let start = out.len();
            out.resize(start + n, 0);
            decoder
                .decompress(chunk, &mut out[start..])
                .map_err(|e| bad(e.to_string()))?;
        }
    }
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_across_chunks() {
        let raw: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
        let c = compress_snappy(&raw).unwrap();
        assert!(c.len() < raw.len());
        // Three blocks: two full chunks and the rest.
        assert_eq!(
            u32::from_be_bytes(c[0..4].try_into().unwrap()) as usize,
            CHUNK
        );
        assert_eq!(&decompress_snappy(&c).unwrap()[..], &raw[..]);
        assert!(decompress_snappy(&[]).unwrap().is_empty());
    }

    #[test]
    fn corrupt_input_is_an_error() {
        let c = compress_snappy(b"hello hello hello hello").unwrap();
        for cut in 1..c.len() {
            assert!(decompress_snappy(&c[..cut]).is_err(), "cut at {cut}");
        }
        assert!(decompress_snappy(&[0xff, 0xff, 0xff, 0xff]).is_err());
    }

    proptest::proptest! {
        #[test]
        fn decompress_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = decompress_snappy(&data);
        }
    }
}
