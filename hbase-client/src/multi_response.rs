//! A `MultiResponse` read in place. Its region results are found by walking the message's
//! bytes (every key and length is checked first, down to the actions' results), and each
//! action's `ResultOrException` is decoded only when its turn comes, on the stack.
//!
//! What it accepts is what prost's decoding of the whole message accepts, with two
//! differences that change no outcome: prost's limit on nesting (100 levels of groups) counts
//! anew at each level here, and the results of a region that failed as a whole are not
//! decoded (prost rejects the message if one of those is malformed).
//!
//! Decoded whole by prost, the answer to a request of thousands of mutations built a vector of
//! every action's result (112 bytes each, grown by doubling, so copied and reallocated as it
//! grew) only to read each once and free them all: the copies, the allocator's work (large
//! blocks make glibc consolidate its free lists) and the cache misses of reading the results
//! back cost more than decoding them.

use bytes::Bytes;
use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
use prost::Message;

use hbase_proto::{NameBytesPair, ResultOrException};

use crate::error::{Error, Result};

/// `MultiResponse.regionActionResult`.
const REGION_ACTION_RESULT: u32 = 1;
/// `RegionActionResult.resultOrException`.
const RESULT_OR_EXCEPTION: u32 = 1;
/// `RegionActionResult.exception`.
const REGION_EXCEPTION: u32 = 2;
/// `RegionActionResult.processed`.
const REGION_PROCESSED: u32 = 3;
/// `MultiResponse.processed`.
const PROCESSED: u32 = 2;
/// `MultiResponse.regionStatistics`.
const REGION_STATISTICS: u32 = 3;

fn bad(e: impl std::fmt::Display) -> Error {
    Error::Protocol(format!("bad response message: {e}"))
}

/// The next field of `buf`: its tag and, when length-delimited, its bytes (other fields are
/// skipped, checked as prost checks them, and give `None`).
fn next_field<'a>(buf: &mut &'a [u8]) -> Result<(u32, WireType, Option<&'a [u8]>)> {
    let (tag, wire_type) = decode_key(buf).map_err(bad)?;
    if wire_type != WireType::LengthDelimited {
        skip_field(wire_type, tag, buf, DecodeContext::default()).map_err(bad)?;
        return Ok((tag, wire_type, None));
    }
    let len = decode_varint(buf).map_err(bad)?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= buf.len())
        .ok_or_else(|| bad("a length runs past the message"))?;
    let (value, rest) = buf.split_at(len);
    *buf = rest;
    Ok((tag, wire_type, Some(value)))
}

/// A message field must be length-delimited (as prost requires of one it decodes).
fn message_field<'a>(
    tag: u32,
    wire_type: WireType,
    value: Option<&'a [u8]>,
    name: &str,
) -> Result<&'a [u8]> {
    value.ok_or_else(|| wrong_type(tag, wire_type, name))
}

/// A scalar field of the schema must be a varint (as prost requires of one it decodes).
fn varint_field(tag: u32, wire_type: WireType, name: &str) -> Result<()> {
    if wire_type == WireType::Varint {
        Ok(())
    } else {
        Err(wrong_type(tag, wire_type, name))
    }
}

fn wrong_type(tag: u32, wire_type: WireType, name: &str) -> Error {
    bad(format!("field {tag} ({name}) has wire type {wire_type:?}"))
}

/// One region's part of a `MultiResponse`.
pub(crate) struct RegionResult {
    /// Set when the whole region action failed.
    pub(crate) exception: Option<NameBytesPair>,
    /// The `RegionActionResult`'s bytes.
    bytes: Bytes,
}

