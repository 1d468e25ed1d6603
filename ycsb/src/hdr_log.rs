//! HdrHistogram interval logs (`<OP>.hdr`, `hdrhistogram.fileoutput`) as YCSB 0.17.0 writes
//! them with the HdrHistogram it ships (2.1.4), so that its tools (HistogramLogReader,
//! HistogramLogProcessor, of that version or later) read ours, and `ycsb merge` reads its:
//!
//! ```text
//! #[Logging for: READ]
//! #[Histogram log format version 1.1]
//! #[StartTime: 1796607263.475 (seconds since epoch), Mon Dec 07 01:34:23 UTC 2026]
//! "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//! 0.043,0.050,0.000,HISTggAAADZ42pNpmdzI...
//! ```
//!
//! Interval times are seconds after StartTime (no BaseTime line), Interval_Max is the
//! interval's largest latency (µs) divided by 1,000,000, and each histogram is in
//! HdrHistogram's V1 compressed encoding (cookie `0x1c849382`: 8-byte counts, zlib), the only
//! one 2.1.4 decodes; the `hdrhistogram` crate writes and reads only the later V2 encoding,
//! which 2.1.4 rejects ("The buffer does not contain a compressed Histogram"). Reading takes
//! both (logs of earlier `ycsb` versions are V2; the crate decodes those, once [`decode`] has
//! checked the header against the bytes the line holds). The date of StartTime is in UTC, as
//! our status lines are (Java prints the JVM's zone); tools read only the number.
//!
//! Newer HdrHistogram readers (2.1.12, 2.2.2) read these logs as 2.1.4 does, bucket for
//! bucket (tests/ycsb_hdr.rs); their percentiles may be one rank higher than YCSB's report,
//! as 2.1.10 changed getValueAtPercentile's rank from round-to-nearest to round-up.

