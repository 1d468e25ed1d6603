//! Java behaviours that YCSB's output depends on, reproduced so our numbers and reports line up
//! with the Java YCSB's: `ThreadLocalRandom`'s sequence (JDK 17), `String.hashCode`, and the
//! iteration order of Java's hash containers (YCSB prints its measurements in the order a
//! `ConcurrentHashMap` iterates them, and `BasicDB` prints fields and properties in `HashMap`
//! and `Properties` order).
//!
//! Every claim here is checked against the real JVM by `tests/ycsb_conformance.rs`: the
//! random sequence by `java_random_draws_what_thread_local_random_draws`, the container orders
//! by `hash_container_orders_as_the_jvm_iterates_them` (thousands of random field, measurement,
//! property and Unicode name sets, every container kind; the one limit is documented on
//! [`concurrent_hash_map_order`]).

use rand::RngCore;

pub use crate::util::java_string_hash;

/// `ThreadLocalRandom`'s seed increment (`GOLDEN_GAMMA`).
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

fn mix64(z: u64) -> u64 {
    let z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    let z = (z ^ (z >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    z ^ (z >> 33)
}

fn mix32(z: u64) -> u32 {
    let z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    ((z ^ (z >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53) >> 32) as u32
}

/// The random source of one YCSB client thread, drawing exactly what JDK 17's
/// `ThreadLocalRandom` draws: the seed steps by `GOLDEN_GAMMA + 2·threadId`; `nextLong` is the
/// Murmur3 finaliser of the seed, `nextInt` its 32-bit variant, and `nextDouble` is built from
/// two `nextInt`s (26 + 27 bits), as `java.util.Random.nextDouble` over `next(bits)`.
///
/// As a [`RngCore`], `next_u64` is `nextLong` and `next_u32` is `nextInt`; the generators take
/// doubles through [`crate::generator::next_double`], which is `nextDouble` here.
#[derive(Debug, Clone)]
pub struct JavaRandom {
    seed: u64,
    gamma: u64,
}

impl JavaRandom {
    /// The state a Java thread with id `thread_id` has after its seed was set to `seed`.
    pub fn new(seed: u64, thread_id: u64) -> JavaRandom {
        JavaRandom {
            seed,
            gamma: GOLDEN_GAMMA.wrapping_add(thread_id << 1),
        }
    }

    /// A source seeded from the operating system.
    pub fn from_entropy() -> JavaRandom {
        JavaRandom::new(rand::random(), 1)
    }

    fn next_seed(&mut self) -> u64 {
        self.seed = self.seed.wrapping_add(self.gamma);
        self.seed
    }

    /// `nextLong()`.
    pub fn next_long(&mut self) -> i64 {
        mix64(self.next_seed()) as i64
    }

    /// `nextInt()`.
    pub fn next_int(&mut self) -> i32 {
        mix32(self.next_seed()) as i32
    }

    /// `nextDouble()`: `((next(26) << 27) + next(27)) · 2⁻⁵³`.
    pub fn next_double(&mut self) -> f64 {
        let hi = (self.next_int() as u32 >> 6) as u64;
        let lo = (self.next_int() as u32 >> 5) as u64;
        ((hi << 27) + lo) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

impl RngCore for JavaRandom {
    fn next_u32(&mut self) -> u32 {
        self.next_int() as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.next_long() as u64
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// `ConcurrentHashMap.spread`.
fn chm_spread(h: i32) -> u32 {
    ((h as u32) ^ ((h as u32) >> 16)) & 0x7fff_ffff
}

/// The iteration order of a `new ConcurrentHashMap<>()` into which keys with these `hashCode`s
/// were put (each once, in this order): indices into `hashes`.
///
/// Keys go to bin `spread(h) & (n−1)` of a 16-bin table, appended to the bin's list; when the
/// size reaches ¾ of the table, it doubles, and each bin splits as `transfer` splits it (the
/// trailing run that moves together keeps its order, the nodes before it are prepended, so they
/// come out reversed). Iteration walks the bins in index order.
///
/// Not reproduced, here or in [`hash_map_order`]: a bin that reaches 9 keys. Java then grows
/// a table of fewer than 64 bins early, or turns the bin into a tree, and the order can differ
/// (13 of the 20 crafted sets of colliding names in the conformance test do). YCSB's names
/// never come near it: none of the test's 8,000 random name sets does.
pub fn concurrent_hash_map_order(hashes: &[i32]) -> Vec<usize> {
    let mut table: Vec<Vec<usize>> = vec![Vec::new(); 16];
    let mut size_ctl = 12usize;
    let mut size = 0usize;
    for (i, &h) in hashes.iter().enumerate() {
        let n = table.len();
        table[(chm_spread(h) as usize) & (n - 1)].push(i);
        size += 1;
        if size >= size_ctl {
            let n = table.len();
            let mut next: Vec<Vec<usize>> = vec![Vec::new(); n * 2];
            for (b, bin) in table.iter().enumerate() {
                if bin.is_empty() {
                    continue;
                }
                let bit = |k: usize| chm_spread(hashes[k]) as usize & n;
                // lastRun: the start of the trailing run of nodes with the same bit.
                let mut run_bit = bit(bin[0]);
                let mut last_run = 0;
                for (pos, &k) in bin.iter().enumerate().skip(1) {
                    if bit(k) != run_bit {
                        run_bit = bit(k);
                        last_run = pos;
                    }
                }
                let (mut low, mut high): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
                if run_bit == 0 {
                    low.extend_from_slice(&bin[last_run..]);
                } else {
                    high.extend_from_slice(&bin[last_run..]);
                }
                for &k in &bin[..last_run] {
                    if bit(k) == 0 {
                        low.insert(0, k);
                    } else {
                        high.insert(0, k);
                    }
                }
                next[b] = low;
                next[b + n] = high;
            }
            table = next;
            size_ctl = (n << 1) - (n >> 1);
        }
    }
    table.into_iter().flatten().collect()
}

/// The iteration order of a `HashMap` (or `HashSet`) with `capacity` buckets (a power of two;
/// 16 for `new HashMap<>()`) into which keys with these `hashCode`s were put in this order.
/// A resize keeps each bucket's relative order, so the order is by bucket of the final table,
/// then by insertion.
pub fn hash_map_order(hashes: &[i32], capacity: usize) -> Vec<usize> {
    let mut cap = capacity.max(1).next_power_of_two();
    let mut threshold = cap * 3 / 4;
    for size in 1..=hashes.len() {
        if size > threshold {
            cap *= 2;
            threshold = cap * 3 / 4;
        }
    }
    let bucket = |h: i32| (((h as u32) ^ ((h as u32) >> 16)) as usize) & (cap - 1);
    let mut idx: Vec<usize> = (0..hashes.len()).collect();
    idx.sort_by_key(|&i| (bucket(hashes[i]), i));
    idx
}

/// The bucket capacity of `new HashSet<>(collection)` of `n` elements: `max(n/.75 + 1, 16)`,
/// rounded up to a power of two.
pub fn hash_set_capacity(n: usize) -> usize {
    ((n as f32 / 0.75) as usize + 1).max(16).next_power_of_two()
}

/// The order `Properties.propertyNames()` enumerates keys set in this order: the keys are read
/// out of the properties' `ConcurrentHashMap` into a fresh `Hashtable` (11 buckets, doubling
/// plus one at ¾ load, new entries at the head of their chain), whose enumeration walks the
/// buckets from the last to the first.
pub fn properties_order(hashes: &[i32]) -> Vec<usize> {
    let mut table: Vec<Vec<usize>> = vec![Vec::new(); 11];
    let mut threshold = 8usize;
    let index = |h: i32, len: usize| ((h & 0x7fff_ffff) as usize) % len;
    for (count, k) in concurrent_hash_map_order(hashes).into_iter().enumerate() {
        if count >= threshold {
            let old = std::mem::take(&mut table);
            let len = old.len() * 2 + 1;
            table = vec![Vec::new(); len];
            threshold = len * 3 / 4;
            for chain in old.iter().rev() {
                for &e in chain {
                    table[index(hashes[e], len)].insert(0, e);
                }
            }
        }
        let len = table.len();
        table[index(hashes[k], len)].insert(0, k);
    }
    table.into_iter().rev().flatten().collect()
}

/// Sorts `items` as the container `order` function would iterate them, by their key's
/// `String.hashCode`.
pub fn in_java_order<T>(
    items: Vec<T>,
    key: impl Fn(&T) -> i32,
    order: fn(&[i32]) -> Vec<usize>,
) -> Vec<T> {
    let hashes: Vec<i32> = items.iter().map(&key).collect();
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order(&hashes)
        .into_iter()
        .map(|i| slots[i].take().expect("each index once"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_map_order_by_bucket_then_insertion() {
        // "b" (98) and "a" (97): bucket 2 and 1.
        assert_eq!(hash_map_order(&[98, 97], 16), vec![1, 0]);
        // Same bucket: insertion order.
        assert_eq!(hash_map_order(&[1, 17], 16), vec![0, 1]);
    }

    #[test]
    fn set_capacity() {
        assert_eq!(hash_set_capacity(10), 16);
        assert_eq!(hash_set_capacity(12), 32);
        assert_eq!(hash_set_capacity(20), 32);
    }
}
