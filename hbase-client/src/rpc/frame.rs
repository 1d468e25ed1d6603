//! The RPC wire format: connection preamble, request frames and response frames.
//!
//! Kept free of I/O so that every byte layout can be tested on its own.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;

use crate::error::{Error, RemoteException, Result};
use crate::rpc::varint;

/// `"HBas"`, RPC version 0, SIMPLE authentication (0x50).
pub const PREAMBLE: [u8; 6] = *b"HBas\x00\x50";

/// The preamble's last byte: how the client authenticates (HBase's `AuthMethod` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// SIMPLE (80): the user name in the connection header is believed.
    Simple,
    /// KERBEROS (81): SASL with the GSSAPI mechanism follows the preamble.
    Kerberos,
}

impl AuthMethod {
    /// The code the server reads.
    pub fn code(self) -> u8 {
        match self {
            AuthMethod::Simple => 0x50,
            AuthMethod::Kerberos => 0x51,
        }
    }
}

/// The six preamble bytes for `auth`.
pub fn preamble(auth: AuthMethod) -> [u8; 6] {
    let mut p = PREAMBLE;
    p[5] = auth.code();
    p
}

/// Class name of the cell codec we declare and speak.
pub const KEYVALUE_CODEC: &str = "org.apache.hadoop.hbase.codec.KeyValueCodec";

/// Largest response frame we accept. Scan responses are bounded by max result size (2 MiB by
/// default); anything far above this is a corrupt length.
pub const MAX_FRAME_LEN: usize = 512 * 1024 * 1024;

/// Largest request frame (the bytes after its length) the protocol can carry: the length is a
/// signed 32-bit number on the wire, as HBase reads it.
pub const MAX_REQUEST_LEN: usize = i32::MAX as usize;

/// The service a connection talks to; one connection carries one service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// Data path on region servers.
    Client,
    /// Region-server administration.
    Admin,
    /// The master.
    Master,
    /// Cluster metadata for the RPC connection registry (masters, and region servers of
    /// HBase 2.5+).
    ClientMeta,
}

impl Service {
    /// The service name the server expects in the connection header.
    pub fn name(self) -> &'static str {
        match self {
            Service::Client => "ClientService",
            Service::Admin => "AdminService",
            Service::Master => "MasterService",
            Service::ClientMeta => "ClientMetaService",
        }
    }
}

/// The bytes a client sends first on a new connection: preamble, then the length-prefixed
/// ConnectionHeader.
pub fn connection_preamble(user: &str, service: Service) -> Vec<u8> {
    connection_preamble_with(user, service, None)
}

/// [`connection_preamble`] declaring a cell-block compressor (a Hadoop codec class).
pub fn connection_preamble_with(user: &str, service: Service, compressor: Option<&str>) -> Vec<u8> {
    let header = connection_header(user, service, compressor);
    let mut out = Vec::with_capacity(PREAMBLE.len() + header.len());
    out.extend_from_slice(&PREAMBLE);
    out.extend_from_slice(&header);
    out
}

/// The length-prefixed ConnectionHeader alone (after SASL it follows the exchange, wrapped when
/// integrity or privacy was negotiated). With Kerberos `user` must be the authenticated
/// principal: another name would ask the server to impersonate it.
pub fn connection_header(user: &str, service: Service, compressor: Option<&str>) -> Vec<u8> {
    let header = hbase_proto::ConnectionHeader {
        user_info: Some(hbase_proto::UserInformation {
            effective_user: user.to_string(),
            real_user: None,
        }),
        service_name: Some(service.name().to_string()),
        cell_block_codec_class: Some(KEYVALUE_CODEC.to_string()),
        cell_block_compressor_class: compressor.map(str::to_string),
        version_info: Some(version_info()),
        ..Default::default()
    };
    let body = header.encode_to_vec();
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// We claim 2.6 so the server uses cellblocks for single Gets and the newer retry exceptions.
fn version_info() -> hbase_proto::VersionInfo {
    hbase_proto::VersionInfo {
        version: "2.6.0".into(),
        url: "https://github.com/hbase-rust".into(),
        revision: env!("CARGO_PKG_VERSION").into(),
        user: "hbase-client-rs".into(),
        date: "2026".into(),
        src_checksum: "rust".into(),
        version_major: Some(2),
        version_minor: Some(6),
    }
}

/// What goes into one request's header besides the call id.
#[derive(Debug, Clone, Copy)]
pub struct RequestMeta<'a> {
    /// Exact RPC method name, e.g. `"Get"`.
    pub method: &'a str,
    /// Server-side deadline in milliseconds (0 = none).
    pub timeout_ms: u32,
    /// Call priority; 0 = normal.
    pub priority: u32,
}