use std::io::{Read, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use crate::series::LoggedInterval;

/// `compressedEncodingCookieBase` (V1) with the word size (8) in bits 4..8.
const V1_COMPRESSED_COOKIE_BASE: u32 = 0x1c84_9302;
/// `encodingCookieBase` (V1).
const V1_COOKIE_BASE: u32 = 0x1c84_9301;
/// The V1 header: cookie, payload length, normalizing index offset, significant digits (4
/// bytes each), lowest discernible and highest trackable value (8 each), and the
/// integer-to-double conversion ratio (a double).
const V1_HEADER_LEN: usize = 40;
const WORD: u32 = 8;
/// `V2EncodingCookieBase` with the word-size bits the `hdrhistogram` crate sets (0x10).
const V2_COOKIE: u32 = 0x1c84_9313;
/// `V2CompressedEncodingCookieBase`, likewise.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// The V2 header: laid out as V1's.
const V2_HEADER_LEN: usize = 40;
/// A V2 count (or run of zeros) is a ZigZag LEB128 varint of at most 9 bytes.
const V2_MAX_BYTES_PER_COUNT: usize = 9;

/// HdrHistogram's bucket layout (the counts array's indexes), as `AbstractHistogram` computes
/// it from the lowest discernible value and the significant digits.
struct Layout {
    unit_magnitude: u32,
    sub_bucket_half_count_magnitude: u32,
    sub_bucket_half_count: u64,
    sub_bucket_mask: u64,
}

impl Layout {
    fn new(lowest: u64, sigfig: u32) -> Result<Layout, String> {
        if lowest < 1 || sigfig > 5 {
            return Err(format!(
                "lowest value {lowest}, {sigfig} significant digits: not a histogram"
            ));
        }
        let unit_magnitude = 63 - lowest.leading_zeros();
        let largest_single_unit = 2 * 10u64.pow(sigfig);
        // ceil(log2(largest_single_unit))
        let sub_bucket_count_magnitude = 64 - (largest_single_unit - 1).leading_zeros();
        let sub_bucket_half_count_magnitude = sub_bucket_count_magnitude.max(1) - 1;
        let sub_bucket_count = 1u64 << (sub_bucket_half_count_magnitude + 1);
        if unit_magnitude + sub_bucket_half_count_magnitude > 61 {
            return Err(format!("lowest value {lowest} is too large"));
        }
        Ok(Layout {
            unit_magnitude,
            sub_bucket_half_count_magnitude,
            sub_bucket_half_count: sub_bucket_count / 2,
            sub_bucket_mask: (sub_bucket_count - 1) << unit_magnitude,
        })
    }

    /// `countsArrayIndex(value)`.
    fn index_of(&self, value: u64) -> usize {
        let base = 64 - self.unit_magnitude - self.sub_bucket_half_count_magnitude - 1;
        let bucket = base - (value | self.sub_bucket_mask).leading_zeros();
        let sub_bucket = value >> (bucket + self.unit_magnitude);
        let bucket_base = ((bucket + 1) as u64) << self.sub_bucket_half_count_magnitude;
        (bucket_base + sub_bucket - self.sub_bucket_half_count) as usize
    }

    /// `valueFromIndex(index)`.
    fn value_at(&self, index: usize) -> u64 {
        let index = index as u64;
        let mut bucket = (index >> self.sub_bucket_half_count_magnitude) as i64 - 1;
        let mut sub_bucket =
            (index & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count;
        if bucket < 0 {
            sub_bucket -= self.sub_bucket_half_count;
            bucket = 0;
        }
        // Indexes are checked against the histogram's range first (`decode`), so the shift
        // stays below 64; a value past it saturates rather than wraps.
        sub_bucket
            .checked_shl(bucket as u32 + self.unit_magnitude)
            .filter(|v| v >> (bucket as u32 + self.unit_magnitude) == sub_bucket)
            .unwrap_or(u64::MAX)
    }
}

/// `h` in HdrHistogram's V1 compressed encoding, as 2.1.4's `encodeIntoCompressedByteBuffer`
/// lays it out: the counts up to the max's index, 8 bytes each, big-endian, zlib-compressed.
pub fn encode_v1(h: &Histogram<u64>) -> Vec<u8> {
    let layout = Layout::new(h.low(), h.sigfig() as u32).expect("a valid histogram");
    let relevant = layout.index_of(h.max()) + 1;
    let mut raw = Vec::with_capacity(V1_HEADER_LEN + relevant * WORD as usize);
    raw.extend((V1_COOKIE_BASE | (WORD << 4)).to_be_bytes());
    raw.extend((relevant as u32 * WORD).to_be_bytes());
    raw.extend(0u32.to_be_bytes()); // normalizing index offset: never shifted
    raw.extend((h.sigfig() as u32).to_be_bytes());
    raw.extend(h.low().to_be_bytes());
    // The decoder sizes its counts from this: it must reach the max.
    raw.extend(h.high().max(h.max()).max(2 * h.low()).to_be_bytes());
    raw.extend(1.0f64.to_be_bytes());
    for i in 0..relevant {
        raw.extend(h.count_at(layout.value_at(i)).to_be_bytes());
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&raw).expect("writes to memory");
    let compressed = z.finish().expect("writes to memory");
    let mut out = Vec::with_capacity(8 + compressed.len());
    out.extend((V1_COMPRESSED_COOKIE_BASE | (WORD << 4)).to_be_bytes());
    out.extend((compressed.len() as u32).to_be_bytes());
    out.extend(compressed);
    out
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Decodes an interval's histogram: HdrHistogram's V1 compressed encoding (what YCSB 0.17.0's
/// HdrHistogram writes, and we do) or V2 (the `hdrhistogram` crate's, earlier `ycsb`
/// versions').
pub fn decode(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    if bytes.len() < 8 {
        return Err("too short for a histogram".into());
    }
    let cookie = be_u32(bytes, 0);
    if cookie & !0xf0 != V1_COMPRESSED_COOKIE_BASE {
        return decode_v2(bytes, cookie);
    }
    let word = ((cookie & 0xf0) >> 4) as usize;
    if !matches!(word, 2 | 4 | 8) {
        return Err(format!("word size {word} (cookie {cookie:#x})"));
    }
    let len = be_u32(bytes, 4) as usize;
    let compressed = bytes
        .get(8..8 + len)
        .ok_or("compressed length beyond the data")?;
    // The header first, then no more payload than the histogram's range has counts: a
    // damaged or crafted line must not inflate without bound, nor index past the range.
    let mut inflater = flate2::read::ZlibDecoder::new(compressed);
    let mut header = [0u8; V1_HEADER_LEN];
    inflater
        .read_exact(&mut header)
        .map_err(|e| format!("no V1 histogram inside the compressed one ({e})"))?;
    if be_u32(&header, 0) & !0xf0 != V1_COOKIE_BASE {
        return Err("no V1 histogram inside the compressed one".into());
    }
    let payload = be_u32(&header, 4) as usize;
    let offset = be_u32(&header, 8);
    let sigfig = be_u32(&header, 12);
    let lowest = be_u64(&header, 16);
    if offset != 0 {
        return Err(format!("a shifted histogram (normalizing offset {offset})"));
    }
    let layout = Layout::new(lowest, sigfig)?;
    // Not the header's highest value: an auto-resizing histogram (YCSB's) keeps its first
    // one there while its counts grow past it. Java's values are signed longs.
    let range = layout.index_of(i64::MAX as u64) + 1;
    if payload % word != 0 || payload / word > range {
        return Err(format!(
            "a payload of {payload} bytes: a histogram of {sigfig} significant digits from {lowest} has at most {range} counts of {word} bytes"
        ));
    }
    let mut counts = Vec::with_capacity(payload);
    inflater
        .take(payload as u64)
        .read_to_end(&mut counts)
        .map_err(|e| format!("inflate: {e}"))?;
    if counts.len() < payload {
        return Err("payload beyond the data".into());
    }
    // Sized by what is recorded, not by the header's range (which a bad line may make huge).
    let mut h = Histogram::<u64>::new_with_bounds(lowest, 2 * lowest, sigfig as u8)
        .map_err(|e| format!("{e:?}"))?;
    h.auto(true);
    for (i, c) in counts.chunks_exact(word).enumerate() {
        let n = match word {
            2 => u16::from_be_bytes([c[0], c[1]]) as i64,
            4 => i32::from_be_bytes(c.try_into().expect("4 bytes")) as i64,
            _ => i64::from_be_bytes(c.try_into().expect("8 bytes")),
        };
        if n < 0 {
            return Err(format!("negative count {n} at index {i}"));
        }
        if n > 0 {
            h.record_n(layout.value_at(i), n as u64)
                .map_err(|e| format!("{e:?}"))?;
        }
    }
    Ok(h)
}

/// Checks a V2 header (see [`V2_HEADER_LEN`]) and returns its payload length: no more than
/// a histogram of the header's range can take, each of its counts in the longest varint.
fn v2_payload(header: &[u8]) -> Result<usize, String> {
    let payload = be_u32(header, 4) as usize;
    let sigfig = be_u32(header, 12);
    let lowest = be_u64(header, 16);
    let highest = be_u64(header, 24);
    let layout = Layout::new(lowest, sigfig)?;
    if highest < lowest.saturating_mul(2) {
        return Err(format!(
            "highest value {highest} below twice the lowest, {lowest}: not a histogram"
        ));
    }
    let counts = layout.index_of(highest) + 1;
    if payload > counts * V2_MAX_BYTES_PER_COUNT {
        return Err(format!(
            "a payload of {payload} bytes: a histogram of {sigfig} significant digits from {lowest} to {highest} has at most {counts} counts, {} bytes",
            counts * V2_MAX_BYTES_PER_COUNT
        ));
    }
    Ok(payload)
}

/// Decodes a V2 histogram (compressed, as logs hold it, or not) with the `hdrhistogram`
/// crate, once its header has been checked: the crate sizes its buffer by the declared
/// payload length before reading any (a 64-byte line could make it zero 4 GiB), so the crate
/// gets a header whose payload the line holds, and no more than the header's range can
/// take. What it allocates then is the payload and a histogram of the header's range (at
/// most some 50 MB: 5 digits over all 64 bits), as a histogram of that range would take.
fn decode_v2(bytes: &[u8], cookie: u32) -> Result<Histogram<u64>, String> {
    let plain = match cookie {
        V2_COMPRESSED_COOKIE => {
            let len = be_u32(bytes, 4) as usize;
            let compressed = bytes
                .get(8..8 + len)
                .ok_or("compressed length beyond the data")?;
            let mut inflater = flate2::read::ZlibDecoder::new(compressed);
            let mut plain = vec![0u8; V2_HEADER_LEN];
            inflater
                .read_exact(&mut plain)
                .map_err(|e| format!("no V2 histogram inside the compressed one ({e})"))?;
            if be_u32(&plain, 0) != V2_COOKIE {
                return Err("no V2 histogram inside the compressed one".into());
            }
            let payload = v2_payload(&plain)?;
            // Grown as the bytes come: the line may hold less than its header says.
            inflater
                .take(payload as u64)
                .read_to_end(&mut plain)
                .map_err(|e| format!("inflate: {e}"))?;
            plain
        }
        V2_COOKIE => {
            let header = bytes
                .get(..V2_HEADER_LEN)
                .ok_or("too short for a V2 histogram")?;
            let payload = v2_payload(header)?;
            bytes[..bytes.len().min(V2_HEADER_LEN + payload)].to_vec()
        }
        _ => {
            return Err(format!(
                "not an HdrHistogram encoding this reads, V1 or V2 (cookie {cookie:#x})"
            ))
        }
    };
    if plain.len() < V2_HEADER_LEN + be_u32(&plain, 4) as usize {
        return Err("payload beyond the data".into());
    }
    Deserializer::new()
        .deserialize(&mut &plain[..])
        .map_err(|e| format!("{e:?} (cookie {cookie:#x})"))
}

/// Milliseconds as `%.3f` seconds.
fn seconds_3(ms: u128) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Writes `intervals` of operation `name` as YCSB 0.17.0 writes `<OP>.hdr` (see the module
/// docs), StartTime `start`.
pub fn write_log(
    out: &mut impl Write,
    name: &str,
    start: SystemTime,
    intervals: &[LoggedInterval],
) -> std::io::Result<()> {
    use base64::Engine;
    let start_ms = start
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    writeln!(out, "#[Logging for: {name}]")?;
    writeln!(out, "#[Histogram log format version 1.1]")?;
    writeln!(
        out,
        "#[StartTime: {} (seconds since epoch), {}]",
        seconds_3(start_ms),
        crate::util::java_date_utc(start)
    )?;
    writeln!(
        out,
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    )?;
    for i in intervals {
        // Java stamps each interval in whole milliseconds.
        let from = i.start.as_millis();
        let to = (i.start + i.duration).as_millis();
        // max / 1e6 as Java's %.3f rounds it (half up).
        let max = (i.histogram.max() as u128 + 500) / 1000;
        writeln!(
            out,
            "{},{},{},{}",
            seconds_3(from),
            seconds_3(to - from),
            seconds_3(max),
            base64::engine::general_purpose::STANDARD.encode(encode_v1(&i.histogram)),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_round_trips_and_keeps_every_bucket() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.auto(true);
        for v in [0, 1, 2, 999, 2047, 2048, 2049, 4100, 123_456, 9_999_999] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let back = decode(&encode_v1(&h)).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.max(), h.max());
        assert_eq!(back.min(), h.min());
        let a: Vec<_> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        let b: Vec<_> = back
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(a, b);
        let empty = Histogram::<u64>::new(3).unwrap();
        assert_eq!(decode(&encode_v1(&empty)).unwrap().len(), 0);
    }

    #[test]
    fn layout_is_hdrhistograms() {
        let l = Layout::new(1, 3).unwrap();
        for v in [0u64, 1, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 1 << 40] {
            let h = Histogram::<u64>::new_with_bounds(1, 1 << 41, 3).unwrap();
            assert_eq!(l.value_at(l.index_of(v)), h.lowest_equivalent(v), "{v}");
        }
    }

    #[test]
    fn a_v1_payload_of_hdrhistogram_2_1_4() {
        // An UPDATE interval of YCSB 0.17.0's UPDATE.hdr (BasicDB): HdrHistogram 2.1.4's
        // HistogramLogReader reads 255 values, min 0, max 472.
        use base64::Engine;
        let b = base64::engine::general_purpose::STANDARD
            .decode("HISTggAAADp42u3FsREAEBBFwX/kKtCL2szoQFPK0YAZgQvoQPA22dx6ldLQEX3zQ5m6Lb1MAAAAAAD8xzZ7PgS/")
            .unwrap();
        let h = decode(&b).unwrap();
        assert_eq!((h.len(), h.min(), h.max()), (255, 0, 472));
    }

    /// The header both encodings share: `cookie`, a payload of `payload` bytes, no
    /// normalizing offset, `sigfig` digits over `1..=highest`, conversion ratio 1.
    fn header(cookie: u32, payload: u32, sigfig: u32, highest: u64) -> Vec<u8> {
        let mut raw = Vec::new();
        raw.extend(cookie.to_be_bytes());
        raw.extend(payload.to_be_bytes());
        raw.extend(0u32.to_be_bytes());
        raw.extend(sigfig.to_be_bytes());
        raw.extend(1u64.to_be_bytes());
        raw.extend(highest.to_be_bytes());
        raw.extend(1.0f64.to_be_bytes());
        raw
    }

    /// `raw` zlib-compressed behind `cookie` and the compressed length.
    fn compressed(cookie: u32, raw: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(raw).unwrap();
        let compressed = z.finish().unwrap();
        let mut out = Vec::new();
        out.extend(cookie.to_be_bytes());
        out.extend((compressed.len() as u32).to_be_bytes());
        out.extend(compressed);
        out
    }

    /// A V1 line as a damaged or crafted log may hold: `counts` of `word` bytes after a header
    /// claiming `lowest`..`highest` at `sigfig` digits and a payload of `payload` bytes.
    fn crafted(word: u32, sigfig: u32, highest: u64, payload: u32, counts: &[u64]) -> Vec<u8> {
        let mut raw = header(V1_COOKIE_BASE | (word << 4), payload, sigfig, highest);
        for c in counts {
            raw.extend(&c.to_be_bytes()[8 - word as usize..]);
        }
        compressed(V1_COMPRESSED_COOKIE_BASE | (word << 4), &raw)
    }

    /// A V2 line (the `hdrhistogram` crate's encoding, earlier `ycsb` versions' logs) as a
    /// damaged or crafted log may hold: a header claiming `lowest`..`highest` at `sigfig`
    /// digits and a payload of `payload` bytes, then `body`; zlib-compressed unless `plain`.
    fn crafted_v2(sigfig: u32, highest: u64, payload: u32, body: &[u8], plain: bool) -> Vec<u8> {
        let mut raw = header(0x1c84_9313, payload, sigfig, highest);
        raw.extend(body);
        if plain {
            return raw;
        }
        compressed(0x1c84_9314, &raw)
    }

    /// A V2 line's header is checked before the `hdrhistogram` crate sees it: the crate sizes
    /// a buffer by the declared payload length alone (zero-filled, up to 4 GiB for a 64-byte
    /// line) and only then finds the bytes missing. Before, the first line below allocated
    /// and zeroed 4 GiB and failed with `IoError(... UnexpectedEof ...)`; the second, 1,000
    /// counts in a histogram of 0 digits from 1 to 2 (which has 3), read as an empty
    /// histogram.
    #[test]
    fn a_crafted_v2_line_is_refused_before_the_crate_sizes_anything() {
        for plain in [false, true] {
            let e = decode(&crafted_v2(3, 1 << 20, u32::MAX, &[2, 4, 6], plain)).unwrap_err();
            assert!(e.contains("a payload of 4294967295 bytes"), "{e}");
            let e = decode(&crafted_v2(0, 2, 1000, &[0; 1000], plain)).unwrap_err();
            assert!(e.contains("a payload of 1000 bytes"), "{e}");
            assert!(e.contains("at most 3 counts"), "{e}");
            // A payload the range allows but the line does not hold.
            let e = decode(&crafted_v2(3, 1 << 20, 4096, &[2, 4, 6], plain)).unwrap_err();
            assert!(e.contains("payload beyond the data"), "{e}");
            // A well-formed line still reads: counts 1, 2, 3 at values 0, 1, 2 (zig-zag).
            let h = decode(&crafted_v2(3, 1 << 20, 3, &[2, 4, 6], plain)).unwrap();
            assert_eq!((h.len(), h.min(), h.max()), (6, 0, 2));
        }
        // A compressed length beyond the line, and a cookie of no encoding.
        let mut line = crafted_v2(3, 1 << 20, 3, &[2, 4, 6], false);
        line[7] = line[7].wrapping_add(10);
        let e = decode(&line).unwrap_err();
        assert!(e.contains("compressed length beyond the data"), "{e}");
        let e = decode(&[0x1c, 0x84, 0x93, 0x99, 0, 0, 0, 0]).unwrap_err();
        assert!(e.contains("not an HdrHistogram encoding"), "{e}");
    }

    /// A line with more counts than a histogram can have is refused. Before, the 66th count of
    /// a 0-digit histogram shifted a value by 64 bits: a panic in a debug
    /// build ("attempt to shift left with overflow"), a wrong value in a release build. A
    /// header claiming a huge payload or range allocates nothing of that size.
    #[test]
    fn a_damaged_line_is_refused_not_misread() {
        let mut counts = vec![0u64; 66];
        counts[65] = 1;
        let e = decode(&crafted(2, 0, 2, 66 * 2, &counts)).unwrap_err();
        assert!(e.contains("at most 64 counts of 2 bytes"), "{e}");
        // A payload length beyond what the line holds.
        let e = decode(&crafted(8, 3, 1 << 20, 4096, &[1, 2, 3])).unwrap_err();
        assert!(e.contains("payload beyond the data"), "{e}");
        // The widest range the header can claim, with one count: read, sized by the count.
        let h = decode(&crafted(8, 5, u64::MAX, 8, &[7])).unwrap();
        assert_eq!((h.len(), h.max()), (7, 0));
        // A count that does not fit the word is not possible; a negative one is refused.
        let e = decode(&crafted(4, 3, 1 << 20, 4, &[u32::MAX as u64])).unwrap_err();
        assert!(e.contains("negative count"), "{e}");
    }
}
