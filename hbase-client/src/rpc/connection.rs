//! One TCP connection to one server, carrying many concurrent calls.
//!
//! Callers encode their request straight into a shared output buffer and wait on a oneshot
//! keyed by call id. A writer task flushes whatever has accumulated in one write (so concurrent
//! small calls coalesce), and a reader task splits the input into frames and completes calls in
//! whatever order the server answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, Notify, Semaphore};
use tokio::task::JoinHandle;

use super::compression::{self, CellBlockCompression};
use super::frame::{self, RequestMeta, ResponseBody, Service};
use super::sasl::SaslSession;
use super::secure::{Reader, Security, Writer};
use crate::error::{Error, Result};
use crate::stats::ServerCounters;

type Reply = oneshot::Sender<Result<ResponseBody>>;

struct Pending {
    calls: HashMap<u32, Reply>,
    /// Set once the connection is unusable; later calls fail at once with this reason.
    closed: Option<String>,
    /// Set when the server refused the client's credentials: calls get this error, which is
    /// never retried, instead of a retryable "connection closed".
    refused: Option<Error>,
}

struct Shared {
    addr: String,
    counters: Arc<ServerCounters>,
    compression: CellBlockCompression,
    pending: Mutex<Pending>,
    out: Mutex<BytesMut>,
    out_ready: Notify,
    next_call_id: AtomicU32,
    /// Permits for calls in flight (`ClientConfig::max_in_flight_per_server`).
    in_flight: Semaphore,
    /// The SASL session (Kerberos connections); frames travel wrapped when it says so.
    sasl: Option<Arc<SaslSession>>,
}

impl Shared {
    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the connection dead and fails every call in flight with a retryable error, or
    /// with `refused` when the server refused the client's credentials.
    fn close(&self, reason: String, refused: Option<Error>) {
        let calls = {
            let mut p = self.lock_pending();
            if p.closed.is_none() {
                tracing::debug!(addr = %self.addr, %reason, "connection closed");
                p.closed = Some(reason.clone());
                p.refused = refused;
            }
            std::mem::take(&mut p.calls)
        };
        for (_, reply) in calls {
            let _ = reply.send(Err(self.closed_error(&reason)));
        }
        self.out_ready.notify_one();
    }

    fn closed_error(&self, reason: &str) -> Error {
        match &self.lock_pending().refused {
            Some(e) => e.duplicate(),
            None => Error::ConnectionClosed {
                addr: self.addr.clone(),
                reason: reason.to_string(),
            },
        }
    }
}

/// A live connection to one server for one service. Dropping the last handle closes it.
pub(crate) struct RpcConnection {
    shared: Arc<Shared>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Drop for RpcConnection {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

/// Removes a call's entry if its caller gives up (timeout or a dropped future).
struct CallGuard<'a> {
    shared: &'a Shared,
    call_id: u32,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.shared.lock_pending().calls.remove(&self.call_id);
    }
}

