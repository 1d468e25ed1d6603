//! `BufferedMutator`: client-side write buffering (autoflush off).
//!
//! `mutate` appends to a buffer. When the buffer reaches its size, it is handed to a flusher
//! task, which sends it as one `Multi` per server (retrying failed actions after relocation).
//! A new buffer fills meanwhile; if it fills too while a flush is still running, `mutate`
//! waits: memory stays bounded at about two buffers. Batches are flushed one at a time in the
//! order they were cut, so later writes to a row never overtake earlier ones.
//!
//! Every mutation is either acknowledged by HBase or reported back, with its row and error,
//! by `flush`/`close` and the optional failure listener.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, Notify};

use crate::error::{Error, FailedMutation, Result};
use crate::ops::{Action, Mutation};
use crate::region::TableName;
use crate::runtime::Runtime;

/// Called with each mutation that failed for good.
pub type FailureListener = Arc<dyn Fn(&FailedMutation) + Send + Sync>;

/// Settings of a [`BufferedMutator`].
#[derive(Clone)]
pub struct MutatorConfig {
    write_buffer_size: usize,
    periodic_flush: Option<Duration>,
    listener: Option<FailureListener>,
}

impl Default for MutatorConfig {
    fn default() -> Self {
        MutatorConfig {
            write_buffer_size: 2 * 1024 * 1024,
            periodic_flush: None,
            listener: None,
        }
    }
}

impl std::fmt::Debug for MutatorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutatorConfig")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("periodic_flush", &self.periodic_flush)
            .field("listener", &self.listener.is_some())
            .finish()
    }
}

impl MutatorConfig {
    /// Bytes buffered before a flush starts (default 2 MiB, as HBase's `hbase.client.write.buffer`).
    pub fn write_buffer_size(mut self, bytes: usize) -> Self {
        self.write_buffer_size = bytes.max(1);
        self
    }

    /// Also flush whatever is buffered every `interval` (default: never).
    pub fn periodic_flush(mut self, interval: Duration) -> Self {
        self.periodic_flush = Some(interval);
        self
    }

    /// Called for every mutation that fails for good, as soon as it does.
    pub fn on_failure(
        mut self,
        listener: impl Fn(&FailedMutation) + Send + Sync + 'static,
    ) -> Self {
        self.listener = Some(Arc::new(listener));
        self
    }
}

struct Batch {
    mutations: Vec<Mutation>,
    bytes: usize,
}

#[derive(Default)]
struct State {
    buffer: Vec<Mutation>,
    buffered_bytes: usize,
    /// Bytes handed to the flusher and not yet answered.
    in_flight_bytes: usize,
    in_flight_batches: usize,
    failures: Vec<FailedMutation>,
    closed: bool,
}

/// What the flusher task shares with the handles.
struct Core {
    inner: Arc<Runtime>,
    table: TableName,
    config: MutatorConfig,
    state: Mutex<State>,
    /// Signalled whenever a batch completes.
    progress: Notify,
}

impl Core {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct Handle {
    core: Arc<Core>,
    batches: mpsc::UnboundedSender<Batch>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let st = self.core.lock();
        if !st.closed && !st.buffer.is_empty() {
            let msg = format!(
                "BufferedMutator for {} dropped without close(): {} buffered mutations ({} bytes) were never sent",
                self.core.table,
                st.buffer.len(),
                st.buffered_bytes
            );
            tracing::error!("{msg}");
        }
    }
}

/// Buffers puts and deletes of one table and sends them in batches. Cheap to clone; clones
/// share one buffer. Call [`close`](BufferedMutator::close) when done: dropping the last
/// handle with mutations still buffered loses them (and logs an error saying so).
#[derive(Clone)]
pub struct BufferedMutator {
    handle: Arc<Handle>,
}

