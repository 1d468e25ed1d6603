//! Parsing HBase's znode payloads: `0xFF | i32 id_len | id | "PBUF" | protobuf`.

use crate::error::{Error, Result};

const MAGIC: u8 = 0xFF;
const PBUF: &[u8; 4] = b"PBUF";
/// HBase's own sanity bound on the id length.
const MAX_ID_LEN: usize = 65000;

/// Returns the protobuf payload of a znode written by HBase.
///
/// Data that does not start with the magic byte is returned as is (very old HBase wrote raw
/// values). A `PBUF` prefix, when present, is stripped.
pub fn protobuf_payload(data: &[u8]) -> Result<&[u8]> {
    let rest = match data.first() {
        Some(&MAGIC) => {
            if data.len() < 5 {
                return Err(Error::Protocol("znode data truncated after magic".into()));
            }
            let id_len = i32::from_be_bytes([data[1], data[2], data[3], data[4]]);
            if id_len < 1 || id_len as usize > MAX_ID_LEN {
                return Err(Error::Protocol(format!(
                    "znode id length {id_len} out of range"
                )));
            }
            let start = 5 + id_len as usize;
            data.get(start..)
                .ok_or_else(|| Error::Protocol("znode data truncated inside id".into()))?
        }
        Some(_) => data,
        None => return Err(Error::Protocol("znode is empty".into())),
    };
    Ok(rest.strip_prefix(PBUF).unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn meta_region_server_znode() {
        // 0xFF, id length 4, id "abcd", PBUF, MetaRegionServer{server{host "127.0.0.1",
        // port 16020, start_code 1}}.
        let server = [
            &[0x0a, 0x09][..],
            b"127.0.0.1",
            &[0x10, 0x94, 0x7d], // port 16020 as a varint
            &[0x18, 0x01],
        ]
        .concat();
        let msg = [&[0x0a, server.len() as u8][..], &server].concat();
        let data = [&[0xff, 0, 0, 0, 4][..], b"abcd", b"PBUF", &msg].concat();
        let payload = protobuf_payload(&data).unwrap();
        assert_eq!(payload, &msg[..]);
        let meta = hbase_proto::MetaRegionServer::decode(payload).unwrap();
        let sn = meta.server;
        assert_eq!(sn.host_name, "127.0.0.1");
        assert_eq!(sn.port, Some(16020));
        assert_eq!(sn.start_code, Some(1));
    }

    #[test]
    fn bad_znodes_are_errors() {
        assert!(protobuf_payload(&[]).is_err());
        assert!(protobuf_payload(&[0xff, 0, 0]).is_err());
        assert!(protobuf_payload(&[0xff, 0, 0, 0, 0]).is_err());
        assert!(protobuf_payload(&[0xff, 0x7f, 0xff, 0xff, 0xff]).is_err());
        assert!(protobuf_payload(&[0xff, 0, 0, 0, 9, 1, 2]).is_err());
        assert_eq!(protobuf_payload(b"PBUFxy").unwrap(), b"xy");
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let _ = protobuf_payload(&data);
        }
    }
}
