//! Region topology: where a table's regions are, splitting and moving them, the live region
//! servers, the balancer switch, and region-server admin calls (AdminService).
//!
//! Splits and moves change only the cluster. The client's location cache is left as it is on
//! purpose: data operations find out from the servers' answers (NotServingRegion,
//! RegionMoved) and relocate, as they must when another client changes the topology.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::Admin;
use crate::error::exceptions::{self, Retry};
use crate::error::{Error, Result};
use crate::ops::region_specifier;
use crate::region::{RegionInfo, ServerName, TableName};
use crate::runtime::caller::Idempotency;

/// A region of a table and the server it is assigned to (none while in transition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRegion {
    /// The region.
    pub region: RegionInfo,
    /// Its server, if assigned.
    pub server: Option<ServerName>,
}

/// First and largest pause while polling for a topology change.
const POLL_FIRST: Duration = Duration::from_millis(25);
const POLL_MAX: Duration = Duration::from_millis(500);

impl Admin {
    /// The regions of a table in key order, with their servers, read from `hbase:meta` (not
    /// from the client's cache). Split parents and offline regions are left out.
    pub async fn list_regions(&self, table: &TableName) -> Result<Vec<TableRegion>> {
        let regions = self.meta_regions(table).await?;
        if regions.is_empty() && !self.table_exists(table).await? {
            return Err(Error::TableNotFound(table.to_string()));
        }
        Ok(regions
            .into_iter()
            .map(|(region, server)| TableRegion { region, server })
            .collect())
    }

    /// The region of `table` holding `row`, read from `hbase:meta` now.
    pub async fn region_for_row(&self, table: &TableName, row: &[u8]) -> Result<TableRegion> {
        self.list_regions(table)
            .await?
            .into_iter()
            .find(|r| r.region.contains(row))
            .ok_or_else(|| Error::RegionOffline {
                region: format!("{table},{}", String::from_utf8_lossy(row)),
            })
    }

    /// The live region servers, sorted by address: the children of ZooKeeper's `/hbase/rs`, or
    /// on the RPC connection registry the master's live servers.
    pub async fn region_servers(&self) -> Result<Vec<ServerName>> {
        self.rt.region_servers().await
    }

    /// The region server hosting `hbase:meta`, as the registry names it (ZooKeeper's
    /// `meta-region-server`, or a bootstrap server's answer), asked anew on every call.
    pub async fn meta_server(&self) -> Result<ServerName> {
        self.rt.registry.meta_server().await
    }

    /// The active master, as the registry names it (ZooKeeper's `/hbase/master`, or a
    /// bootstrap server's answer), asked anew on every call, so a master failover is followed.
    pub async fn master(&self) -> Result<ServerName> {
        self.rt.registry.master().await
    }

    /// The cluster id (the UUID in HBase's `hbase.id`), from the registry.
    pub async fn cluster_id(&self) -> Result<String> {
        self.rt.registry.cluster_id().await
    }

