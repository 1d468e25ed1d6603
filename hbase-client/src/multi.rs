//! Running many actions of one table as `Multi` RPCs: one per server per round, with a
//! `RegionAction` per region. Failed actions are retried (after relocation) in later rounds;
//! actions that succeeded are never sent again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;

use crate::client::ClientInner;
use crate::error::{Error, RemoteException, Result};
use crate::ops::{region_specifier, result_from_proto, Action, ActionResult};
use crate::region::{Location, ServerName, TableName};
use crate::retry::{recovery, Recovery};
use crate::rpc::cellblock::CellBlockReader;
use crate::rpc::frame::{RequestMeta, Service};

/// One server's share of a round: its regions, each with the indexes of its actions.
struct ServerBatch {
    server: ServerName,
    regions: Vec<(Location, Vec<usize>)>,
}

/// Runs `actions` against `table`; returns one outcome per action, in order.
pub(crate) async fn run(
    inner: &Arc<ClientInner>,
    table: &TableName,
    actions: &[Action],
    deadline: Instant,
) -> Vec<Result<ActionResult>> {
    let mut outcomes: Vec<Option<Result<ActionResult>>> = Vec::with_capacity(actions.len());
    let mut pending = Vec::with_capacity(actions.len());
    for (i, action) in actions.iter().enumerate() {
        match action.validate(inner.config.keyvalue_max_size) {
            Ok(()) => {
                outcomes.push(None);
                pending.push(i);
            }
            Err(e) => outcomes.push(Some(Err(e))),
        }
    }
    let mut round = 0u32;
    while !pending.is_empty() {
        round += 1;
        let mut failed: Vec<(usize, Error)> = Vec::new();
        let batches = group_by_server(inner, table, actions, &pending, deadline, &mut failed).await;
        let sends = batches
            .into_iter()
            .map(|b| send(inner, actions, b, deadline));
        for (idx, outcome) in futures_util::future::join_all(sends)
            .await
            .into_iter()
            .flatten()
        {
            match outcome {
                Ok(r) => outcomes[idx] = Some(Ok(r)),
                Err(e) => failed.push((idx, e)),
            }
        }
        pending.clear();
        let mut pause = None;
        let disabled = round >= 2
            && failed.iter().any(|(_, e)| e.is_region_unavailable())
            && crate::table::table_disabled(inner, table).await;
        for (idx, e) in failed {
            if disabled && e.is_region_unavailable() {
                outcomes[idx] = Some(Err(Error::TableDisabled(table.to_string())));
                continue;
            }
            if recovery(&e) == Recovery::Fail {
                outcomes[idx] = Some(Err(e));
                continue;
            }
            match inner.retry_policy.next_pause(round, &e) {
                Some(p) if Instant::now() + p < deadline => {
                    pause = pause.max(Some(p));
                    pending.push(idx);
                }
                _ => {
                    outcomes[idx] = Some(Err(Error::RetriesExhausted {
                        attempts: round,
                        last: Box::new(e),
                    }))
                }
            }
        }
        if let Some(p) = pause {
            tracing::debug!(%table, round, retrying = pending.len(), ?p, "batch round had failures");
            tokio::time::sleep(p).await;
        }
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(Error::Protocol("action left without an outcome".into()))))
        .collect()
}

async fn group_by_server(
    inner: &ClientInner,
    table: &TableName,
    actions: &[Action],
    pending: &[usize],
    deadline: Instant,
    failed: &mut Vec<(usize, Error)>,
) -> Vec<ServerBatch> {
    let mut by_server: HashMap<ServerName, HashMap<bytes::Bytes, (Location, Vec<usize>)>> =
        HashMap::new();
    let limit = inner.config.operation_timeout;
    for &idx in pending {
        // Bounded by the batch's deadline: with meta unreachable, every action fails by then
        // instead of each waiting out its own lookup.
        let located = inner
            .locator
            .locate_before(table, actions[idx].row(), deadline, limit)
            .await;
        match located {
            Ok(loc) => {
                let regions = by_server.entry(loc.server.clone()).or_default();
                regions
                    .entry(loc.region.name.clone())
                    .or_insert_with(|| (loc.clone(), Vec::new()))
                    .1
                    .push(idx);
            }
            Err(e) => failed.push((idx, e)),
        }
    }
    by_server
        .into_iter()
        .map(|(server, regions)| ServerBatch {
            server,
            regions: regions.into_values().collect(),
        })
        .collect()
}

