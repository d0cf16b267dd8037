//! Compiles `proto/banco/v1/*.proto` with protox (pure Rust, so no `protoc` is needed) and
//! generates the messages, clients and servers with tonic-prost-build. The encoded
//! descriptor set is written next to the code, for `FILE_DESCRIPTOR_SET` (reflection).

use std::path::PathBuf;

const FILES: [&str; 8] = [
    "banco/v1/common.proto",
    "banco/v1/rules.proto",
    "banco/v1/table.proto",
    "banco/v1/player.proto",
    "banco/v1/video.proto",
    "banco/v1/archive.proto",
    "banco/v1/wallet.proto",
    "banco/v1/events.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let proto_dir = manifest_dir.join("../../proto");
    // A directory is scanned whole: any edited or added proto file reruns this script.
    println!("cargo:rerun-if-changed={}", proto_dir.display());

    let mut compiler = protox::Compiler::new([&proto_dir])?;
    compiler.include_source_info(true).include_imports(true);
    compiler.open_files(FILES)?;
    let fds = compiler.file_descriptor_set();

    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("banco_descriptor.bin"),
        compiler.encode_file_descriptor_set(),
    )?;

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