/// Appends one request frame to `buf`, or fails with [`Error::InvalidInput`](crate::Error)
/// and appends nothing when it would be longer than [`MAX_REQUEST_LEN`]: HBase would read its
/// length as negative, or (past 4 GiB) the length written would be truncated and the server
/// would read the rest as other frames. (A server's own limit, `hbase.ipc.max.request.size`,
/// is usually far lower; it refuses what exceeds it.)
pub fn encode_request(
    buf: &mut BytesMut,
    call_id: u32,
    meta: RequestMeta<'_>,
    param: &impl Message,
    cellblock: Option<&[u8]>,
) -> crate::Result<()> {
    let header = HeaderFields {
        call_id,
        meta,
        cellblock_len: cellblock.map(|cb| cb.len() as u32),
    };
    let header_len = header.encoded_len();
    let param_len = param.encoded_len();
    let cb_len = cellblock.map_or(0, <[u8]>::len);
    let total = prost::length_delimiter_len(header_len)
        + header_len
        + prost::length_delimiter_len(param_len)
        + param_len
        + cb_len;
    if total > MAX_REQUEST_LEN {
        return Err(crate::Error::InvalidInput(format!(
            "a {} request of {total} bytes is more than a request frame can carry ({MAX_REQUEST_LEN} bytes)",
            meta.method
        )));
    }
    buf.reserve(4 + total);
    buf.put_u32(total as u32);
    varint::put_varint(header_len as u64, buf);
    header.encode(buf);
    // The length once (`encode_length_delimited` computes it again).
    varint::put_varint(param_len as u64, buf);
    param.encode_raw(buf);
    if let Some(cb) = cellblock {
        buf.put_slice(cb);
    }
    Ok(())
}

/// A `RequestHeader` encoded field by field, exactly as prost encodes the message (fields in
/// number order, unset optionals left out), without building the message: that would copy the
/// method name into a `String` on every call.
struct HeaderFields<'a> {
    call_id: u32,
    meta: RequestMeta<'a>,
    cellblock_len: Option<u32>,
}

impl HeaderFields<'_> {
    // Field numbers of RequestHeader (RPC.proto) and CellBlockMeta.
    const CALL_ID: u32 = 1;
    const METHOD_NAME: u32 = 3;
    const REQUEST_PARAM: u32 = 4;
    const CELL_BLOCK_META: u32 = 5;
    const PRIORITY: u32 = 6;
    const TIMEOUT: u32 = 7;
    const CELL_BLOCK_LENGTH: u32 = 1;

    fn priority(&self) -> Option<u32> {
        (self.meta.priority != 0).then_some(self.meta.priority)
    }

    fn timeout(&self) -> Option<u32> {
        (self.meta.timeout_ms != 0).then_some(self.meta.timeout_ms)
    }

    fn encoded_len(&self) -> usize {
        use prost::encoding::{encoded_len_varint, key_len, uint32};
        let method = self.meta.method.len();
        uint32::encoded_len(Self::CALL_ID, &self.call_id)
            + key_len(Self::METHOD_NAME)
            + encoded_len_varint(method as u64)
            + method
            + key_len(Self::REQUEST_PARAM)
            + 1
            + self.cellblock_len.map_or(0, |len| {
                let inner = uint32::encoded_len(Self::CELL_BLOCK_LENGTH, &len);
                key_len(Self::CELL_BLOCK_META) + encoded_len_varint(inner as u64) + inner
            })
            + self
                .priority()
                .map_or(0, |v| uint32::encoded_len(Self::PRIORITY, &v))
            + self
                .timeout()
                .map_or(0, |v| uint32::encoded_len(Self::TIMEOUT, &v))
    }

    fn encode(&self, buf: &mut BytesMut) {
        use prost::encoding::uint32;
        varint::put_uint32(Self::CALL_ID, self.call_id, buf);
        varint::put_len_key(Self::METHOD_NAME, self.meta.method.len(), buf);
        buf.put_slice(self.meta.method.as_bytes());
        varint::put_bool(Self::REQUEST_PARAM, true, buf);
        if let Some(len) = self.cellblock_len {
            let inner = uint32::encoded_len(Self::CELL_BLOCK_LENGTH, &len);
            varint::put_len_key(Self::CELL_BLOCK_META, inner, buf);
            varint::put_uint32(Self::CELL_BLOCK_LENGTH, len, buf);
        }
        if let Some(v) = self.priority() {
            varint::put_uint32(Self::PRIORITY, v, buf);
        }
        if let Some(v) = self.timeout() {
            varint::put_uint32(Self::TIMEOUT, v, buf);
        }
    }
}

