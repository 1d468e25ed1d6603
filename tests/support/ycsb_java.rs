//! The real Java YCSB beside ours: `site.ycsb:core:0.17.0` (and, for the cross-tool tests,
//! `hbase-shaded-client`) fetched from Maven Central by `mvn dependency:copy-dependencies`, and
//! our own Java code that drives it (the harness in `tests/java/ycsb/src`, the clean-room HBase
//! binding in `benches/compare-java/src`) compiled with `javac`, all under
//! `target/ycsb-java/`. Each tool is prepared once per test process (and reused across runs
//! while the pom and sources are unchanged).

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// A Java classpath ready to run.
#[derive(Debug)]
pub struct JavaTool {
    /// Where the jars and classes are.
    pub dir: PathBuf,
    classpath: String,
    flags: Vec<String>,
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fingerprint(paths: &[PathBuf]) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in paths {
        p.hash(&mut h);
        std::fs::read(p)
            .unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
            .hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

fn java_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            java_sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "java") {
            out.push(p);
        }
    }
}

/// Fetches the pom's dependencies into `dir/lib` and compiles `src` into `dir/classes`, each
/// only when its inputs changed (a fingerprint file records them).
fn prepare(name: &str, pom: &Path, src: &Path, flags: Vec<String>) -> JavaTool {
    let dir = repo().join("target/ycsb-java").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("lib");
    let pom_print = fingerprint(&[pom.to_path_buf()]);
    let stamp = dir.join("lib.stamp");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(pom_print.as_str()) {
        let tmp = dir.join(format!("lib.tmp.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        crate::run_checked(
            &format!("fetching the Java YCSB ({})", pom.display()),
            Command::new("mvn")
                .args(["-B", "-q", "-f"])
                .arg(pom)
                .arg("dependency:copy-dependencies")
                .arg(format!("-DoutputDirectory={}", tmp.display())),
        );
        let _ = std::fs::remove_dir_all(&lib);
        std::fs::rename(&tmp, &lib).unwrap();
        std::fs::write(&stamp, &pom_print).unwrap();
    }
    let mut sources = Vec::new();
    java_sources(src, &mut sources);
    let classes = dir.join("classes");
    let src_print = fingerprint(&sources);
    let cstamp = dir.join("classes.stamp");
    if std::fs::read_to_string(&cstamp).ok().as_deref() != Some(src_print.as_str()) {
        let tmp = dir.join(format!("classes.tmp.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        crate::run_checked(
            "compiling the Java harness",
            Command::new("javac")
                .args(["-nowarn", "-encoding", "UTF-8", "-d"])
                .arg(&tmp)
                .arg("-cp")
                .arg(format!("{}/*", lib.display()))
                .args(&sources),
        );
        let _ = std::fs::remove_dir_all(&classes);
        std::fs::rename(&tmp, &classes).unwrap();
        std::fs::write(&cstamp, &src_print).unwrap();
    }
    JavaTool {
        classpath: format!("{}:{}/*", classes.display(), lib.display()),
        dir,
        flags,
    }
}

/// The JVM flags of the harness: no GC (so YCSB's GC lines count nothing), no JVM log lines on
/// stdout, UTC (YCSB's status line prints local time), US English (YCSB's status line formats
/// its numbers in the default locale: a decimal comma elsewhere), and access to the thread's
/// ThreadLocalRandom seed.
fn oracle_flags() -> Vec<String> {
    [
        "-Xlog:disable",
        "-XX:+UnlockExperimentalVMOptions",
        "-XX:+UseEpsilonGC",
        "-Xmx1g",
        "-Duser.timezone=UTC",
        "-Duser.language=en",
        "-Duser.country=US",
        "--add-opens",
        "java.base/java.lang=ALL-UNNAMED",
    ]
    .map(String::from)
    .to_vec()
}

/// The flags HBase's own launcher adds on JDK 11+ (netty reflection, unsafe), US English (as
/// [`oracle_flags`]), and the hosts file of `HBASE_ADDRESS_MAP`.
fn hbase_flags() -> Vec<String> {
    let mut f: Vec<String> = [
        "-Xlog:disable",
        "-Duser.language=en",
        "-Duser.country=US",
        "-Djava.net.preferIPv4Stack=true",
        "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
        "-Dlog4j2.level=ERROR",
        "--add-modules",
        "jdk.unsupported",
    ]
    .map(String::from)
    .to_vec();
    for open in [
        "java.base/java.io",
        "java.base/java.nio",
        "java.base/sun.nio.ch",
        "java.base/java.lang",
        "java.base/jdk.internal.ref",
        "java.base/java.lang.reflect",
        "java.base/java.util",
        "java.base/java.util.concurrent",
    ] {
        f.push("--add-opens".into());
        f.push(format!("{open}=ALL-UNNAMED"));
    }
    f.push("--add-exports".into());
    f.push("java.base/jdk.internal.misc=ALL-UNNAMED".into());
    f.extend(crate::java_resolver_opts());
    f
}

/// `site.ycsb:core:0.17.0` and the harness (`hbasers.oracle.YcsbOracle`).
pub fn ycsb_oracle() -> &'static JavaTool {
    static TOOL: OnceLock<JavaTool> = OnceLock::new();
    TOOL.get_or_init(|| {
        prepare(
            "oracle",
            &repo().join("tests/java/ycsb/pom.xml"),
            &repo().join("tests/java/ycsb/src"),
            oracle_flags(),
        )
    })
}

/// `site.ycsb:core:0.17.0` and `javax.xml.bind:jaxb-api` (`tests/java/ycsb/hdr/pom.xml`): the
/// classpath on which YCSB 0.17.0's HdrHistogram (2.1.4) can write and read interval logs on
/// Java 11+ (it base64-codes with `javax.xml.bind.DatatypeConverter`), with the harness
/// (`hbasers.oracle.HdrLogs`).
pub fn ycsb_hdr_logs() -> &'static JavaTool {
    static TOOL: OnceLock<JavaTool> = OnceLock::new();
    TOOL.get_or_init(|| {
        prepare(
            "hdr-logs",
            &repo().join("tests/java/ycsb/hdr/pom.xml"),
            &repo().join("tests/java/ycsb/src"),
            oracle_flags(),
        )
    })
}