    /// Splits `region` at `split_key` and waits until both daughters are open and listed in
    /// `hbase:meta`; returns them in key order.
    ///
    /// The key must lie strictly inside the region (after its start key, before its end key),
    /// else the call fails at once with [`ErrorKind::DoNotRetry`](crate::ErrorKind::DoNotRetry).
    /// A region that still holds reference files from an earlier split cannot be split until
    /// it is compacted: this asks for the compaction and waits for it, within
    /// [`Admin::timeout`].
    pub async fn split_region(
        &self,
        region: &RegionInfo,
        split_key: &[u8],
    ) -> Result<(TableRegion, TableRegion)> {
        if split_key.is_empty() || !region.contains(split_key) || split_key == &region.start_key[..]
        {
            return Err(Error::InvalidInput(format!(
                "split key {:?} is not strictly inside region {} [{:?}, {:?})",
                String::from_utf8_lossy(split_key),
                region.encoded_name,
                String::from_utf8_lossy(&region.start_key),
                String::from_utf8_lossy(&region.end_key),
            )));
        }
        let deadline = Instant::now() + self.timeout;
        self.wait_splittable(region, deadline).await?;
        let req = hbase_proto::SplitTableRegionRequest {
            region_info: region_to_proto(region),
            split_row: Some(Bytes::copy_from_slice(split_key)),
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
        };
        let resp: hbase_proto::SplitTableRegionResponse =
            self.master_call("SplitRegion", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        let what = format!(
            "the daughters of region {} split at {:?}",
            region.encoded_name,
            String::from_utf8_lossy(split_key)
        );
        self.poll(deadline, &what, || async move {
            let regions = self.list_regions(&region.table).await?;
            let left = regions
                .iter()
                .find(|r| r.region.start_key == region.start_key && r.region.end_key == split_key);
            let right = regions
                .iter()
                .find(|r| r.region.start_key == split_key && r.region.end_key == region.end_key);
            let (Some(left), Some(right)) = (left, right) else {
                return Ok(None);
            };
            if self.is_open_on(left).await? && self.is_open_on(right).await? {
                Ok(Some((left.clone(), right.clone())))
            } else {
                Ok(None)
            }
        })
        .await
    }

    /// Splits the region of `table` that holds `split_key` at that key (see
    /// [`Admin::split_region`]). Fails with
    /// [`ErrorKind::DoNotRetry`](crate::ErrorKind::DoNotRetry) when the key already starts a
    /// region.
    pub async fn split_table_at(
        &self,
        table: &TableName,
        split_key: &[u8],
    ) -> Result<(TableRegion, TableRegion)> {
        let current = self.region_for_row(table, split_key).await?;
        self.split_region(&current.region, split_key).await
    }

    /// Moves `region` to `dest`, or to a server the master picks when `dest` is `None`, and
    /// waits until the region is open there; returns its new server.
    ///
    /// `dest` must be a live region server (a zero start code matches any); otherwise the call
    /// fails at once with [`ErrorKind::DoNotRetry`](crate::ErrorKind::DoNotRetry). An unknown
    /// region is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound). Moving a region to the
    /// server it is on does nothing. With `None` the master needs another live server.
    pub async fn move_region(
        &self,
        region: &RegionInfo,
        dest: Option<&ServerName>,
    ) -> Result<ServerName> {
        let dest = match dest {
            None => None,
            Some(wanted) => {
                let live = self.region_servers().await?;
                let found = live.iter().find(|s| {
                    s.host == wanted.host
                        && s.port == wanted.port
                        && (wanted.start_code == 0 || s.start_code == wanted.start_code)
                });
                match found {
                    Some(s) => Some(s.clone()),
                    None => {
                        let live: Vec<String> = live.iter().map(ToString::to_string).collect();
                        return Err(Error::InvalidInput(format!(
                            "{wanted} is not a live region server (live: {})",
                            live.join(" ")
                        )));
                    }
                }
            }
        };
        let deadline = Instant::now() + self.timeout;
        let source = self.find_region(region).await?.and_then(|r| r.server);
        if let (Some(dest), Some(source)) = (&dest, &source) {
            if dest == source {
                return Ok(dest.clone());
            }
        }
        let req = hbase_proto::MoveRegionRequest {
            region: hbase_proto::RegionSpecifier {
                r#type: hbase_proto::region_specifier::RegionSpecifierType::EncodedRegionName
                    as i32,
                value: Bytes::copy_from_slice(region.encoded_name.as_bytes()),
            },
            dest_server_name: dest.as_ref().map(server_to_proto),
        };
        let _: hbase_proto::MoveRegionResponse = self.master_call("MoveRegion", &req).await?;
        let what = format!("region {} to open after its move", region.encoded_name);
        let (dest, source) = (&dest, &source);
        self.poll(deadline, &what, || async move {
            let Some(now) = self.find_region(region).await? else {
                return Ok(None);
            };
            let Some(server) = now.server.clone() else {
                return Ok(None);
            };
            let arrived = match dest {
                Some(dest) => server == *dest,
                None => source.as_ref() != Some(&server),
            };
            if arrived && self.is_open_on(&now).await? {
                Ok(Some(server))
            } else {
                Ok(None)
            }
        })
        .await
    }

    /// Turns the balancer on or off; returns whether it was on before.
    pub async fn set_balancer_enabled(&self, on: bool) -> Result<bool> {
        let req = hbase_proto::SetBalancerRunningRequest {
            on,
            synchronous: Some(true),
        };
        let resp: hbase_proto::SetBalancerRunningResponse =
            self.master_call("SetBalancerRunning", &req).await?;
        Ok(resp.prev_balance_value.unwrap_or(false))
    }

    /// Whether the balancer is on.
    pub async fn is_balancer_enabled(&self) -> Result<bool> {
        let resp: hbase_proto::IsBalancerEnabledResponse = self
            .master_call(
                "IsBalancerEnabled",
                &hbase_proto::IsBalancerEnabledRequest {},
            )
            .await?;
        Ok(resp.enabled)
    }

    /// Runs the master's catalog janitor once, now (HBase's `Admin.runCatalogJanitor`): it
    /// scans `hbase:meta` and starts the clean-up of the parents of merged and split regions
    /// that nothing refers to any more (a procedure then deletes each parent's row, so a
    /// parent may be counted again by a run before that). Returns how many clean-ups the run
    /// counted, or `None` when the server's janitor was already running (HBase answers -1).
    /// The master also runs it on its own, every `hbase.catalogjanitor.interval` (5 minutes).
    pub async fn run_catalog_janitor(&self) -> Result<Option<u32>> {
        let resp: hbase_proto::RunCatalogScanResponse = self
            .master_call("RunCatalogScan", &hbase_proto::RunCatalogScanRequest {})
            .await?;
        Ok(u32::try_from(resp.scan_result.unwrap_or(0)).ok())
    }

    /// Runs the balancer once; true when it ran (it does not while regions are in transition
    /// or when it is switched off).
    pub async fn balance(&self) -> Result<bool> {
        let req = hbase_proto::BalanceRequest {
            ignore_rit: Some(false),
            dry_run: Some(false),
        };
        let resp: hbase_proto::BalanceResponse = self.master_call("Balance", &req).await?;
        Ok(resp.balancer_ran)
    }

    /// Asks a region server to stop (AdminService `StopServer`), for fault tests. The master
    /// then reassigns its regions. The server is not restarted.
    pub async fn stop_region_server(&self, server: &ServerName, reason: &str) -> Result<()> {
        let req = hbase_proto::StopServerRequest {
            reason: reason.to_string(),
        };
        let _: hbase_proto::StopServerResponse = self
            .region_server_call(server, "StopServer", &req, Idempotency::Idempotent)
            .await?;
        Ok(())
    }

    /// Flushes a region's memstore to a store file, on the server hosting it now.
    pub async fn flush_region(&self, region: &RegionInfo) -> Result<()> {
        let server = self.hosting_server(region).await?;
        let req = hbase_proto::FlushRegionRequest {
            region: region_specifier(&region.name),
            ..Default::default()
        };
        let _: hbase_proto::FlushRegionResponse = self
            .region_server_call(&server, "FlushRegion", &req, Idempotency::Idempotent)
            .await?;
        Ok(())
    }

    /// Asks the server hosting a region to compact it (`major`: all files into one). Returns
    /// once the compaction is queued.
    pub async fn compact_region(&self, region: &RegionInfo, major: bool) -> Result<()> {
        let server = self.hosting_server(region).await?;
        self.compact_on(&server, region, major).await
    }

    async fn compact_on(
        &self,
        server: &ServerName,
        region: &RegionInfo,
        major: bool,
    ) -> Result<()> {
        let req = hbase_proto::CompactRegionRequest {
            region: region_specifier(&region.name),
            major: Some(major),
            family: None,
        };
        let _: hbase_proto::CompactRegionResponse = self
            .region_server_call(server, "CompactRegion", &req, Idempotency::Idempotent)
            .await?;
        Ok(())
    }

    /// The server `region` is assigned to in meta now.
    async fn hosting_server(&self, region: &RegionInfo) -> Result<ServerName> {
        self.find_region(region)
            .await?
            .and_then(|r| r.server)
            .ok_or_else(|| Error::RegionOffline {
                region: String::from_utf8_lossy(&region.name).into_owned(),
            })
    }

    /// `region` as meta lists it now (by encoded name); `None` once it is split or merged away.
    async fn find_region(&self, region: &RegionInfo) -> Result<Option<TableRegion>> {
        Ok(self
            .meta_regions(&region.table)
            .await?
            .into_iter()
            .find(|(r, _)| r.encoded_name == region.encoded_name)
            .map(|(region, server)| TableRegion { region, server }))
    }

    /// True when the region's server says it serves the region. Errors that mean "not (yet)
    /// there" are false; others are returned.
    async fn is_open_on(&self, region: &TableRegion) -> Result<bool> {
        let Some(server) = &region.server else {
            return Ok(false);
        };
        match self.region_info_on(server, &region.region).await {
            Ok(_) => Ok(true),
            Err(e) if exceptions::verdict(&e).retry != Retry::No => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn region_info_on(
        &self,
        server: &ServerName,
        region: &RegionInfo,
    ) -> Result<hbase_proto::GetRegionInfoResponse> {
        let req = hbase_proto::GetRegionInfoRequest {
            region: region_specifier(&region.name),
            compaction_state: None,
            best_split_row: None,
        };
        self.region_server_call(server, "GetRegionInfo", &req, Idempotency::Read)
            .await
    }

    /// Waits until the server hosting `region` says it can be split, asking for a compaction
    /// once if it cannot (reference files left by an earlier split). A region no longer in meta
    /// is left for the master to report.
    async fn wait_splittable(&self, region: &RegionInfo, deadline: Instant) -> Result<()> {
        let compaction_asked = &AtomicBool::new(false);
        let what = format!(
            "region {} to become splittable (reference files from an earlier split are \
             removed by compaction)",
            region.encoded_name
        );
        self.poll(deadline, &what, || async move {
            let Some(now) = self.find_region(region).await? else {
                return Ok(Some(()));
            };
            let Some(server) = now.server else {
                return Ok(None);
            };
            let info = match self.region_info_on(&server, region).await {
                Ok(info) => info,
                Err(e) if exceptions::verdict(&e).retry != Retry::No => return Ok(None),
                Err(e) => return Err(e),
            };
            if info.splittable != Some(false) {
                return Ok(Some(()));
            }
            if !compaction_asked.swap(true, Ordering::Relaxed) {
                tracing::debug!(region = %region.encoded_name, "not splittable; compacting");
                if let Err(e) = self.compact_on(&server, region, false).await {
                    tracing::debug!(error = %e, "compaction request failed");
                }
            }
            Ok(None)
        })
        .await
    }

    /// Calls `check` with growing pauses until it returns a value or `deadline` passes.
    async fn poll<T, F, Fut>(&self, deadline: Instant, what: &str, mut check: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Option<T>>>,
    {
        let started = Instant::now();
        let mut pause = POLL_FIRST;
        loop {
            if let Some(v) = check().await? {
                return Ok(v);
            }
            if Instant::now() + pause >= deadline {
                return Err(Error::Timeout {
                    what: format!("waiting for {what}"),
                    after: deadline.saturating_duration_since(started),
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(POLL_MAX);
        }
    }
}

fn region_to_proto(r: &RegionInfo) -> hbase_proto::RegionInfo {
    hbase_proto::RegionInfo {
        region_id: r.region_id,
        table_name: r.table.to_proto(),
        start_key: Some(r.start_key.clone()),
        end_key: Some(r.end_key.clone()),
        offline: Some(r.offline),
        split: Some(r.split),
        replica_id: Some(r.replica_id),
    }
}

fn server_to_proto(s: &ServerName) -> hbase_proto::ServerName {
    hbase_proto::ServerName {
        host_name: s.host.clone(),
        port: Some(s.port as u32),
        start_code: Some(s.start_code),
    }
}