/// The region results of a `MultiResponse`, in the server's order. The structure of the whole
/// message (every key and length down to each action's result) is checked here, so that a
/// malformed answer fails before any of its results is taken for an outcome.
pub(crate) fn region_results(message: &Bytes) -> Result<Vec<RegionResult>> {
    let mut out = Vec::new();
    let mut buf = &message[..];
    while !buf.is_empty() {
        let (tag, wire_type, value) = next_field(&mut buf)?;
        match tag {
            REGION_ACTION_RESULT => {}
            PROCESSED => {
                varint_field(tag, wire_type, "processed")?;
                continue;
            }
            REGION_STATISTICS => {
                // Not used, but checked as prost would decode it.
                let value = message_field(tag, wire_type, value, "regionStatistics")?;
                hbase_proto::MultiRegionLoadStats::decode(value).map_err(bad)?;
                continue;
            }
            _ => continue,
        }
        let region = message_field(tag, wire_type, value, "regionActionResult")?;
        let mut exception: Option<NameBytesPair> = None;
        let mut fields = region;
        while !fields.is_empty() {
            let (tag, wire_type, value) = next_field(&mut fields)?;
            match tag {
                RESULT_OR_EXCEPTION => {
                    message_field(tag, wire_type, value, "resultOrException")?;
                }
                REGION_EXCEPTION => {
                    let value = message_field(tag, wire_type, value, "exception")?;
                    // A repeated occurrence merges into the first, as prost's decoding does.
                    exception
                        .get_or_insert_with(NameBytesPair::default)
                        .merge(value)
                        .map_err(bad)?;
                }
                REGION_PROCESSED => varint_field(tag, wire_type, "processed")?,
                _ => {}
            }
        }
        out.push(RegionResult {
            exception,
            bytes: message.slice_ref(region),
        });
    }
    Ok(out)
}

/// One action's `ResultOrException`.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one at a time, on the stack; boxing would allocate per decoded answer"
)]
pub(crate) enum Answer {
    /// The answer to a put or delete as HBase writes it: the action's index and an empty
    /// result (`08 <index> 12 00`), read without prost (about 600 instructions less a
    /// buffered put, counting the decoding and the empty result made of it; callgrind).
    Empty(u32),
    /// Any other, decoded by prost.
    Decoded(ResultOrException),
}

#[cfg(test)]
impl Answer {
    /// The answer as prost decodes it.
    fn into_proto(self) -> ResultOrException {
        match self {
            Answer::Empty(index) => ResultOrException {
                index: Some(index),
                result: Some(hbase_proto::Result::default()),
                ..Default::default()
            },
            Answer::Decoded(roe) => roe,
        }
    }
}

impl RegionResult {
    /// Its actions' results in the server's order, each decoded when it is reached.
    pub(crate) fn results(&self) -> impl Iterator<Item = Result<Answer>> + '_ {
        let mut buf = &self.bytes[..];
        std::iter::from_fn(move || {
            while !buf.is_empty() {
                match next_field(&mut buf) {
                    Ok((RESULT_OR_EXCEPTION, _, Some(value))) => {
                        let answer = match empty_answer_index(value) {
                            Some(index) => Ok(Answer::Empty(index)),
                            None => ResultOrException::decode(value)
                                .map(Answer::Decoded)
                                .map_err(bad),
                        };
                        return Some(answer);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        buf = &[];
                        return Some(Err(e));
                    }
                }
            }
            None
        })
    }
}

/// `ResultOrException.index`, a varint, as its key's byte.
const INDEX_KEY: u8 = 0x08;
/// `ResultOrException.result`, length-delimited, as its key's byte.
const RESULT_KEY: u8 = 0x12;

