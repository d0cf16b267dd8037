//! # banco-wire
//!
//! The banco gRPC contract: the messages, clients and servers generated from
//! `proto/banco/v1/*.proto` (see [`pb`]), the encoded descriptor set for reflection
//! ([`FILE_DESCRIPTOR_SET`]), and the conversions between wire and domain types
//! ([`convert`]).
//!
//! Outward (domain → wire) conversions are infallible `From`s. Inward (wire → domain) ones
//! are `TryFrom`s, or functions taking the field's name, that refuse anything the domain
//! could not hold and name the field path at fault in a [`ConversionError`]. Wire types
//! never leak into `banco-rules`.

pub mod convert;
pub mod framing;

pub use convert::ConversionError;
/// The `google.protobuf.Timestamp` of every `*_at` / `server_time` field.
pub use prost_types::Timestamp;

/// Generated code for package `banco.v1`: messages, `*_client` and `*_server` modules.
#[allow(
    missing_docs,
    unreachable_pub,
    clippy::all,
    clippy::pedantic,
    missing_debug_implementations
)]
pub mod pb {
    tonic::include_proto!("banco.v1");
}

/// The encoded `FileDescriptorSet` of every banco proto file and its imports, for
/// `tonic_reflection::server::Builder::register_encoded_file_descriptor_set`.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/banco_descriptor.bin"));

/// Bytes of `ClipMissing.detail` the archive takes (a longer one is refused): senders cut
/// it to this.
pub const MAX_CLIP_MISSING_DETAIL_BYTES: usize = 1000;
