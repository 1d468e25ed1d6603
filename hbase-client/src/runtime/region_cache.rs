//! The region location cache: per table, ordered by start key.
//!
//! Inserting a region evicts every cached region whose key range overlaps it, so the cache
//! heals itself after splits and merges as soon as one new location is learned.
//!
//! A generation counter moves whenever a cached location is dropped (evicted, invalidated),
//! so a caller that located a row can tell later, with one atomic load, that the location it
//! holds is still what the cache would answer (the buffered mutator locates a mutation when
//! it places it and sends it on that location unless the generation moved meanwhile).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use rustc_hash::FxHashMap;

use bytes::Bytes;

use super::region_map::RegionMap;
use crate::region::{Location, ServerName, TableName};

/// One table's cached regions, read under the cache's lock ([`RegionCache::with_table`]).
pub(crate) struct CachedTable<'a> {
    regions: Option<&'a RegionMap<Location>>,
}

impl CachedTable<'_> {
    /// The cached region that contains `row`.
    pub(crate) fn find(&self, row: &[u8]) -> Option<Location> {
        let (_, loc) = self.regions?.floor(row)?;
        loc.region.contains(row).then(|| loc.clone())
    }
}

#[derive(Default)]
pub(crate) struct RegionCache {
    /// FxHash: table names are few and chosen by the application; SipHash's defence against
    /// chosen keys is not needed for them and cost about 400 instructions per lookup.
    tables: RwLock<FxHashMap<TableName, RegionMap<Location>>>,
    /// Moves whenever a cached location is dropped.
    generation: AtomicU64,
}