/// One decoded response frame.
#[derive(Debug)]
pub struct Response {
    /// The call it answers (`u32::MAX` for connection-level errors).
    pub call_id: u32,
    /// The response message and the cell block, or the exception the server raised.
    pub body: std::result::Result<ResponseBody, RemoteException>,
}

/// A successful response: the serialized message and its cells, both slices of the frame.
#[derive(Debug, Clone, Default)]
pub struct ResponseBody {
    /// The serialized response message (decode with the method's response type).
    pub message: Bytes,
    /// The cell block; empty when the response has none.
    pub cellblock: Bytes,
}

impl ResponseBody {
    /// Decodes the message as `M`.
    pub fn decode<M: Message + Default>(&self) -> Result<M> {
        M::decode(self.message.clone())
            .map_err(|e| Error::Protocol(format!("bad response message: {e}")))
    }
}

fn read_delimited(frame: &mut Bytes) -> Result<Bytes> {
    let len = prost::decode_length_delimiter(&mut *frame)
        .map_err(|e| Error::Protocol(format!("bad length prefix: {e}")))?;
    if len > frame.len() {
        return Err(Error::Protocol(format!(
            "length prefix {len} runs past the frame ({} bytes left)",
            frame.len()
        )));
    }
    Ok(frame.split_to(len))
}

/// A `ResponseHeader` without an exception, read straight from its bytes: the call id and the
/// cell block's length, as prost would decode them (a repeated field's last value wins; a
/// repeated `cell_block_meta` merges). `None` when the header holds anything else (an
/// exception, another field or wire type, a malformed varint or length): prost then decodes
/// it, and says what is wrong. Building prost's `ResponseHeader` for every answer cost about
/// 300 instructions.
fn plain_header(mut b: &[u8]) -> Option<(Option<u32>, Option<u32>)> {
    use prost::encoding::decode_varint;
    let (mut call_id, mut cb_len) = (None, None);
    while let Some((&key, rest)) = b.split_first() {
        b = rest;
        match key {
            // call_id = 1, varint (prost keeps a uint32's low 32 bits).
            0x08 => call_id = Some(decode_varint(&mut b).ok()? as u32),
            // cell_block_meta = 3, length-delimited: CellBlockMeta { length = 1 }.
            0x1a => {
                let len = usize::try_from(decode_varint(&mut b).ok()?).ok()?;
                let mut meta = b.get(..len)?;
                b = &b[len..];
                while let Some((&key, rest)) = meta.split_first() {
                    meta = rest;
                    if key != 0x08 {
                        return None;
                    }
                    cb_len = Some(decode_varint(&mut meta).ok()? as u32);
                }
            }
            _ => return None,
        }
    }
    Some((call_id, cb_len))
}

/// Decodes a response frame (the bytes after its 4-byte length).
pub fn decode_response(mut frame: Bytes) -> Result<Response> {
    let header_bytes = read_delimited(&mut frame)?;
    let (call_id, cb_len) = match plain_header(&header_bytes) {
        Some((call_id, cb_len)) => (call_id.unwrap_or(u32::MAX), cb_len.unwrap_or(0)),
        None => match decode_header(header_bytes)? {
            Ok(header) => header,
            Err(response) => return Ok(response),
        },
    };
    let cb_len = cb_len as usize;
    if cb_len > frame.len() {
        return Err(Error::Protocol(format!(
            "cell block of {cb_len} bytes does not fit the {} bytes left",
            frame.len()
        )));
    }
    let cellblock = frame.split_off(frame.len() - cb_len);
    let message = if frame.has_remaining() {
        read_delimited(&mut frame)?
    } else {
        Bytes::new()
    };
    Ok(Response {
        call_id,
        body: Ok(ResponseBody { message, cellblock }),
    })
}