/// The index of an [`Answer::Empty`]: `Some` only for exactly those bytes (with the index a
/// varint of any length that fits u32); any other shape is prost's to decode.
fn empty_answer_index(value: &[u8]) -> Option<u32> {
    let (&INDEX_KEY, mut rest) = value.split_first()? else {
        return None;
    };
    let index = decode_varint(&mut rest).ok()?;
    // An index past u32 is left to prost (which would truncate it).
    let index = u32::try_from(index).ok()?;
    (rest == [RESULT_KEY, 0]).then_some(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hbase_proto::{MultiResponse, RegionActionResult};
    use proptest::prelude::*;

    fn roe(index: u32, exception: Option<&str>) -> ResultOrException {
        ResultOrException {
            index: Some(index),
            // One in three empty, as HBase answers a put or delete.
            result: exception.is_none().then(|| hbase_proto::Result {
                associated_cell_count: Some(index as i32 % 3).filter(|&n| n > 0),
                ..Default::default()
            }),
            exception: exception.map(|name| NameBytesPair {
                name: name.into(),
                value: Some(Bytes::from_static(b"trace")),
            }),
            ..Default::default()
        }
    }

    /// What the walk reads, next to what prost decodes of the same bytes.
    fn walked(bytes: &Bytes) -> Result<Vec<(Option<NameBytesPair>, Vec<ResultOrException>)>> {
        region_results(bytes)?
            .into_iter()
            .map(|r| {
                Ok((
                    r.exception.clone(),
                    r.results()
                        .map(|a| a.map(Answer::into_proto))
                        .collect::<Result<Vec<_>>>()?,
                ))
            })
            .collect()
    }

    fn prost_view(m: &MultiResponse) -> Vec<(Option<NameBytesPair>, Vec<ResultOrException>)> {
        m.region_action_result
            .iter()
            .map(|r| (r.exception.clone(), r.result_or_exception.clone()))
            .collect()
    }

    #[test]
    fn reads_what_prost_decodes() {
        let m = MultiResponse {
            region_action_result: vec![
                RegionActionResult {
                    result_or_exception: vec![roe(0, None), roe(1, Some("E")), roe(2, None)],
                    exception: None,
                    processed: Some(true),
                },
                RegionActionResult {
                    result_or_exception: vec![],
                    exception: Some(NameBytesPair {
                        name: "org.apache.hadoop.hbase.NotServingRegionException".into(),
                        value: None,
                    }),
                    processed: None,
                },
                RegionActionResult::default(),
            ],
            ..Default::default()
        };
        let bytes = Bytes::from(m.encode_to_vec());
        assert_eq!(walked(&bytes).unwrap(), prost_view(&m));
    }

    #[test]
    fn a_mutations_answer_reads_as_prost_reads_it() {
        // HBase's shape (`08 <index> 12 00`, the fast path), a varint index written long, an
        // index past u32, and near misses that are prost's to decode.
        let roes: [&[u8]; 9] = [
            &[0x08, 0x00, 0x12, 0x00],
            &[0x08, 0xff, 0x03, 0x12, 0x00],
            &[0x08, 0x80, 0x80, 0x00, 0x12, 0x00],
            &[0x08, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x00],
            &[0x08, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x12, 0x00],
            &[0x08, 0x05, 0x12, 0x00, 0x12, 0x00],
            &[0x12, 0x00, 0x08, 0x05],
            &[0x08, 0x05, 0x12, 0x02, 0x10, 0x00],
            &[0x08, 0x05],
        ];
        for roe in roes {
            let mut message = vec![0x0a, roe.len() as u8 + 2, 0x0a, roe.len() as u8];
            message.extend_from_slice(roe);
            let message = Bytes::from(message);
            let m = MultiResponse::decode(message.clone()).unwrap();
            assert_eq!(walked(&message).unwrap(), prost_view(&m), "{roe:02x?}");
        }
        // Read without prost: HBase's shape only.
        assert_eq!(
            empty_answer_index(&[0x08, 0xff, 0x03, 0x12, 0x00]),
            Some(511)
        );
        assert_eq!(
            empty_answer_index(&[0x08, 0x80, 0x80, 0x00, 0x12, 0x00]),
            Some(0)
        );
        assert_eq!(
            empty_answer_index(&[0x08, 0x05, 0x12, 0x02, 0x10, 0x00]),
            None
        );
        assert_eq!(
            empty_answer_index(&[0x08, 0x05, 0x12, 0x00, 0x12, 0x00]),
            None
        );
    }

    #[test]
    fn a_truncated_message_fails_before_any_result_is_read() {
        let m = MultiResponse {
            region_action_result: vec![RegionActionResult {
                result_or_exception: (0..50).map(|i| roe(i, None)).collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let full = m.encode_to_vec();
        for cut in 1..full.len() {
            let bytes = Bytes::copy_from_slice(&full[..cut]);
            assert!(
                region_results(&bytes).is_err(),
                "cut at {cut} of {}",
                full.len()
            );
            assert!(MultiResponse::decode(bytes).is_err());
        }
    }

    #[test]
    fn a_result_that_cannot_be_decoded_is_an_error_where_it_is_reached() {
        // Well-formed around it: a result whose `index` (a varint) comes length-delimited.
        let good = roe(0, None).encode_to_vec();
        let bad_roe = [0x0a, 0x01, 0x07];
        let mut region = Vec::new();
        for r in [&good[..], &bad_roe[..], &good[..]] {
            region.push(0x0a);
            region.push(r.len() as u8);
            region.extend_from_slice(r);
        }
        let mut message = vec![0x0a, region.len() as u8];
        message.extend_from_slice(&region);
        let message = Bytes::from(message);
        assert!(MultiResponse::decode(message.clone()).is_err());
        let regions = region_results(&message).unwrap();
        let mut results = regions[0].results();
        assert_eq!(results.next().unwrap().unwrap().into_proto(), roe(0, None));
        let e = results.next().unwrap().unwrap_err();
        assert!(matches!(e, Error::Protocol(_)), "{e:?}");
    }

    #[test]
    fn the_fields_besides_the_results_read_as_prost_reads_them() {
        // `processed` at both levels, `regionStatistics`, an unknown field of each wire type
        // (a group among them) and a region exception given twice (merged, as prost merges).
        let region = RegionActionResult {
            result_or_exception: vec![roe(4, None)],
            exception: Some(NameBytesPair {
                name: "first".into(),
                value: None,
            }),
            processed: Some(true),
        };
        let mut region_bytes = region.encode_to_vec();
        let again = NameBytesPair {
            name: String::new(),
            value: Some(Bytes::from_static(b"v")),
        }
        .encode_to_vec();
        region_bytes.extend_from_slice(&[0x12, again.len() as u8]);
        region_bytes.extend_from_slice(&again);
        // Unknown fields 9 (varint), 10 (fixed64), 11 (group, empty), 12 (fixed32).
        region_bytes.extend_from_slice(&[0x48, 0x01, 0x51, 0, 0, 0, 0, 0, 0, 0, 0, 0x5b, 0x5c]);
        region_bytes.extend_from_slice(&[0x65, 0, 0, 0, 0]);
        let mut message = vec![0x0a, region_bytes.len() as u8];
        message.extend_from_slice(&region_bytes);
        message.extend_from_slice(&[0x10, 0x01]);
        let stats = hbase_proto::MultiRegionLoadStats::default().encode_to_vec();
        message.extend_from_slice(&[0x1a, stats.len() as u8]);
        message.extend_from_slice(&stats);
        message.extend_from_slice(&[0x7a, 0x02, 0xff, 0xff]);
        let message = Bytes::from(message);
        let m = MultiResponse::decode(message.clone()).unwrap();
        assert_eq!(walked(&message).unwrap(), prost_view(&m));
        // Merged: the second occurrence's fields (its empty name, written as proto2 writes a
        // required field, and its value) win.
        assert_eq!(
            m.region_action_result[0].exception,
            Some(NameBytesPair {
                name: String::new(),
                value: Some(Bytes::from_static(b"v")),
            })
        );
        // `processed` with another wire type: both refuse.
        let wrong = Bytes::from_static(&[0x12, 0x00]);
        assert!(MultiResponse::decode(wrong.clone()).is_err());
        assert!(region_results(&wrong).is_err());
    }

    proptest! {
        /// On random bytes, the walk and prost agree: both fail, or both give the same
        /// results (an action's result that prost rejects is an error where the walk
        /// reaches it). Random bytes rarely nest deep; the module's doc says where they part.
        #[test]
        fn agrees_with_prost_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let bytes = Bytes::from(bytes);
            match MultiResponse::decode(bytes.clone()) {
                Ok(m) => prop_assert_eq!(walked(&bytes).unwrap(), prost_view(&m)),
                Err(_) => prop_assert!(walked(&bytes).is_err()),
            }
        }

        /// On generated responses (mixing results, exceptions and region failures), whole
        /// and with one byte changed (most of which still parse, down to the results).
        #[test]
        fn agrees_with_prost_on_generated_responses(
            regions in proptest::collection::vec(
                (proptest::collection::vec((0u32..1000, any::<bool>()), 0..20), any::<bool>()),
                0..6,
            ),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let m = MultiResponse {
                region_action_result: regions
                    .iter()
                    .map(|(roes, failed)| RegionActionResult {
                        result_or_exception: roes
                            .iter()
                            .map(|&(i, ex)| roe(i, ex.then_some("E")))
                            .collect(),
                        exception: failed.then(|| NameBytesPair {
                            name: "R".into(),
                            value: None,
                        }),
                        processed: None,
                    })
                    .collect(),
                ..Default::default()
            };
            let mut bytes = m.encode_to_vec();
            prop_assert_eq!(walked(&Bytes::from(bytes.clone())).unwrap(), prost_view(&m));
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] = byte;
                let bytes = Bytes::from(bytes);
                match MultiResponse::decode(bytes.clone()) {
                    Ok(m) => prop_assert_eq!(walked(&bytes).unwrap(), prost_view(&m)),
                    Err(_) => prop_assert!(walked(&bytes).is_err()),
                }
            }
        }
    }
}
