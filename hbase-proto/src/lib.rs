//! Protocol Buffers messages of the HBase 2.x native RPC protocol.
//!
//! The definitions live in `protos/*.proto` at the workspace root (package
//! `hbase.pb`, proto2) and are compiled at build time with protox and
//! prost-build; no system `protoc` is needed. Message, field and enum names
//! follow HBase's, converted to Rust conventions by prost:
//!
//! * messages are structs at the crate root, e.g. [`RequestHeader`],
//!   [`MutationProto`], [`Scan`];
//! * nested types live in a snake-case module named after their parent, e.g.
//!   [`mutation_proto::MutationType`], [`region_specifier::RegionSpecifierType`],
//!   [`scan::ReadType`], [`get_procedure_result_response::State`];
//! * `required` scalar fields are plain values, `optional` scalar fields are
//!   `Option<T>` with a same-named getter that applies the proto default
//!   (e.g. [`Get::max_versions`] returns 1 when unset); enum fields are stored
//!   as `i32` with typed getters/setters; message fields are `Option<M>`;
//! * every `bytes` field is a [`bytes::Bytes`].
//!
//! Services (`ClientService`, `AdminService`, `MasterService`, ...) are not
//! turned into code; callers put the rpc name (e.g. `"Get"`,
//! `"getProcedureResult"`) in [`RequestHeader::method_name`].
//!
//! Beware that [`Result`] here is HBase's row result message, not
//! `core::result::Result`; prefer `hbase_proto::Result` over glob imports.

/// Generated code for protobuf package `hbase.pb`.
#[allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    rustdoc::bare_urls,
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags
)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/hbase.pb.rs"));
}

pub use pb::*;

#[cfg(test)]
mod tests {
    use super::pb;
    use bytes::Bytes;
    use prost::Message;

    #[test]
    fn request_header_bytes() {
        let header = pb::RequestHeader {
            call_id: Some(1),
            method_name: Some("Get".to_string()),
            request_param: Some(true),
            ..Default::default()
        };
        let encoded = header.encode_to_vec();
        assert_eq!(
            encoded,
            [0x08, 0x01, 0x1a, 0x03, b'G', b'e', b't', 0x20, 0x01]
        );
        assert_eq!(pb::RequestHeader::decode(&encoded[..]).unwrap(), header);
    }

    #[test]
    fn length_delimited_request_header() {
        let header = pb::RequestHeader {
            call_id: Some(7),
            method_name: Some("Scan".to_string()),
            ..Default::default()
        };
        let encoded = header.encode_length_delimited_to_vec();
        assert_eq!(
            encoded,
            [0x08, 0x08, 0x07, 0x1a, 0x04, b'S', b'c', b'a', b'n']
        );
    }

    #[test]
    fn put_mutation_bytes() {
        use pb::mutation_proto::column_value::QualifierValue;
        use pb::mutation_proto::{ColumnValue, MutationType};

        let mut mutation = pb::MutationProto {
            row: Some(Bytes::from_static(b"r")),
            column_value: vec![ColumnValue {
                family: Bytes::from_static(b"f"),
                qualifier_value: vec![QualifierValue {
                    qualifier: Some(Bytes::from_static(b"q")),
                    value: Some(Bytes::from_static(b"v")),
                    ..Default::default()
                }],
            }],
            ..Default::default()
        };
        mutation.set_mutate_type(MutationType::Put);

        let expected: &[u8] = &[
            0x0a, 0x01, b'r', // 1: row
            0x10, 0x02, // 2: mutate_type = PUT
            0x1a, 0x0b, // 3: column_value, 11 bytes
            0x0a, 0x01, b'f', // ColumnValue.1: family
            0x12, 0x06, // ColumnValue.2: qualifier_value, 6 bytes
            0x0a, 0x01, b'q', // QualifierValue.1: qualifier
            0x12, 0x01, b'v', // QualifierValue.2: value
        ];
        assert_eq!(mutation.encode_to_vec(), expected);

        let decoded = pb::MutationProto::decode(expected).unwrap();
        assert_eq!(decoded.mutate_type(), MutationType::Put);
        assert_eq!(
            decoded.durability(),
            pb::mutation_proto::Durability::UseDefault
        );
        assert_eq!(decoded, mutation);
    }

    #[test]
    fn region_specifier_required_fields_always_encoded() {
        let spec = pb::RegionSpecifier {
            r#type: pb::region_specifier::RegionSpecifierType::RegionName as i32,
            value: Bytes::from_static(b"t,,1"),
        };
        assert_eq!(
            spec.encode_to_vec(),
            [0x08, 0x01, 0x12, 0x04, b't', b',', b',', b'1']
        );

        // Required scalars are written even when they hold the zero value.
        let state = pb::TableState {
            state: pb::table_state::State::Enabled as i32,
        };
        assert_eq!(state.encode_to_vec(), [0x08, 0x00]);
    }

    #[test]
    fn proto2_defaults() {
        let get = pb::Get::default();
        assert_eq!(get.max_versions, None);
        assert_eq!(get.max_versions(), 1);
        assert!(get.cache_blocks());
        assert!(!get.existence_only());
        assert_eq!(get.consistency(), pb::Consistency::Strong);
        // Only the required `row` is written (empty), unset optionals are omitted.
        assert_eq!(get.encode_to_vec(), [0x0a, 0x00]);

        let scan = pb::Scan::default();
        assert!(scan.include_start_row());
        assert!(!scan.include_stop_row());
        assert_eq!(scan.max_versions(), 1);
        assert!(scan.cache_blocks());
        assert!(!scan.reversed());
        assert_eq!(scan.read_type(), pb::scan::ReadType::Default);
        // Unset optional fields are not written at all.
        assert!(scan.encode_to_vec().is_empty());

        let modify = pb::ModifyTableRequest::default();
        assert!(modify.reopen_regions());
        assert_eq!(pb::RegionInfo::default().replica_id(), 0);
    }

    #[test]
    fn procedure_result_state() {
        // state = FINISHED (field 1, varint 2), result = "ok" (field 4).
        let bytes: &[u8] = &[0x08, 0x02, 0x22, 0x02, b'o', b'k'];
        let resp = pb::GetProcedureResultResponse::decode(bytes).unwrap();
        assert_eq!(
            resp.state(),
            pb::get_procedure_result_response::State::Finished
        );
        assert_eq!(resp.result.as_deref(), Some(&b"ok"[..]));
        assert!(resp.exception.is_none());
    }

    #[test]
    fn unknown_fields_are_skipped() {
        // ResponseHeader with call_id = 3 and an unknown field 15 (varint).
        let bytes: &[u8] = &[0x08, 0x03, 0x78, 0x01];
        let header = pb::ResponseHeader::decode(bytes).unwrap();
        assert_eq!(header.call_id, Some(3));
        assert!(header.exception.is_none());
    }

    #[test]
    fn znode_payloads() {
        let meta = pb::MetaRegionServer {
            server: pb::ServerName {
                host_name: "rs1".to_string(),
                port: Some(16020),
                start_code: Some(1),
            },
            rpc_version: None,
            state: None,
        };
        let decoded = pb::MetaRegionServer::decode(&meta.encode_to_vec()[..]).unwrap();
        // Absent state is reported as OFFLINE by the getter; HBase treats it as OPEN.
        assert_eq!(decoded.state, None);
        assert_eq!(decoded.server.port(), 16020);
        assert_eq!(pb::region_state::State::Open as i32, 3);
    }
}