/// `site.ycsb:core:0.17.0` with `hbase-shaded-client` and the clean-room HBase binding of
/// `benches/compare-java` (`hbasers.compare.JavaHBaseDB`).
pub fn ycsb_hbase() -> &'static JavaTool {
    static TOOL: OnceLock<JavaTool> = OnceLock::new();
    TOOL.get_or_init(|| {
        prepare(
            "hbase",
            &repo().join("benches/compare-java/pom.xml"),
            &repo().join("benches/compare-java/src"),
            hbase_flags(),
        )
    })
}

impl JavaTool {
    /// `java <flags> -cp <extra>:<classpath> main`.
    pub fn command(&self, extra_classpath: &[&Path], main: &str) -> Command {
        let mut cp = String::new();
        for e in extra_classpath {
            cp.push_str(&e.display().to_string());
            cp.push(':');
        }
        cp.push_str(&self.classpath);
        let mut c = Command::new("java");
        c.args(&self.flags).arg("-cp").arg(cp).arg(main);
        c.current_dir(repo());
        c
    }

    /// Runs `main args` with `stdin`; panics unless it exits 0.
    pub fn run(&self, main: &str, args: &[&str], stdin: Option<&str>) -> Output {
        run_with_stdin(self.command(&[], main).args(args), stdin)
    }
}

/// Runs `cmd`, feeding it `stdin`; panics unless it exits 0.
pub fn run_with_stdin(cmd: &mut Command, stdin: Option<&str>) -> Output {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let text = text.to_string();
        std::thread::spawn(move || {
            let _ = pipe.write_all(text.as_bytes());
        });
    }
    let out = child.wait_with_output().unwrap();
    crate::assert_succeeded(&format!("{cmd:?}"), &out);
    out
}

/// The Java harness's answer to `args` (and `stdin`), as text.
pub fn oracle(args: &[&str], stdin: Option<&str>) -> String {
    let out = ycsb_oracle().run("hbasers.oracle.YcsbOracle", args, stdin);
    String::from_utf8(out.stdout).expect("UTF-8 from the harness")
}
