//! The six YCSB core workload files, built in so `-P workloada` works anywhere.

/// The built-in workload files, by name.
pub const BUILTIN: [(&str, &str); 6] = [
    ("workloada", include_str!("../../workloads/workloada")),
    ("workloadb", include_str!("../../workloads/workloadb")),
    ("workloadc", include_str!("../../workloads/workloadc")),
    ("workloadd", include_str!("../../workloads/workloadd")),
    ("workloade", include_str!("../../workloads/workloade")),
    ("workloadf", include_str!("../../workloads/workloadf")),
];

/// The text of built-in workload `name` (`workloada`…`workloadf`).
pub fn builtin_workload(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::props::parse_properties;

    #[test]
    fn builtin_files_match_ycsb_table() {
        let expect = [
            ("workloada", "0.5", "0.5", "0", "0", None, "zipfian"),
            ("workloadb", "0.95", "0.05", "0", "0", None, "zipfian"),
            ("workloadc", "1", "0", "0", "0", None, "zipfian"),
            ("workloadd", "0.95", "0", "0", "0.05", None, "latest"),
            ("workloade", "0", "0", "0.95", "0.05", None, "zipfian"),
            ("workloadf", "0.5", "0", "0", "0", Some("0.5"), "zipfian"),
        ];
        for (name, read, update, scan, insert, rmw, dist) in expect {
            let pairs = parse_properties(builtin_workload(name).unwrap().as_bytes()).unwrap();
            let get = |k: &str| pairs.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
            assert_eq!(get("recordcount"), Some("1000"), "{name}");
            assert_eq!(get("operationcount"), Some("1000"), "{name}");
            assert_eq!(get("readallfields"), Some("true"), "{name}");
            assert_eq!(get("readproportion"), Some(read), "{name}");
            assert_eq!(get("updateproportion"), Some(update), "{name}");
            assert_eq!(get("scanproportion"), Some(scan), "{name}");
            assert_eq!(get("insertproportion"), Some(insert), "{name}");
            assert_eq!(get("readmodifywriteproportion"), rmw, "{name}");
            assert_eq!(get("requestdistribution"), Some(dist), "{name}");
        }
        let e = parse_properties(builtin_workload("workloade").unwrap().as_bytes()).unwrap();
        assert!(e.contains(&("maxscanlength".into(), "100".into())));
        assert!(builtin_workload("workloadg").is_none());
    }
}
