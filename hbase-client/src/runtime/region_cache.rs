//! The region location cache: per table, ordered by start key.
//!
//! Inserting a region evicts every cached region whose key range overlaps it, so the cache
//! heals itself after splits and merges as soon as one new location is learned.

use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;

use bytes::Bytes;

use crate::region::{Location, ServerName, TableName};

#[derive(Default)]
pub(crate) struct RegionCache {
    tables: RwLock<HashMap<TableName, BTreeMap<Bytes, Location>>>,
}

impl RegionCache {
    /// The cached region of `table` that contains `row`.
    pub(crate) fn find(&self, table: &TableName, row: &[u8]) -> Option<Location> {
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        let regions = tables.get(table)?;
        let (_, loc) = regions
            .range::<[u8], _>((std::ops::Bound::Unbounded, std::ops::Bound::Included(row)))
            .next_back()?;
        loc.region.contains(row).then(|| loc.clone())
    }

    /// The cached region of `table` whose end key is `key`.
    pub(crate) fn find_ending_at(&self, table: &TableName, key: &[u8]) -> Option<Location> {
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        let (_, loc) = tables
            .get(table)?
            .range::<[u8], _>((std::ops::Bound::Unbounded, std::ops::Bound::Excluded(key)))
            .next_back()?;
        (&loc.region.end_key[..] == key).then(|| loc.clone())
    }

    /// The cached last region of `table`.
    pub(crate) fn find_last(&self, table: &TableName) -> Option<Location> {
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        let (_, loc) = tables.get(table)?.iter().next_back()?;
        loc.region.end_key.is_empty().then(|| loc.clone())
    }

    /// Caches `loc`, evicting overlapping regions. Split parents and offline regions are ignored.
    pub(crate) fn insert(&self, loc: Location) {
        if loc.region.split || loc.region.offline {
            return;
        }
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let regions = tables.entry(loc.region.table.clone()).or_default();
        let start = loc.region.start_key.clone();
        let end = loc.region.end_key.clone();
        // Regions starting inside [start, end) overlap, and so does the one starting before
        // `start` if it reaches past it.
        let mut doomed: Vec<Bytes> = regions
            .range(start.clone()..)
            .take_while(|(k, _)| end.is_empty() || k[..] < end[..])
            .map(|(k, _)| k.clone())
            .collect();
        if let Some((k, before)) = regions.range(..start.clone()).next_back() {
            if before.region.end_key.is_empty() || before.region.end_key[..] > start[..] {
                doomed.push(k.clone());
            }
        }
        for k in doomed {
            regions.remove(&k);
        }
        regions.insert(start, loc);
    }

    /// Forgets `loc` if it is still the cached entry for its region.
    pub(crate) fn invalidate(&self, loc: &Location) {
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        if let Some(regions) = tables.get_mut(&loc.region.table) {
            if regions.get(&loc.region.start_key).is_some_and(|cached| {
                cached.region.name == loc.region.name && cached.server == loc.server
            }) {
                regions.remove(&loc.region.start_key);
            }
        }
    }

    /// Forgets every region cached on `server`'s address (it stopped, restarted or is
    /// unreachable), whatever the start code: a location learned from a RegionMovedException
    /// has none (0), and a restarted server has a new one at the same address.
    pub(crate) fn invalidate_server(&self, server: &ServerName) {
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        for regions in tables.values_mut() {
            regions
                .retain(|_, loc| loc.server.host != server.host || loc.server.port != server.port);
        }
    }

    /// Forgets every region of `table`.
    pub(crate) fn invalidate_table(&self, table: &TableName) {
        self.tables
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(table);
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
