//! A `MultiRequest` encoded as it is built, one action at a time.
//!
//! The prost struct of a whole request (a `RegionAction` per region, an `Action` with its
//! `MutationProto` per action, several hundred bytes each before a byte is encoded) cost
//! about 700 bytes per buffered put for as long as the request was in flight: the call
//! borrows its message until the answer comes. Measured with 8 MiB of puts in flight
//! (tests/mutator_memory.rs), those structs were a third of the heap. Here each action's
//! struct lives only while it is encoded, and the request holds its encoding (about 60
//! bytes per put) instead. Protobuf allows it: a message's fields may come in any order and
//! a repeated field's elements one by one, so the bytes are those of the struct.

use bytes::{Buf, BufMut};
use prost::encoding::{encode_key, encode_varint, DecodeContext, WireType};
use prost::{DecodeError, Message};

/// `MultiRequest.regionAction`.
const MULTI_REGION_ACTION: u32 = 1;
/// `MultiRequest.nonceGroup`.
const MULTI_NONCE_GROUP: u32 = 2;
/// `RegionAction.region`.
const REGION_ACTION_REGION: u32 = 1;
/// `RegionAction.action`.
const REGION_ACTION_ACTION: u32 = 3;

/// A message already encoded (its fields, without a length delimiter), sent as it is.
#[derive(Debug, Default)]
pub(crate) struct Encoded(Vec<u8>);

impl Message for Encoded {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.0);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        // Only ever encoded; nothing decodes into it.
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// Builds a `MultiRequest`'s encoding region by region, action by action.
#[derive(Default)]
pub(crate) struct MultiRequestWriter {
    out: Vec<u8>,
    /// The current region's `RegionAction` fields.
    region: Vec<u8>,
}

impl MultiRequestWriter {
    /// Starts the `RegionAction` of `region` (ending the one before, if any).
    pub(crate) fn region(&mut self, region: &hbase_proto::RegionSpecifier) {
        self.end_region();
        prost::encoding::message::encode(REGION_ACTION_REGION, region, &mut self.region);
    }

    /// Appends an action to the current region's.
    pub(crate) fn action(&mut self, action: &hbase_proto::Action) {
        prost::encoding::message::encode(REGION_ACTION_ACTION, action, &mut self.region);
    }

    fn end_region(&mut self) {
        if self.region.is_empty() {
            return;
        }
        encode_key(
            MULTI_REGION_ACTION,
            WireType::LengthDelimited,
            &mut self.out,
        );
        encode_varint(self.region.len() as u64, &mut self.out);
        self.out.extend_from_slice(&self.region);
        self.region.clear();
    }

    /// The request, with `nonce_group` if set.
    pub(crate) fn finish(mut self, nonce_group: Option<u64>) -> Encoded {
        self.end_region();
        if let Some(group) = nonce_group {
            prost::encoding::uint64::encode(MULTI_NONCE_GROUP, &group, &mut self.out);
        }
        Encoded(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer's bytes are the prost struct's, so the server reads the same request.
    #[test]
    fn the_encoding_is_the_structs() {
        let spec = |name: &'static [u8]| hbase_proto::RegionSpecifier {
            r#type: hbase_proto::region_specifier::RegionSpecifierType::RegionName as i32,
            value: bytes::Bytes::from_static(name),
        };
        let action = |i: u32| hbase_proto::Action {
            index: Some(i),
            mutation: Some(hbase_proto::MutationProto {
                row: Some(bytes::Bytes::from(format!("row{i}"))),
                associated_cell_count: Some(1),
                ..Default::default()
            }),
            ..Default::default()
        };
        for nonce_group in [None, Some(77u64)] {
            let mut whole = hbase_proto::MultiRequest {
                nonce_group,
                ..Default::default()
            };
            let mut writer = MultiRequestWriter::default();
            let names: [&'static [u8]; 2] = [b"region-a", b"region-b"];
            for (r, name) in names.into_iter().enumerate() {
                let mut ra = hbase_proto::RegionAction {
                    region: spec(name),
                    ..Default::default()
                };
                writer.region(&ra.region);
                for i in 0..3 {
                    let a = action(r as u32 * 10 + i);
                    writer.action(&a);
                    ra.action.push(a);
                }
                whole.region_action.push(ra);
            }
            let encoded = writer.finish(nonce_group);
            assert_eq!(encoded.encode_to_vec(), whole.encode_to_vec());
            assert_eq!(
                hbase_proto::MultiRequest::decode(&encoded.encode_to_vec()[..]).unwrap(),
                whole
            );
        }
    }
}
