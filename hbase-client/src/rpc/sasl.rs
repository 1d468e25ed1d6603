//! HBase's SASL exchange (the framing of `HBaseSaslRpcClient`) with the GSSAPI mechanism of
//! RFC 4752, and the wrapping of every later frame when integrity or privacy was negotiated.
//! Works over any async stream; the GSSAPI context itself sits behind [`GssMechanism`].
//!
//! On the wire, after the 6-byte preamble `HBas\0\x51` (auth method KERBEROS):
//! - client → server: every token as `u32 length` + token (the first one is GSSAPI's initial
//!   token, then the replies to the server's challenges);
//! - server → client: `u32 status` (0 success, 1 error); on success `u32 length` + token, where a
//!   length of -88 means "this server does not use SASL, fall back to SIMPLE"; on error two
//!   Hadoop `WritableUtils` strings (`u32 length` + UTF-8): the exception class and its message;
//! - once the GSSAPI context is established the client sends an empty token; the server answers
//!   with a wrapped 4-byte offer (byte 0: the security layers it allows, 1 none / 2 integrity /
//!   4 confidentiality; bytes 1..4: its largest message); the client answers with a wrapped
//!   4-byte choice (the one layer, and its own largest message) and the exchange is over: the
//!   server sends nothing more. The connection header follows;
//! - with integrity or privacy, every later byte in either direction travels inside tokens,
//!   each `u32 length` + `GSS_Wrap(bytes)`; the bytes inside are the usual frame stream (one
//!   token may carry several frames).

// Without the kerberos feature only the wrap/unwrap half is reachable.
#![cfg_attr(not(feature = "kerberos"), allow(dead_code))]

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::{Error, Result};
use crate::security::Protection;

/// The status a server sends before each SASL reply.
const SASL_SUCCESS: u32 = 0;
/// The length a server sends instead of a token when it wants SIMPLE authentication.
const SWITCH_TO_SIMPLE_AUTH: i32 = -88;
/// Largest SASL challenge accepted (HBase's client allows 1 MiB too).
const MAX_CHALLENGE: usize = 1024 * 1024;
/// Largest wrapped token accepted after the exchange (a scan response may be large).
pub(crate) const MAX_WRAPPED: usize = super::frame::MAX_FRAME_LEN;
/// The largest message we say we accept: the 3-byte maximum. HBase's servers do not split
/// their wraps anyway.
const OUR_MAX_MESSAGE: u32 = 0x00FF_FFFF;

/// A GSSAPI security context on the client side (the Kerberos one in production).
pub(crate) trait GssMechanism: Send {
    /// Feeds the server's token (`None` at the start) and returns the next token to send.
    fn step(&mut self, token: Option<&[u8]>) -> std::result::Result<Option<Vec<u8>>, String>;
    /// True once the context is established.
    fn is_established(&self) -> bool;
    /// GSS_Wrap: signs `data`, and encrypts it when `encrypt`.
    fn wrap(&mut self, data: &[u8], encrypt: bool) -> std::result::Result<Vec<u8>, String>;
    /// GSS_Unwrap: checks (and decrypts) a token from the peer.
    fn unwrap(&mut self, token: &[u8]) -> std::result::Result<Vec<u8>, String>;
}

/// A finished SASL exchange: the negotiated protection and, above `auth`, the context that
/// wraps and unwraps the rest of the connection.
pub(crate) struct SaslSession {
    protection: Protection,
    mech: std::sync::Mutex<Box<dyn GssMechanism>>,
}

impl std::fmt::Debug for SaslSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslSession")
            .field("protection", &self.protection)
            .finish()
    }
}

impl SaslSession {
    /// The negotiated level.
    pub(crate) fn protection(&self) -> Protection {
        self.protection
    }

    /// Whether frames travel wrapped.
    pub(crate) fn wraps(&self) -> bool {
        self.protection != Protection::Authentication
    }