/// A `ResponseHeader` decoded by prost: the call id and cell block length, or the whole
/// response when the header carries the call's exception.
fn decode_header(header_bytes: Bytes) -> Result<std::result::Result<(u32, u32), Response>> {
    let header = hbase_proto::ResponseHeader::decode(header_bytes)
        .map_err(|e| Error::Protocol(format!("bad response header: {e}")))?;
    let call_id = header.call_id.unwrap_or(u32::MAX);
    if let Some(ex) = header.exception {
        let moved_to = match (&ex.hostname, ex.port) {
            (Some(h), Some(p)) => Some(format!("{h}:{p}")),
            _ => None,
        };
        return Ok(Err(Response {
            call_id,
            body: Err(RemoteException {
                class_name: ex.exception_class_name.unwrap_or_default(),
                message: ex.stack_trace.unwrap_or_default(),
                moved_to,
                do_not_retry: ex.do_not_retry.unwrap_or(false),
                server_overloaded: ex.server_overloaded.unwrap_or(false),
            }),
        }));
    }
    let cb_len = header.cell_block_meta.and_then(|m| m.length).unwrap_or(0);
    Ok(Ok((call_id, cb_len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preamble_and_connection_header_bytes() {
        let bytes = connection_preamble("bob", Service::Client);
        assert_eq!(&bytes[..6], b"HBas\x00\x50");
        assert_eq!(&preamble(AuthMethod::Kerberos), b"HBas\x00\x51");
        assert_eq!(
            &connection_header("bob", Service::Client, None)[..],
            &bytes[6..]
        );
        let len = u32::from_be_bytes(bytes[6..10].try_into().unwrap()) as usize;
        assert_eq!(len, bytes.len() - 10);
        let body = &bytes[10..];
        // Field 1 (user_info): tag 0x0a, len 5, then UserInformation{1: "bob"}.
        assert_eq!(&body[..7], &[0x0a, 0x05, 0x0a, 0x03, b'b', b'o', b'b']);
        // Field 2 (service_name): tag 0x12, len 13, "ClientService".
        assert_eq!(&body[7..9], &[0x12, 13]);
        assert_eq!(&body[9..22], b"ClientService");
        // Field 3 (cell_block_codec_class): tag 0x1a, the KeyValueCodec class name.
        assert_eq!(body[22], 0x1a);
        assert_eq!(body[23] as usize, KEYVALUE_CODEC.len());
        assert_eq!(
            &body[24..24 + KEYVALUE_CODEC.len()],
            KEYVALUE_CODEC.as_bytes()
        );
        // Field 5 (version_info) follows, and declares major 2 / minor 6.
        let rest = &body[24 + KEYVALUE_CODEC.len()..];
        assert_eq!(rest[0], 0x2a);
        let h = hbase_proto::ConnectionHeader::decode(body).unwrap();
        let v = h.version_info.unwrap();
        assert_eq!((v.version_major, v.version_minor), (Some(2), Some(6)));
    }

    #[test]
    fn a_request_longer_than_a_frame_can_say_is_refused_and_nothing_is_written() {
        let param = hbase_proto::CellBlockMeta { length: Some(1) };
        let meta = RequestMeta {
            method: "Multi",
            timeout_ms: 0,
            priority: 0,
        };
        // Zeroed pages that are never touched: the check comes before any copy.
        let huge = vec![0u8; MAX_REQUEST_LEN];
        let mut buf = BytesMut::from(&b"earlier frames"[..]);
        match encode_request(&mut buf, 7, meta, &param, Some(&huge)) {
            Err(crate::Error::InvalidInput(m)) => assert!(m.contains("Multi request of"), "{m}"),
            other => panic!("expected InvalidInput, got {other:?}"),
        }
        assert_eq!(&buf[..], b"earlier frames");
    }

    #[test]
    fn request_frame_with_cellblock_bytes() {
        let mut buf = BytesMut::new();
        let param = hbase_proto::CellBlockMeta { length: Some(1) }; // any small message
        let meta = RequestMeta {
            method: "Get",
            timeout_ms: 0,
            priority: 0,
        };
        encode_request(&mut buf, 7, meta, &param, Some(b"CB")).unwrap();
        let expected: Vec<u8> = [
            &[0, 0, 0, 19][..], // total length after these 4 bytes
            &[13],              // header length
            &[0x08, 7],         // call_id = 7
            &[0x1a, 3],
            b"Get",              // method_name
            &[0x20, 1],          // request_param = true
            &[0x2a, 2, 0x08, 2], // cell_block_meta{length = 2}
            &[2, 0x08, 1],       // param, length-delimited
            b"CB",               // the cell block
        ]
        .concat();
        assert_eq!(&buf[..], &expected[..]);
    }

    /// The hand-encoded header is byte for byte prost's encoding of the same RequestHeader.
    #[test]
    fn request_header_matches_the_message_encoding() {
        let param = hbase_proto::CellBlockMeta { length: Some(300) };
        for (call_id, method, timeout_ms, priority, cellblock) in [
            (0, "Get", 0, 0, None),
            (7, "Mutate", 60_000, 0, None),
            (0x7fff_ffff, "Multi", 1, 200, Some(&[1u8; 200][..])),
            (128, "Scan", u32::MAX, 100, Some(&b""[..])),
            (300, "getProcedureResult", 5, 0, Some(&[0u8; 70_000][..])),
        ] {
            let meta = RequestMeta {
                method,
                timeout_ms,
                priority,
            };
            let mut ours = BytesMut::new();
            encode_request(&mut ours, call_id, meta, &param, cellblock).unwrap();
            let header = hbase_proto::RequestHeader {
                call_id: Some(call_id),
                method_name: Some(method.to_string()),
                request_param: Some(true),
                cell_block_meta: cellblock.map(|cb| hbase_proto::CellBlockMeta {
                    length: Some(cb.len() as u32),
                }),
                priority: (priority != 0).then_some(priority),
                timeout: (timeout_ms != 0).then_some(timeout_ms),
                ..Default::default()
            };
            let mut body = header.encode_length_delimited_to_vec();
            body.extend(param.encode_length_delimited_to_vec());
            body.extend_from_slice(cellblock.unwrap_or_default());
            let mut expected = (body.len() as u32).to_be_bytes().to_vec();
            expected.extend(body);
            assert_eq!(&ours[..], &expected[..], "{method} call {call_id}");
        }
    }

    #[test]
    fn response_with_cellblock_and_exception() {
        // header{call_id 3, cell_block_meta{length 4}}, message {08 01}, cellblock "CELL".
        let frame = Bytes::from_static(&[
            6, 0x08, 3, 0x1a, 2, 0x08, 4, 2, 0x08, 1, b'C', b'E', b'L', b'L',
        ]);
        let r = decode_response(frame).unwrap();
        assert_eq!(r.call_id, 3);
        let body = r.body.unwrap();
        assert_eq!(&body.message[..], &[0x08, 1]);
        assert_eq!(&body.cellblock[..], b"CELL");

        let ex = hbase_proto::ResponseHeader {
            call_id: Some(9),
            exception: Some(hbase_proto::ExceptionResponse {
                exception_class_name: Some(
                    "org.apache.hadoop.hbase.NotServingRegionException".into(),
                ),
                stack_trace: Some("region x is not online".into()),
                do_not_retry: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = decode_response(Bytes::from(ex.encode_length_delimited_to_vec())).unwrap();
        assert_eq!(r.call_id, 9);
        let e = r.body.unwrap_err();
        assert_eq!(e.short_class_name(), "NotServingRegionException");
    }

    proptest::proptest! {
        #[test]
        fn response_decoder_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..128)) {
            let _ = decode_response(Bytes::from(data));
        }

        #[test]
        fn the_plain_header_reading_agrees_with_prost(
            call_id in proptest::option::of(proptest::prelude::any::<u32>()),
            meta in proptest::option::of(proptest::option::of(proptest::prelude::any::<u32>())),
            exception in proptest::prelude::any::<bool>(),
            twice in proptest::prelude::any::<bool>(),
        ) {
            let header = hbase_proto::ResponseHeader {
                call_id,
                exception: exception.then(|| hbase_proto::ExceptionResponse {
                    exception_class_name: Some("org.apache.hadoop.hbase.NotServingRegionException".into()),
                    ..Default::default()
                }),
                cell_block_meta: meta.map(|length| hbase_proto::CellBlockMeta { length }),
            };
            let mut bytes = header.encode_to_vec();
            if twice {
                // A field repeated: the last value wins, a repeated message merges.
                bytes.extend(header.encode_to_vec());
            }
            let prost = hbase_proto::ResponseHeader::decode(&bytes[..]).unwrap();
            match plain_header(&bytes) {
                Some((c, l)) => {
                    proptest::prop_assert!(!exception);
                    proptest::prop_assert_eq!(c, prost.call_id);
                    proptest::prop_assert_eq!(l, prost.cell_block_meta.and_then(|m| m.length));
                }
                None => proptest::prop_assert!(exception, "a plain header fell back to prost"),
            }
        }

        #[test]
        fn the_plain_header_reading_never_disagrees_with_prost_on_any_bytes(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..32),
        ) {
            if let Some((c, l)) = plain_header(&data) {
                let prost = hbase_proto::ResponseHeader::decode(&data[..]);
                proptest::prop_assert!(prost.is_ok(), "prost refuses what was read: {:?}", prost);
                let prost = prost.unwrap();
                proptest::prop_assert!(prost.exception.is_none());
                proptest::prop_assert_eq!(c, prost.call_id);
                proptest::prop_assert_eq!(l, prost.cell_block_meta.and_then(|m| m.length));
            }
        }
    }
}