impl RpcConnection {
    /// Connects to `addr` (already mapped) of the server advertised as `host`, with the
    /// client's security (TLS, SASL), and sends the preamble and connection header.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn connect(
        addr: &str,
        host: &str,
        user: &str,
        service: Service,
        connect_timeout: Duration,
        counters: Arc<ServerCounters>,
        compression: CellBlockCompression,
        max_in_flight: usize,
        security: &Security,
    ) -> Result<RpcConnection> {
        let setup = security.establish(addr, host, service, user, compression.codec_class());
        let established = match tokio::time::timeout(connect_timeout, setup).await {
            Ok(Ok(established)) => established,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(Error::Timeout {
                    what: format!("connecting to {addr}"),
                    after: connect_timeout,
                })
            }
        };
        let (rd, wr) = (established.reader, established.writer);
        let shared = Arc::new(Shared {
            addr: addr.to_string(),
            counters,
            compression,
            pending: Mutex::new(Pending {
                calls: HashMap::new(),
                closed: None,
                refused: None,
            }),
            out: Mutex::new(BytesMut::with_capacity(64 * 1024)),
            out_ready: Notify::new(),
            next_call_id: AtomicU32::new(0),
            in_flight: Semaphore::new(max_in_flight.max(1)),
            sasl: established.sasl,
        });
        let reader = tokio::spawn(read_loop(shared.clone(), rd));
        let writer = tokio::spawn(write_loop(shared.clone(), wr));
        tracing::debug!(addr, service = service.name(), "connected");
        Ok(RpcConnection {
            shared,
            reader,
            writer,
        })
    }

    /// False once the connection failed or was closed; the pool then makes a new one.
    pub(crate) fn is_open(&self) -> bool {
        self.shared.lock_pending().closed.is_none()
    }

    /// Sends one call and waits for its response, at most `timeout`.
    pub(crate) async fn call(
        &self,
        meta: RequestMeta<'_>,
        param: &impl Message,
        cellblock: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<ResponseBody> {
        let shared = &*self.shared;
        let deadline = tokio::time::Instant::now() + timeout;
        // Beyond the cap, wait here (FIFO) rather than overflow the server's call queue.
        let _permit = match shared.in_flight.try_acquire() {
            Ok(permit) => permit,
            Err(_) => match tokio::time::timeout_at(deadline, shared.in_flight.acquire()).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(_)) => unreachable!("the in-flight semaphore is never closed"),
                Err(_) => {
                    return Err(Error::Timeout {
                        what: format!(
                            "{} call to {} (queued in the client)",
                            meta.method, shared.addr
                        ),
                        after: timeout,
                    })
                }
            },
        };
        let call_id = shared.next_call_id.fetch_add(1, Ordering::Relaxed) & 0x7fff_ffff;
        let (tx, rx) = oneshot::channel();
        {
            let mut p = shared.lock_pending();
            if let Some(reason) = &p.closed {
                let reason = reason.clone();
                drop(p);
                return Err(shared.closed_error(&reason));
            }
            p.calls.insert(call_id, tx);
        }
        let _guard = CallGuard { shared, call_id };
        let compressed;
        let cellblock = match (shared.compression, cellblock) {
            (CellBlockCompression::Snappy, Some(raw)) => {
                compressed = compression::compress_snappy(raw)?;
                Some(&compressed[..])
            }
            (_, cellblock) => cellblock,
        };
        let sent = {
            let mut out = shared.out.lock().unwrap_or_else(|e| e.into_inner());
            let before = out.len();
            frame::encode_request(&mut out, call_id, meta, param, cellblock);
            out.len() - before
        };
        shared.out_ready.notify_one();
        let c = &shared.counters;
        ServerCounters::add(&c.calls, 1);
        ServerCounters::add(&c.bytes_sent, sent as u64);
        if meta.method == "Multi" {
            ServerCounters::add(&c.multi_calls, 1);
        }
        let result = Self::await_reply(shared, meta.method, rx, deadline, timeout).await;
        if result.is_err() {
            ServerCounters::add(&c.errors, 1);
        }
        result
    }

    async fn await_reply(
        shared: &Shared,
        method: &str,
        rx: oneshot::Receiver<Result<ResponseBody>>,
        deadline: tokio::time::Instant,
        timeout: Duration,
    ) -> Result<ResponseBody> {
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(Error::ConnectionClosed {
                addr: shared.addr.clone(),
                reason: "connection task ended".into(),
            }),
            Err(_) => Err(Error::Timeout {
                what: format!("{method} call to {}", shared.addr),
                after: timeout,
            }),
        }
    }
}

async fn write_loop(shared: Arc<Shared>, mut wr: Writer) {
    loop {
        shared.out_ready.notified().await;
        // Let the other runnable tasks go first: a caller's notify puts this task in the
        // scheduler's next-to-run slot, so without the yield every call is its own send();
        // after it, the calls those tasks encode go out in the same write.
        tokio::task::yield_now().await;
        if shared.lock_pending().closed.is_some() {
            let _ = wr.shutdown().await;
            return;
        }
        let batch = {
            let mut out = shared.out.lock().unwrap_or_else(|e| e.into_inner());
            if out.is_empty() {
                continue;
            }
            out.split()
        };
        let batch = match shared.sasl.as_deref().filter(|s| s.wraps()) {
            None => batch,
            Some(sasl) => {
                let mut sealed = BytesMut::with_capacity(batch.len() + 128);
                if let Err(e) = sasl.seal(&batch, &mut sealed) {
                    shared.close(e.to_string(), None);
                    return;
                }
                sealed
            }
        };
        if let Err(e) = wr.write_all(&batch).await {
            shared.close(format!("write failed: {e}"), None);
            return;
        }
    }
}