/// Sends one server's Multi and maps every action to its outcome.
async fn send(
    inner: &Arc<ClientInner>,
    actions: &[Action],
    batch: ServerBatch,
    deadline: Instant,
) -> Vec<(usize, Result<ActionResult>)> {
    let mut cellblock = BytesMut::new();
    let mut req = hbase_proto::MultiRequest::default();
    let mut order: Vec<usize> = Vec::new();
    for (loc, idxs) in &batch.regions {
        let mut ra = hbase_proto::RegionAction {
            region: region_specifier(&loc.region.name),
            ..Default::default()
        };
        for &idx in idxs {
            ra.action
                .push(actions[idx].to_proto(order.len() as u32, &mut cellblock));
            order.push(idx);
        }
        req.region_action.push(ra);
    }
    let fail_all = |e: &Error| {
        order
            .iter()
            .map(|&i| (i, Err(e.duplicate())))
            .collect::<Vec<_>>()
    };
    let conn = match inner.pool.get(&batch.server, Service::Client).await {
        Ok(c) => c,
        Err(e) => {
            inner.locator.cache().invalidate_server(&batch.server);
            return fail_all(&e);
        }
    };
    let timeout = inner
        .config
        .rpc_timeout
        .min(deadline.saturating_duration_since(Instant::now()))
        .max(std::time::Duration::from_millis(1));
    let meta = RequestMeta {
        method: "Multi",
        timeout_ms: timeout.as_millis() as u32,
        priority: 0,
    };
    let cb = (!cellblock.is_empty()).then_some(&cellblock[..]);
    let body = match conn.call(meta, &req, cb, timeout).await {
        Ok(body) => body,
        Err(e) => {
            inner.forget_stale(
                &batch.server,
                &conn,
                batch.regions.iter().map(|(l, _)| l),
                &e,
            );
            return fail_all(&e);
        }
    };
    let resp: hbase_proto::MultiResponse = match body.decode() {
        Ok(r) => r,
        Err(e) => return fail_all(&e),
    };
    let mut cells = CellBlockReader::new(body.cellblock);
    let mut out = Vec::with_capacity(order.len());
    let server = batch.server.address();
    for ((loc, idxs), rar) in batch.regions.iter().zip(resp.region_action_result) {
        if let Some(ex) = rar.exception {
            let e = remote_from_pair(&server, ex);
            inner.forget_stale(&batch.server, &conn, [loc], &e);
            out.extend(idxs.iter().map(|&i| (i, Err(e.duplicate()))));
            continue;
        }
        let mut seen = vec![false; idxs.len()];
        for roe in rar.result_or_exception {
            let Some(pos) = roe.index.map(|i| i as usize).filter(|&i| i < order.len()) else {
                continue;
            };
            let idx = order[pos];
            if let Some(k) = idxs.iter().position(|&i| i == idx) {
                seen[k] = true;
            }
            let outcome = if let Some(ex) = roe.exception {
                let e = remote_from_pair(&server, ex);
                inner.forget_stale(&batch.server, &conn, [loc], &e);
                Err(e)
            } else {
                match (&actions[idx], roe.result) {
                    (Action::Get(_), Some(r)) => result_from_proto(r, &mut cells)
                        .map(|row| ActionResult::Row((!row.is_empty()).then_some(row))),
                    (Action::Get(_), None) => Ok(ActionResult::Row(None)),
                    (_, Some(r)) => {
                        // Mutations may carry (empty) results; keep the cell block in step.
                        result_from_proto(r, &mut cells).map(|_| ActionResult::Done)
                    }
                    (_, None) => Ok(ActionResult::Done),
                }
            };
            out.push((idx, outcome));
        }
        for (k, &idx) in idxs.iter().enumerate() {
            if !seen[k] {
                out.push((
                    idx,
                    Err(Error::Protocol(
                        "server returned no result for an action".into(),
                    )),
                ));
            }
        }
    }
    // Regions or actions the server left out of its answer.
    let answered: std::collections::HashSet<usize> = out.iter().map(|(i, _)| *i).collect();
    for &idx in &order {
        if !answered.contains(&idx) {
            out.push((
                idx,
                Err(Error::Protocol(
                    "server returned no result for a region".into(),
                )),
            ));
        }
    }
    out
}

/// A per-action or per-region exception of a Multi response.
fn remote_from_pair(server: &str, pair: hbase_proto::NameBytesPair) -> Error {
    let message = pair
        .value
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_default();
    let short = pair.name.rsplit('.').next().unwrap_or("").to_string();
    let moved_to = (short == "RegionMovedException")
        .then(|| parse_moved_message(&message))
        .flatten();
    Error::Remote {
        server: server.to_string(),
        exception: RemoteException {
            server_overloaded: matches!(
                short.as_str(),
                "CallQueueTooBigException" | "CallDroppedException"
            ),
            do_not_retry: false,
            class_name: pair.name,
            message,
            moved_to,
        },
    }
}

/// RegionMovedException's message: `Region moved to: hostname=H port=P startCode=S. …`.
fn parse_moved_message(message: &str) -> Option<String> {
    let host = message
        .split("hostname=")
        .nth(1)?
        .split_whitespace()
        .next()?;
    let port = message
        .split("port=")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?;
    Some(format!("{host}:{port}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn moved_message_parses() {
        let m = "Region moved to: hostname=127.0.0.1 port=40279 startCode=17960. As of locationSeqNum=12.";
        assert_eq!(
            super::parse_moved_message(m).as_deref(),
            Some("127.0.0.1:40279")
        );
        assert_eq!(super::parse_moved_message("nothing"), None);
    }
}