impl BufferedMutator {
    pub(crate) fn new(
        inner: Arc<Runtime>,
        table: TableName,
        config: MutatorConfig,
    ) -> BufferedMutator {
        let periodic = config.periodic_flush;
        let core = Arc::new(Core {
            inner,
            table,
            config,
            state: Mutex::new(State::default()),
            progress: Notify::new(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(flusher(core.clone(), rx));
        let handle = Arc::new(Handle { core, batches: tx });
        if let Some(interval) = periodic {
            tokio::spawn(periodic_flusher(Arc::downgrade(&handle), interval));
        }
        BufferedMutator { handle }
    }

    /// The table written to.
    pub fn table(&self) -> &TableName {
        &self.handle.core.table
    }

    /// Buffers a put or delete. Returns at once unless the buffer is full while the previous
    /// flush is still running; then it waits for that flush (backpressure).
    pub async fn mutate(&self, mutation: impl Into<Mutation>) -> Result<()> {
        let mutation = mutation.into();
        mutation.validate()?;
        let size = mutation.heap_size();
        let core = &*self.handle.core;
        let limit = core.config.write_buffer_size;
        let mut mutation = Some(mutation);
        loop {
            let progress = core.progress.notified();
            {
                let mut st = core.lock();
                if st.closed {
                    return Err(Error::InvalidInput("the BufferedMutator is closed".into()));
                }
                if st.buffered_bytes < limit || st.in_flight_bytes == 0 {
                    st.buffer.push(mutation.take().expect("pushed once"));
                    st.buffered_bytes += size;
                    if st.buffered_bytes >= limit && st.in_flight_bytes == 0 {
                        self.cut_batch(&mut st);
                    }
                    return Ok(());
                }
            }
            progress.await;
        }
    }

    /// Hands the buffer to the flusher (caller holds the state lock).
    fn cut_batch(&self, st: &mut State) {
        if st.buffer.is_empty() {
            return;
        }
        let capacity = st.buffer.len();
        let mutations = std::mem::replace(&mut st.buffer, Vec::with_capacity(capacity));
        let bytes = std::mem::take(&mut st.buffered_bytes);
        st.in_flight_bytes += bytes;
        st.in_flight_batches += 1;
        if self
            .handle
            .batches
            .send(Batch { mutations, bytes })
            .is_err()
        {
            // The runtime is shutting down; nothing can be sent any more.
            st.in_flight_bytes -= bytes;
            st.in_flight_batches -= 1;
        }
    }

    /// Sends everything buffered and waits until HBase answered all of it. Returns the
    /// mutations that failed since the last flush as [`Error::MutationsFailed`].
    pub async fn flush(&self) -> Result<()> {
        let core = &*self.handle.core;
        loop {
            let progress = core.progress.notified();
            {
                let mut st = core.lock();
                if !st.buffer.is_empty() {
                    self.cut_batch(&mut st);
                }
                if st.in_flight_batches == 0 {
                    let failures = std::mem::take(&mut st.failures);
                    return if failures.is_empty() {
                        Ok(())
                    } else {
                        Err(Error::MutationsFailed { failures })
                    };
                }
            }
            progress.await;
        }
    }

    /// Flushes, then refuses further mutations.
    pub async fn close(&self) -> Result<()> {
        let result = self.flush().await;
        self.handle.core.lock().closed = true;
        result
    }

    /// Bytes currently buffered and not yet handed to a flush.
    pub fn buffered_bytes(&self) -> usize {
        self.handle.core.lock().buffered_bytes
    }
}

async fn flusher(core: Arc<Core>, mut batches: mpsc::UnboundedReceiver<Batch>) {
    while let Some(batch) = batches.recv().await {
        let bytes = batch.bytes;
        let actions: Vec<Action> = batch.mutations.into_iter().map(Action::from).collect();
        let rt = &core.inner;
        let outcomes = crate::multi::run(rt, &rt.defaults, &core.table, &actions).await;
        let mut failures = Vec::new();
        for (action, outcome) in actions.iter().zip(outcomes) {
            if let Err(error) = outcome {
                let failed = FailedMutation {
                    row: action.row().clone(),
                    error,
                };
                if let Some(listener) = &core.config.listener {
                    listener(&failed);
                }
                failures.push(failed);
            }
        }
        if !failures.is_empty() {
            tracing::warn!(table = %core.table, failed = failures.len(), "buffered mutations failed");
        }
        {
            let mut st = core.lock();
            st.in_flight_bytes -= bytes;
            st.in_flight_batches -= 1;
            st.failures.extend(failures);
            // If the buffer filled up while this batch was out, cut it now.
        }
        core.progress.notify_waiters();
    }
}

async fn periodic_flusher(handle: Weak<Handle>, interval: Duration) {
    let mut tick = tokio::time::interval(interval);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(handle) = handle.upgrade() else {
            return;
        };
        let mutator = BufferedMutator { handle };
        let mut st = mutator.handle.core.lock();
        if st.closed {
            return;
        }
        if st.in_flight_batches == 0 {
            mutator.cut_batch(&mut st);
        }
    }
}
