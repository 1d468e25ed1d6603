//! The tests PerformanceEvaluation offers, by their command-line names.

/// What one client does per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Puts rows `start..start + rows` in order.
    SequentialWrite,
    /// Puts rows at random keys in `0..total_rows`.
    RandomWrite,
    /// Gets rows `start..start + rows` in order.
    SequentialRead,
    /// Gets random rows.
    RandomRead,
    /// One scanner from the client's first row, one `next` per row.
    Scan,
    /// A scan of at most this many rows from a random key, per row.
    ScanRange(u32),
    /// A scan from a random key with a 120-row page filter, per row.
    RandomSeekScan,
    /// A full scan for a random value (normally matching nothing), per row.
    FilterScan,
    /// An increment of one column per family, on rows shared by all clients.
    Increment,
    /// An append per family, on rows shared by all clients.
    Append,
    /// A put, then a check-and-mutate that puts again.
    CheckAndMutate,
    /// A put, then a check-and-put.
    CheckAndPut,
    /// A put, then a check-and-delete.
    CheckAndDelete,
}

/// Every command: name, Java test class, description (as PerformanceEvaluation's usage
/// lists them, in its order). The `async*` commands run the same code as their synchronous
/// twins, since this client is asynchronous throughout.
pub const COMMANDS: &[(&str, Command, &str, &str)] = &[
    ("append", Command::Append, "AppendTest", "Append on each row; clients overlap on keyspace so some concurrent operations"),
    ("asyncRandomRead", Command::RandomRead, "AsyncRandomReadTest", "Run async random read test"),
    ("asyncRandomWrite", Command::RandomWrite, "AsyncRandomWriteTest", "Run async random write test"),
    ("asyncScan", Command::Scan, "AsyncScanTest", "Run async scan test (read every row)"),
    ("asyncSequentialRead", Command::SequentialRead, "AsyncSequentialReadTest", "Run async sequential read test"),
    ("asyncSequentialWrite", Command::SequentialWrite, "AsyncSequentialWriteTest", "Run async sequential write test"),
    ("checkAndDelete", Command::CheckAndDelete, "CheckAndDeleteTest", "CheckAndDelete on each row; clients overlap on keyspace so some concurrent operations"),
    ("checkAndMutate", Command::CheckAndMutate, "CheckAndMutateTest", "CheckAndMutate on each row; clients overlap on keyspace so some concurrent operations"),
    ("checkAndPut", Command::CheckAndPut, "CheckAndPutTest", "CheckAndPut on each row; clients overlap on keyspace so some concurrent operations"),
    ("filterScan", Command::FilterScan, "FilteredScanTest", "Run scan test using a filter to find a specific row based on it's value (make sure to use --rows=20)"),
    ("increment", Command::Increment, "IncrementTest", "Increment on each row; clients overlap on keyspace so some concurrent operations"),
    ("randomRead", Command::RandomRead, "RandomReadTest", "Run random read test"),
    ("randomSeekScan", Command::RandomSeekScan, "RandomSeekScanTest", "Run random seek and scan 100 test"),
    ("randomWrite", Command::RandomWrite, "RandomWriteTest", "Run random write test"),
    ("scan", Command::Scan, "ScanTest", "Run scan test (read every row)"),
    ("scanRange10", Command::ScanRange(10), "RandomScanWithRange10Test", "Run random seek scan with both start and stop row (max 10 rows)"),
    ("scanRange100", Command::ScanRange(100), "RandomScanWithRange100Test", "Run random seek scan with both start and stop row (max 100 rows)"),
    ("scanRange1000", Command::ScanRange(1000), "RandomScanWithRange1000Test", "Run random seek scan with both start and stop row (max 1000 rows)"),
    ("scanRange10000", Command::ScanRange(10000), "RandomScanWithRange10000Test", "Run random seek scan with both start and stop row (max 10000 rows)"),
    ("sequentialRead", Command::SequentialRead, "SequentialReadTest", "Run sequential read test"),
    ("sequentialWrite", Command::SequentialWrite, "SequentialWriteTest", "Run sequential write test"),
];

/// The command named `name` and its Java class's simple name.
pub fn lookup(name: &str) -> Option<(Command, &'static str)> {
    COMMANDS
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|&(_, c, class, _)| (c, class))
}

impl Command {
    /// True for the compare-and-set family, whose clients all work on rows `0..rows`.
    pub fn shares_rows(self) -> bool {
        matches!(
            self,
            Command::Increment
                | Command::Append
                | Command::CheckAndMutate
                | Command::CheckAndPut
                | Command::CheckAndDelete
        )
    }

    /// True when the command writes through the buffered mutator (unless `--autoFlush=true`).
    pub fn is_write(self) -> bool {
        matches!(self, Command::SequentialWrite | Command::RandomWrite)
    }
}