impl RegionCache {
    /// The current generation: unchanged as long as no cached location was dropped, so a
    /// location found while it held is still the cached one.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// A cached location is being dropped (caller holds the write lock).
    fn dropped(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The cached region of `table` that contains `row`.
    pub(crate) fn find(&self, table: &TableName, row: &[u8]) -> Option<Location> {
        self.with_table(table, |cached| cached.find(row))
    }

    /// Runs `f` on `table`'s cached regions under one read lock and one lookup of the table,
    /// for finding many rows (each [`find`](Self::find) takes both).
    /// Keep `f` short: the cache takes no new locations while it runs.
    pub(crate) fn with_table<R>(
        &self,
        table: &TableName,
        f: impl FnOnce(&CachedTable<'_>) -> R,
    ) -> R {
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        f(&CachedTable {
            regions: tables.get(table),
        })
    }

    /// The cached region of `table` whose end key is `key`.
    pub(crate) fn find_ending_at(&self, table: &TableName, key: &[u8]) -> Option<Location> {
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        let (_, loc) = tables.get(table)?.below(key)?;
        (&loc.region.end_key[..] == key).then(|| loc.clone())
    }

    /// The cached last region of `table`.
    pub(crate) fn find_last(&self, table: &TableName) -> Option<Location> {
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        let (_, loc) = tables.get(table)?.last()?;
        loc.region.end_key.is_empty().then(|| loc.clone())
    }

    /// Caches `loc`, evicting overlapping regions. Split parents and offline regions are ignored.
    pub(crate) fn insert(&self, loc: Location) {
        if loc.region.split || loc.region.offline {
            return;
        }
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let regions = tables.entry(loc.region.table.clone()).or_default();
        // Learned again as it is cached (a meta lookup caches the predecessors of the region
        // it wanted too, mostly unchanged): nothing is dropped, so the locations found before
        // stay valid (the generation does not move) and the cached handle stays the same.
        if regions
            .get(&loc.region.start_key)
            .is_some_and(|cached| **cached == *loc)
        {
            return;
        }
        let start = loc.region.start_key.clone();
        let end = loc.region.end_key.clone();
        // Regions starting inside [start, end) overlap, and so does the one starting before
        // `start` if it reaches past it.
        let mut doomed: Vec<Bytes> = regions
            .from(&start)
            .take_while(|(k, _)| end.is_empty() || k[..] < end[..])
            .map(|(k, _)| k.clone())
            .collect();
        if let Some((k, before)) = regions.below(&start) {
            if before.region.end_key.is_empty() || before.region.end_key[..] > start[..] {
                doomed.push(k.clone());
            }
        }
        if !doomed.is_empty() {
            self.dropped();
        }
        for k in doomed {
            regions.remove(&k);
        }
        if regions.insert(start, loc).is_some() {
            self.dropped();
        }
    }

    /// Forgets `loc` if it is still the cached entry for its region.
    pub(crate) fn invalidate(&self, loc: &Location) {
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        if let Some(regions) = tables.get_mut(&loc.region.table) {
            if regions.get(&loc.region.start_key).is_some_and(|cached| {
                cached.region.name == loc.region.name && cached.server == loc.server
            }) {
                regions.remove(&loc.region.start_key);
                self.dropped();
            }
        }
    }

    /// Forgets every region cached on `server`'s address (it stopped, restarted or is
    /// unreachable), whatever the start code: a location learned from a RegionMovedException
    /// has none (0), and a restarted server has a new one at the same address.
    pub(crate) fn invalidate_server(&self, server: &ServerName) {
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let mut dropped = false;
        for regions in tables.values_mut() {
            regions.retain(|_, loc| {
                let keep = loc.server.host != server.host || loc.server.port != server.port;
                dropped |= !keep;
                keep
            });
        }
        if dropped {
            self.dropped();
        }
    }

    /// Forgets every region of `table`.
    pub(crate) fn invalidate_table(&self, table: &TableName) {
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        if tables.remove(table).is_some() {
            self.dropped();
        }
    }

    /// Number of cached regions of `table`.
    #[cfg(test)]
    pub(crate) fn len(&self, table: &TableName) -> usize {
        self.tables
            .read()
            .unwrap()
            .get(table)
            .map_or(0, |r| r.len())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::region::{RegionInfo, RegionLocation};

    fn loc(table: &TableName, start: &str, end: &str, id: u64, port: u16) -> Location {
        let p = hbase_proto::RegionInfo {
            region_id: id,
            table_name: table.to_proto(),
            start_key: Some(Bytes::copy_from_slice(start.as_bytes())),
            end_key: Some(Bytes::copy_from_slice(end.as_bytes())),
            ..Default::default()
        };
        Arc::new(RegionLocation {
            region: RegionInfo::from_proto(&p),
            server: ServerName {
                host: "h".into(),
                port,
                start_code: 1,
            },
        })
    }

    #[test]
    fn split_daughters_evict_parent_and_lookup_is_by_range() {
        let t = TableName::parse("t").unwrap();
        let cache = RegionCache::default();
        cache.insert(loc(&t, "", "m", 1, 1));
        cache.insert(loc(&t, "m", "", 1, 2));
        assert_eq!(cache.find(&t, b"a").unwrap().server.port, 1);
        assert_eq!(cache.find(&t, b"m").unwrap().server.port, 2);
        assert_eq!(cache.find(&t, b"zz").unwrap().server.port, 2);
        // [m, "") splits into [m, t) and [t, ""): the first daughter evicts the parent.
        cache.insert(loc(&t, "m", "t", 2, 3));
        assert_eq!(cache.len(&t), 2);
        assert_eq!(cache.find(&t, b"n").unwrap().server.port, 3);
        assert!(cache.find(&t, b"u").is_none());
        cache.insert(loc(&t, "t", "", 2, 4));
        assert_eq!(cache.find(&t, b"u").unwrap().server.port, 4);
        // A merge of everything evicts all three.
        cache.insert(loc(&t, "", "", 3, 5));
        assert_eq!(cache.len(&t), 1);
        cache.invalidate_server(&ServerName {
            host: "h".into(),
            port: 5,
            start_code: 1,
        });
        assert_eq!(cache.len(&t), 0);
    }

    #[test]
    fn dropping_a_server_drops_its_moved_locations_too() {
        let t = TableName::parse("t").unwrap();
        let cache = RegionCache::default();
        cache.insert(loc(&t, "", "m", 1, 7));
        // Learned from a RegionMovedException: host and port, no start code.
        let moved = loc(&t, "m", "", 1, 7);
        let moved = Arc::new(RegionLocation {
            region: moved.region.clone(),
            server: ServerName {
                start_code: 0,
                ..moved.server.clone()
            },
        });
        cache.insert(moved);
        cache.invalidate_server(&ServerName {
            host: "h".into(),
            port: 7,
            start_code: 1,
        });
        assert_eq!(cache.len(&t), 0);
    }

    #[test]
    fn the_generation_moves_only_when_a_location_is_dropped() {
        let t = TableName::parse("t").unwrap();
        let cache = RegionCache::default();
        let g0 = cache.generation();
        cache.insert(loc(&t, "", "m", 1, 1));
        cache.insert(loc(&t, "m", "", 1, 2));
        assert_eq!(cache.generation(), g0, "new regions drop nothing");
        assert!(cache.find(&t, b"a").is_some());
        assert_eq!(cache.generation(), g0, "lookups drop nothing");
        // Same start key, new server: the old location is replaced.
        cache.insert(loc(&t, "m", "", 1, 3));
        let g1 = cache.generation();
        assert_ne!(g1, g0);
        // A daughter evicts its parent.
        cache.insert(loc(&t, "m", "t", 2, 3));
        let g2 = cache.generation();
        assert_ne!(g2, g1);
        let stale = loc(&t, "", "m", 9, 1);
        cache.invalidate(&stale);
        assert_eq!(
            cache.generation(),
            g2,
            "not the cached entry: nothing dropped"
        );
        cache.invalidate(&cache.find(&t, b"a").unwrap());
        let g3 = cache.generation();
        assert_ne!(g3, g2);
        cache.invalidate_server(&ServerName {
            host: "h".into(),
            port: 9,
            start_code: 1,
        });
        assert_eq!(cache.generation(), g3, "no region on that server");
        cache.invalidate_table(&t);
        assert_ne!(cache.generation(), g3);
    }

    #[test]
    fn relearning_a_cached_location_drops_nothing_and_keeps_its_handle() {
        // Every meta lookup caches the wanted region and its predecessors again, most of them
        // unchanged: that must not move the generation (which voids the locations that
        // batches and the mutator found before it) nor replace the cached handle.
        let t = TableName::parse("t").unwrap();
        let cache = RegionCache::default();
        let first = loc(&t, "", "m", 1, 1);
        cache.insert(first.clone());
        cache.insert(loc(&t, "m", "", 1, 2));
        let g0 = cache.generation();
        cache.insert(loc(&t, "", "m", 1, 1));
        cache.insert(loc(&t, "m", "", 1, 2));
        assert_eq!(cache.generation(), g0, "equal locations drop nothing");
        assert!(Arc::ptr_eq(&cache.find(&t, b"a").unwrap(), &first));
        // The same region on another server, or another region at the same start, still
        // replaces it.
        cache.insert(loc(&t, "", "m", 1, 3));
        assert_ne!(cache.generation(), g0);
        assert_eq!(cache.find(&t, b"a").unwrap().server.port, 3);
        let g1 = cache.generation();
        cache.insert(loc(&t, "", "m", 2, 3));
        assert_ne!(cache.generation(), g1);
        assert_eq!(cache.find(&t, b"a").unwrap().region.region_id, 2);
    }

    #[test]
    fn invalidate_only_removes_the_same_entry() {
        let t = TableName::parse("t").unwrap();
        let cache = RegionCache::default();
        let old = loc(&t, "", "", 1, 1);
        cache.insert(old.clone());
        let new = loc(&t, "", "", 1, 2);
        cache.insert(new);
        cache.invalidate(&old);
        assert_eq!(cache.find(&t, b"x").unwrap().server.port, 2);
    }
}
