//! Compiles `../protos/*.proto` (package `hbase.pb`) into Rust with
//! protox (pure-Rust parser, no system `protoc`) and prost-build.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let proto_dir = manifest_dir.join("..").join("protos");
    println!("cargo:rerun-if-changed={}", proto_dir.display());

    let mut files: Vec<PathBuf> = fs::read_dir(&proto_dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "proto"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no .proto files found in {}", proto_dir.display()).into());
    }
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }

    let names: Vec<&Path> = files
        .iter()
        .map(|path| path.strip_prefix(&proto_dir).unwrap_or(path))
        .collect();
    let fds = protox::compile(&names, [&proto_dir])?;

    prost_build::Config::new()
        // Every `bytes` field becomes `bytes::Bytes` (cheap clones, zero-copy decode).
        .bytes(["."])
        .compile_fds(fds)?;
    Ok(())
}