    fn mech(&self) -> std::sync::MutexGuard<'_, Box<dyn GssMechanism>> {
        self.mech.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `plain` to `out` as one wrapped token (`u32 length` + token).
    pub(crate) fn seal(&self, plain: &[u8], out: &mut BytesMut) -> Result<()> {
        let encrypt = self.protection == Protection::Privacy;
        let token = self
            .mech()
            .wrap(plain, encrypt)
            .map_err(|e| Error::Protocol(format!("GSSAPI wrap failed: {e}")))?;
        out.reserve(4 + token.len());
        out.put_u32(token.len() as u32);
        out.put_slice(&token);
        Ok(())
    }

    /// Unwraps one token's bytes (without its length prefix).
    pub(crate) fn open(&self, token: &[u8]) -> Result<Vec<u8>> {
        self.mech()
            .unwrap(token)
            .map_err(|e| Error::Protocol(format!("GSSAPI unwrap of a server token failed: {e}")))
    }

    /// Moves every complete token at the front of `wrapped` into `plain`, unwrapped. Bytes of
    /// an incomplete token stay in `wrapped`.
    pub(crate) fn open_into(&self, wrapped: &mut BytesMut, plain: &mut BytesMut) -> Result<()> {
        while wrapped.len() >= 4 {
            let len = u32::from_be_bytes([wrapped[0], wrapped[1], wrapped[2], wrapped[3]]) as usize;
            if len > MAX_WRAPPED {
                return Err(Error::Protocol(format!(
                    "wrapped token of {len} bytes is too large"
                )));
            }
            if wrapped.len() < 4 + len {
                wrapped.reserve((4 + len - wrapped.len()).min(1 << 20));
                break;
            }
            wrapped.advance(4);
            let token = wrapped.split_to(len);
            plain.extend_from_slice(&self.open(&token)?);
        }
        Ok(())
    }
}

fn io_error(server: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Connection {
        addr: server.to_string(),
        source,
    }
}

async fn write_token<S: AsyncWrite + Unpin>(
    stream: &mut S,
    token: &[u8],
    server: &str,
) -> Result<()> {
    let mut buf = Vec::with_capacity(4 + token.len());
    buf.extend_from_slice(&(token.len() as u32).to_be_bytes());
    buf.extend_from_slice(token);
    stream.write_all(&buf).await.map_err(io_error(server))?;
    stream.flush().await.map_err(io_error(server))
}

