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
//!
//! All mutators of one client share one memory bound ([`WriteBudget`], the client's
//! `write_buffer_limit`): bytes count from `mutate` until their batch is answered. A `mutate`
//! that would pass the bound hands its own buffer to its flusher and waits for answered batches
//! to release room; when nothing at all is in flight, it flushes every idle buffer, so the wait
//! always ends. Thousands of mutators with large buffers stay within the bound.

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
#[derive(Clone, Default)]
pub struct MutatorConfig {
    write_buffer_size: Option<usize>,
    periodic_flush: Option<Duration>,
    listener: Option<FailureListener>,
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
    /// Bytes buffered before a flush starts (default: the client's
    /// [`write_buffer_size`](crate::ClientConfig::write_buffer_size), 2 MiB unless
    /// `hbase.client.write.buffer` says otherwise).
    pub fn write_buffer_size(mut self, bytes: usize) -> Self {
        self.write_buffer_size = Some(bytes.max(1));
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

/// The bytes all mutators of one client hold (buffered, or handed to a flush and not yet
/// answered), and their bound.
pub(crate) struct WriteBudget {
    limit: usize,
    state: Mutex<BudgetState>,
    released: Notify,
    mutators: Mutex<Vec<Weak<Handle>>>,
}

#[derive(Default)]
struct BudgetState {
    held: usize,
    in_flight: usize,
}

impl WriteBudget {
    pub(crate) fn new(limit: usize) -> WriteBudget {
        WriteBudget {
            limit: limit.max(1),
            state: Mutex::new(BudgetState::default()),
            released: Notify::new(),
            mutators: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(&self, handle: &Arc<Handle>) {
        let mut m = self.mutators.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|w| w.strong_count() > 0);
        m.push(Arc::downgrade(handle));
    }

    /// Takes `bytes` when they fit (or when nothing is held: one oversized mutation passes).
    fn try_take(&self, bytes: usize) -> Result<(), bool> {
        let mut st = self.lock();
        if st.held == 0 || st.held + bytes <= self.limit {
            st.held += bytes;
            Ok(())
        } else {
            Err(st.in_flight == 0)
        }
    }

    fn sent(&self, bytes: usize) {
        self.lock().in_flight += bytes;
    }

    /// Bytes that were buffered and are gone (answered, failed, or never sendable).
    fn release(&self, bytes: usize, were_in_flight: bool) {
        {
            let mut st = self.lock();
            st.held = st.held.saturating_sub(bytes);
            if were_in_flight {
                st.in_flight = st.in_flight.saturating_sub(bytes);
            }
        }
        self.released.notify_waiters();
    }

    /// Hands every mutator's buffer to its flusher.
    fn flush_idle_buffers(&self) {
        let handles: Vec<Arc<Handle>> = self
            .mutators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for handle in handles {
            let m = BufferedMutator { handle };
            let mut st = m.handle.core.lock();
            m.cut_batch(&mut st);
        }
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
    /// The client's bound on what all its mutators hold.
    budget: Arc<WriteBudget>,
    table: TableName,
    config: MutatorConfig,
    write_buffer_size: usize,
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
        if st.buffered_bytes > 0 {
            self.core.budget.release(st.buffered_bytes, false);
        }
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
        budget: Arc<WriteBudget>,
        table: TableName,
        config: MutatorConfig,
    ) -> BufferedMutator {
        let periodic = config.periodic_flush;
        let write_buffer_size = config
            .write_buffer_size
            .unwrap_or(inner.config.write_buffer_size);
        let core = Arc::new(Core {
            inner,
            budget,
            table,
            config,
            write_buffer_size,
            state: Mutex::new(State::default()),
            progress: Notify::new(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(flusher(core.clone(), rx));
        let handle = Arc::new(Handle { core, batches: tx });
        handle.core.budget.register(&handle);
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
    /// flush is still running, or all mutators of the client together hold their
    /// [`write_buffer_limit`](crate::ClientConfigBuilder::write_buffer_limit); then it waits
    /// (backpressure).
    pub async fn mutate(&self, mutation: impl Into<Mutation>) -> Result<()> {
        let mutation = mutation.into();
        let core = &*self.handle.core;
        mutation.validate(core.inner.config.keyvalue_max_size)?;
        let size = mutation.heap_size();
        let limit = core.write_buffer_size;
        if core.lock().closed {
            return Err(Error::InvalidInput("the BufferedMutator is closed".into()));
        }
        self.take_budget(size).await;
        let mut mutation = Some(mutation);
        loop {
            let progress = core.progress.notified();
            {
                let mut st = core.lock();
                if st.closed {
                    core.budget.release(size, false);
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

    /// Waits until the client's write budget has room for `bytes`, flushing this buffer (and,
    /// when nothing is in flight anywhere, every idle one) so that room comes back.
    async fn take_budget(&self, bytes: usize) {
        let budget = &self.handle.core.budget;
        loop {
            let released = budget.released.notified();
            let nothing_in_flight = match budget.try_take(bytes) {
                Ok(()) => return,
                Err(nothing_in_flight) => nothing_in_flight,
            };
            {
                let mut st = self.handle.core.lock();
                self.cut_batch(&mut st);
            }
            if nothing_in_flight {
                budget.flush_idle_buffers();
            }
            // Woken by every answered batch; the timeout re-checks for buffers that filled
            // while nothing was in flight.
            let _ = tokio::time::timeout(Duration::from_millis(50), released).await;
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
        let budget = &self.handle.core.budget;
        budget.sent(bytes);
        if self
            .handle
            .batches
            .send(Batch { mutations, bytes })
            .is_err()
        {
            // The runtime is shutting down; nothing can be sent any more.
            st.in_flight_bytes -= bytes;
            st.in_flight_batches -= 1;
            budget.release(bytes, true);
        }
    }

    /// Bytes all mutators of this client hold together (buffered or in flight), counted
    /// against its [`write_buffer_limit`](crate::ClientConfigBuilder::write_buffer_limit).
    pub fn client_buffered_bytes(&self) -> usize {
        self.handle.core.budget.lock().held
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
        }
        core.budget.release(bytes, true);
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