async fn read_loop(shared: Arc<Shared>, mut rd: Reader) {
    let (reason, refused) = match read_frames(&shared, &mut rd).await {
        Ok(()) => ("server closed the connection".to_string(), None),
        Err(e) if e.kind() == crate::ErrorKind::Authentication => (e.to_string(), Some(e)),
        Err(e) => (e.to_string(), None),
    };
    shared.close(reason, refused);
}

/// Reads the server's bytes into `buf` (unwrapping SASL tokens when the session wraps);
/// false at the end of the stream.
async fn fill(
    shared: &Shared,
    rd: &mut Reader,
    buf: &mut BytesMut,
    wrapped: &mut BytesMut,
    first: &mut bool,
) -> Result<bool> {
    let sasl = shared.sasl.as_deref();
    let target = if sasl.is_some_and(|s| s.wraps()) {
        &mut *wrapped
    } else {
        &mut *buf
    };
    let n = rd
        .read_buf(target)
        .await
        .map_err(|source| Error::Connection {
            addr: shared.addr.clone(),
            source,
        })?;
    if n == 0 {
        return Ok(false);
    }
    if let Some(sasl) = sasl {
        // A server that rejected our last SASL token answers with a SASL error, not a frame.
        if *first && target.len() >= 8 {
            *first = false;
            if let Some(e) = super::sasl::late_sasl_error(target, &shared.addr) {
                return Err(e);
            }
        }
        if sasl.wraps() {
            sasl.open_into(wrapped, buf)?;
        }
    }
    Ok(true)
}

async fn read_frames(shared: &Shared, rd: &mut Reader) -> Result<()> {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut wrapped = BytesMut::new();
    let mut first = true;
    loop {
        while buf.len() >= 4 {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if len > frame::MAX_FRAME_LEN {
                return Err(Error::Protocol(format!(
                    "response frame of {len} bytes is too large"
                )));
            }
            if buf.len() < 4 + len {
                // Grow as the bytes arrive: a corrupt length below the limit must not
                // allocate hundreds of MiB up front.
                buf.reserve((4 + len - buf.len()).min(1 << 20));
                break;
            }
            buf.advance(4);
            ServerCounters::add(&shared.counters.bytes_received, 4 + len as u64);
            let response = frame::decode_response(buf.split_to(len).freeze())?;
            dispatch(shared, response)?;
        }
        if !fill(shared, rd, &mut buf, &mut wrapped, &mut first).await? {
            return Ok(());
        }
    }
}

/// Connection-level exceptions that mean "not with these credentials".
fn is_refusal(e: &crate::error::RemoteException) -> bool {
    matches!(
        e.short_class_name(),
        "AccessDeniedException" | "BadAuthException" | "SaslException" | "AuthorizationException"
    )
}

fn dispatch(shared: &Shared, response: frame::Response) -> Result<()> {
    if response.call_id == u32::MAX {
        // A connection-level error (bad header, unsupported codec…): the server closes next.
        return Err(match response.body {
            Err(exception) if is_refusal(&exception) => Error::Authentication {
                server: Some(shared.addr.clone()),
                message: format!(
                    "the server refused the connection: {exception}{}",
                    if shared.sasl.is_none() {
                        " (a secured cluster needs ClientConfig::kerberos)"
                    } else {
                        ""
                    }
                ),
            },
            Err(exception) => Error::Remote {
                server: shared.addr.clone(),
                exception,
            },
            Ok(_) => Error::Protocol("response without call id".into()),
        });
    }
    let reply = shared.lock_pending().calls.remove(&response.call_id);
    let mut body = response.body.map_err(|exception| Error::Remote {
        server: shared.addr.clone(),
        exception,
    });
    let mut corrupt = None;
    if let (CellBlockCompression::Snappy, Ok(b)) = (shared.compression, &mut body) {
        if !b.cellblock.is_empty() {
            match compression::decompress_snappy(&b.cellblock) {
                Ok(raw) => b.cellblock = raw,
                Err(e) => corrupt = Some(e),
            }
        }
    }
    if let Some(e) = corrupt {
        if let Some(reply) = reply {
            let _ = reply.send(Err(e.duplicate()));
        }
        return Err(e);
    }
    // No entry: the caller timed out or went away; drop the late answer.
    if let Some(reply) = reply {
        let _ = reply.send(body);
    }
    Ok(())
}