/// Reads a Hadoop `WritableUtils` string: `i32` length (-1 = null) + UTF-8.
async fn read_writable_string<S: AsyncRead + Unpin>(
    stream: &mut S,
    server: &str,
) -> Result<String> {
    let len = stream.read_i32().await.map_err(io_error(server))?;
    if len < 0 {
        return Ok(String::new());
    }
    let len = len as usize;
    if len > MAX_CHALLENGE {
        return Err(Error::Protocol(format!(
            "SASL error string of {len} bytes is too long"
        )));
    }
    let mut buf = vec![0; len];
    stream
        .read_exact(&mut buf)
        .await
        .map_err(io_error(server))?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// One server reply during the exchange.
async fn read_challenge<S: AsyncRead + Unpin>(stream: &mut S, server: &str) -> Result<Vec<u8>> {
    let status = stream.read_u32().await.map_err(io_error(server))?;
    if status != SASL_SUCCESS {
        let class = read_writable_string(stream, server).await?;
        let message = read_writable_string(stream, server).await?;
        let short = class.rsplit('.').next().unwrap_or(&class);
        return Err(Error::Authentication {
            server: Some(server.to_string()),
            message: format!("the server refused the SASL exchange: {short}: {message}"),
        });
    }
    let len = stream.read_i32().await.map_err(io_error(server))?;
    if len == SWITCH_TO_SIMPLE_AUTH {
        return Err(Error::Authentication {
            server: Some(server.to_string()),
            message: "the server does not use Kerberos (it asked the client to fall back to \
                      SIMPLE authentication, which a Kerberos client refuses)"
                .into(),
        });
    }
    if len < 0 || len as usize > MAX_CHALLENGE {
        return Err(Error::Protocol(format!(
            "SASL challenge length {len} from {server} is out of range"
        )));
    }
    let mut token = vec![0; len as usize];
    stream
        .read_exact(&mut token)
        .await
        .map_err(io_error(server))?;
    Ok(token)
}

fn gss_error(server: &str, what: &str, e: String) -> Error {
    Error::Authentication {
        server: Some(server.to_string()),
        message: format!("GSSAPI {what} failed: {e}"),
    }
}

/// Picks the client's most preferred level among those the server offers (layer bit mask).
pub(crate) fn choose_protection(offered: u8, wanted: &[Protection]) -> Option<Protection> {
    wanted
        .iter()
        .copied()
        .find(|p| offered & p.layer_bit() != 0)
}

fn describe_layers(mask: u8) -> String {
    let names: Vec<&str> = [
        Protection::Authentication,
        Protection::Integrity,
        Protection::Privacy,
    ]
    .iter()
    .filter(|p| mask & p.layer_bit() != 0)
    .map(|p| p.name())
    .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Runs the exchange on `stream`, right after the preamble was sent. `initial` is the context's
/// first token, made beforehand (it may need the KDC, which blocks). `server` names the peer in
/// errors.
pub(crate) async fn negotiate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    mut mech: Box<dyn GssMechanism>,
    initial: Vec<u8>,
    wanted: &[Protection],
    server: &str,
) -> Result<SaslSession> {
    write_token(stream, &initial, server).await?;
    // Context establishment: with mutual authentication the server answers the AP-REQ with
    // an AP-REP; when our context is complete we send an empty token to ask for the offer.
    while !mech.is_established() {
        let challenge = read_challenge(stream, server).await?;
        let reply = mech
            .step(Some(&challenge))
            .map_err(|e| gss_error(server, "context establishment", e))?;
        match reply {
            Some(token) if !token.is_empty() => write_token(stream, &token, server).await?,
            _ if mech.is_established() => write_token(stream, &[], server).await?,
            _ => {
                return Err(Error::Protocol(format!(
                    "GSSAPI produced no token for {server} before the context was established"
                )))
            }
        }
    }
    let offer = read_challenge(stream, server).await?;
    let offer = mech
        .unwrap(&offer)
        .map_err(|e| gss_error(server, "unwrap of the security-layer offer", e))?;
    if offer.len() != 4 {
        return Err(Error::Protocol(format!(
            "security-layer offer from {server} has {} bytes, not 4",
            offer.len()
        )));
    }
    let chosen = choose_protection(offer[0], wanted).ok_or_else(|| Error::Authentication {
        server: Some(server.to_string()),
        message: format!(
            "no common RPC protection: the server offers {}, the client accepts {} \
             (hbase.rpc.protection)",
            describe_layers(offer[0]),
            wanted
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })?;
    let max = if chosen == Protection::Authentication {
        0
    } else {
        OUR_MAX_MESSAGE
    };
    let mut answer = max.to_be_bytes();
    answer[0] = chosen.layer_bit();
    // RFC 4752: the answer is wrapped for integrity only, whatever layer it selects.
    let answer = mech
        .wrap(&answer, false)
        .map_err(|e| gss_error(server, "wrap of the security-layer answer", e))?;
    write_token(stream, &answer, server).await?;
    Ok(SaslSession {
        protection: chosen,
        mech: std::sync::Mutex::new(mech),
    })
}

/// If the first bytes a server sends after the exchange are a SASL error reply (the server
/// rejected our last token), the error it names. Call with at least 4 bytes buffered.
pub(crate) fn late_sasl_error(first: &[u8], server: &str) -> Option<Error> {
    // An error reply starts with status 1 then the class name's length. A wrapped token or a
    // response frame of 1 byte cannot exist, so a leading 1 means an error reply.
    if first.len() < 8 || first[..4] != [0, 0, 0, 1] {
        return None;
    }
    let class_len = u32::from_be_bytes([first[4], first[5], first[6], first[7]]) as usize;
    let class = first.get(8..8 + class_len)?;
    let class = String::from_utf8_lossy(class);
    let rest = &first[8 + class_len..];
    let message = rest.get(..4).and_then(|l| {
        let n = u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize;
        rest.get(4..4 + n)
    });
    Some(Error::Authentication {
        server: Some(server.to_string()),
        message: format!(
            "the server refused the SASL exchange: {}: {}",
            class.rsplit('.').next().unwrap_or(&class),
            message.map(String::from_utf8_lossy).unwrap_or_default()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in GSSAPI context: two-step establishment, "wrap" = a marker byte (1 signed,
    /// 2 sealed) + the bytes XOR 0x5A when sealed. Enough to pin the framing.
    struct Toy {
        steps: u32,
    }

    impl GssMechanism for Toy {
        fn step(&mut self, token: Option<&[u8]>) -> std::result::Result<Option<Vec<u8>>, String> {
            self.steps += 1;
            match token {
                None => Ok(Some(b"AP-REQ".to_vec())),
                Some(b"AP-REP") => Ok(None),
                Some(other) => Err(format!("unexpected {other:?}")),
            }
        }
        fn is_established(&self) -> bool {
            self.steps >= 2
        }
        fn wrap(&mut self, data: &[u8], encrypt: bool) -> std::result::Result<Vec<u8>, String> {
            let mut out = vec![if encrypt { 2 } else { 1 }];
            out.extend(data.iter().map(|b| if encrypt { b ^ 0x5A } else { *b }));
            Ok(out)
        }
        fn unwrap(&mut self, token: &[u8]) -> std::result::Result<Vec<u8>, String> {
            match token.split_first() {
                Some((1, rest)) => Ok(rest.to_vec()),
                Some((2, rest)) => Ok(rest.iter().map(|b| b ^ 0x5A).collect()),
                _ => Err("bad token".into()),
            }
        }
    }

    fn server_reply(token: &[u8]) -> Vec<u8> {
        let mut v = vec![0, 0, 0, 0];
        v.extend_from_slice(&(token.len() as u32).to_be_bytes());
        v.extend_from_slice(token);
        v
    }

    fn client_token(token: &[u8]) -> Vec<u8> {
        let mut v = (token.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(token);
        v
    }

    async fn run(offer_mask: u8, wanted: &[Protection]) -> (Result<SaslSession>, Vec<u8>) {
        let (mut client, mut server) = tokio::io::duplex(4096);
        let mut script = server_reply(b"AP-REP");
        script.extend(server_reply(&[1, offer_mask, 0x01, 0x00, 0x00]));
        server.write_all(&script).await.unwrap();
        let mech: Box<dyn GssMechanism> = Box::new(Toy { steps: 1 });
        let session = negotiate(&mut client, mech, b"AP-REQ".to_vec(), wanted, "rs:1").await;
        drop(client);
        let mut sent = Vec::new();
        server.read_to_end(&mut sent).await.unwrap();
        (session, sent)
    }

    #[tokio::test]
    async fn exchange_bytes_and_layer_choice() {
        let (session, sent) = run(1 | 2 | 4, &[Protection::Privacy]).await;
        assert_eq!(session.unwrap().protection(), Protection::Privacy);
        let expected = [
            client_token(b"AP-REQ"),
            client_token(b""),
            // wrapped (integrity, marker 1) choice: layer 4, our max 0xFFFFFF
            client_token(&[1, 4, 0xFF, 0xFF, 0xFF]),
        ]
        .concat();
        assert_eq!(sent, expected);

        // authentication only: max message 0
        let (session, sent) = run(1, &[Protection::Authentication]).await;
        assert!(!session.unwrap().wraps());
        assert_eq!(&sent[sent.len() - 9..], &client_token(&[1, 1, 0, 0, 0])[..]);

        // the first acceptable level in the client's order wins
        let (session, _) = run(1 | 2, &[Protection::Privacy, Protection::Integrity]).await;
        assert_eq!(session.unwrap().protection(), Protection::Integrity);
    }

    #[tokio::test]
    async fn no_common_layer_is_an_authentication_error() {
        let (session, _) = run(4, &[Protection::Authentication]).await;
        let e = session.unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Authentication);
        let text = e.to_string();
        assert!(text.contains("offers privacy"), "{text}");
        assert!(text.contains("accepts authentication"), "{text}");
    }

    #[tokio::test]
    async fn server_error_reply_and_fallback_request() {
        for (reply, wants) in [
            (
                {
                    let mut v = vec![0, 0, 0, 1];
                    let class = b"javax.security.sasl.SaslException";
                    v.extend_from_slice(&(class.len() as u32).to_be_bytes());
                    v.extend_from_slice(class);
                    v.extend_from_slice(&6u32.to_be_bytes());
                    v.extend_from_slice(b"denied");
                    v
                },
                "SaslException: denied",
            ),
            (
                [0u32.to_be_bytes(), (-88i32).to_be_bytes()].concat(),
                "fall back to SIMPLE",
            ),
        ] {
            let (mut client, mut server) = tokio::io::duplex(4096);
            server.write_all(&reply).await.unwrap();
            let mech: Box<dyn GssMechanism> = Box::new(Toy { steps: 1 });
            let e = negotiate(
                &mut client,
                mech,
                b"AP-REQ".to_vec(),
                &[Protection::Authentication],
                "rs:1",
            )
            .await
            .unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Authentication);
            assert!(e.to_string().contains(wants), "{e}");
            assert!(e.to_string().contains("rs:1"), "{e}");
        }
    }

    #[tokio::test]
    async fn wrapped_frames_round_trip_across_token_boundaries() {
        let (session, _) = run(4, &[Protection::Privacy]).await;
        let session = session.unwrap();
        let mut wire = BytesMut::new();
        session.seal(b"frame-one", &mut wire).unwrap();
        session.seal(b"frame-two", &mut wire).unwrap();
        // sealed bytes do not show the plaintext
        assert!(!wire.windows(5).any(|w| w == b"frame"));
        let mut plain = BytesMut::new();
        // feed in two pieces: the second token is cut in the middle
        let mut first = wire.split_to(wire.len() - 4);
        session.open_into(&mut first, &mut plain).unwrap();
        assert_eq!(&plain[..], b"frame-one");
        first.extend_from_slice(&wire);
        session.open_into(&mut first, &mut plain).unwrap();
        assert_eq!(&plain[..], b"frame-oneframe-two");
        assert!(first.is_empty());
    }

    #[test]
    fn late_error_reply_is_recognised() {
        let mut v = vec![0, 0, 0, 1];
        let class = b"org.apache.hadoop.security.AccessControlException";
        v.extend_from_slice(&(class.len() as u32).to_be_bytes());
        v.extend_from_slice(class);
        v.extend_from_slice(&3u32.to_be_bytes());
        v.extend_from_slice(b"bad");
        let e = late_sasl_error(&v, "rs:1").unwrap();
        assert!(e.to_string().contains("AccessControlException: bad"), "{e}");
        assert!(late_sasl_error(&[0, 0, 0, 60, 1, 2, 3, 4], "rs:1").is_none());
    }

    proptest::proptest! {
        #[test]
        fn unwrapping_garbage_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let session = SaslSession {
                protection: Protection::Integrity,
                mech: std::sync::Mutex::new(Box::new(Toy { steps: 2 })),
            };
            let mut wrapped = BytesMut::from(&data[..]);
            let mut plain = BytesMut::new();
            let _ = session.open_into(&mut wrapped, &mut plain);
            let _ = late_sasl_error(&data, "x");
        }
    }
}
