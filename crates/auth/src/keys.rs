//! Key generation, key ids, and the two key files.
//!
//! - Signing key file: base64 (standard alphabet, padded) of the 32-byte ed25519 seed and a
//!   newline, created with mode 0600; loading refuses a file readable by group or others.
//! - Public key file: base64 of the 32-byte public key and a newline (mode 0644).
//!
//! Both are created, never overwritten: replacing a key silently would invalidate every
//! token in circulation, so the caller must remove the old file on purpose.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Digest as _, Sha512, SigningKey, VerifyingKey};

/// Why a key could not be generated, saved or loaded. Never contains key material.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing the file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The key file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// Saving would overwrite an existing key file.
    #[error("{}: already exists; refusing to overwrite a key file (remove it first)", .0.display())]
    AlreadyExists(PathBuf),
    /// The file is not one line of base64 encoding 32 bytes.
    #[error("{}: not a key file: {reason}", path.display())]
    BadEncoding {
        /// The key file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The 32 bytes are not a valid ed25519 public key.
    #[error("{}: not a valid ed25519 public key", .0.display())]
    BadPublicKey(PathBuf),
    /// A signing key file that group or others may read.
    #[error("{}: signing key file has mode {mode:o}; it must not be readable by group or others (chmod 600)", path.display())]
    InsecurePermissions {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The operating system's random number source failed.
    #[error("cannot draw a key from the operating system's random source: {0}")]
    Random(String),
}

/// A fresh signing key from 32 bytes of the operating system's random source.
pub fn generate_signing_key() -> Result<SigningKey, KeyError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
    let key = SigningKey::from_bytes(&seed);
    seed.fill(0);
    Ok(key)
}

/// A signing key from a caller-supplied 32-byte seed (tests, hardware RNGs).
pub fn signing_key_from_seed(seed: &[u8; 32]) -> SigningKey {
    SigningKey::from_bytes(seed)
}

/// The key id of a public key: base64url of the first 9 bytes of its SHA-512 (12 chars).
/// Deterministic, so issuers and verifiers agree without configuration.
pub fn key_id(key: &VerifyingKey) -> String {
    let digest = Sha512::digest(key.as_bytes());
    URL_SAFE_NO_PAD.encode(&digest[..9])
}

/// Writes `key`'s seed to a new file at `path` with mode 0600.
pub fn save_signing_key(path: &Path, key: &SigningKey) -> Result<(), KeyError> {
    let mut text = STANDARD.encode(key.as_bytes());
    text.push('\n');
    let result = create_new(path, text.as_bytes(), 0o600);
    // Best effort: do not leave the encoded seed lying in freed memory.
    text.clear();
    text.shrink_to_fit();
    result
}

/// Writes `key` to a new public key file at `path` with mode 0644.
pub fn save_verifying_key(path: &Path, key: &VerifyingKey) -> Result<(), KeyError> {
    let mut text = STANDARD.encode(key.as_bytes());
    text.push('\n');
    create_new(path, text.as_bytes(), 0o644)
}

/// Reads a signing key file; refuses one readable by group or others.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    check_private_mode(path)?;
    let mut seed = read_32(path)?;
    let key = SigningKey::from_bytes(&seed);
    seed.fill(0);
    Ok(key)
}

/// Reads a public key file.
pub fn load_verifying_key(path: &Path) -> Result<VerifyingKey, KeyError> {
    let bytes = read_32(path)?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| KeyError::BadPublicKey(path.to_owned()))
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io {
        path: path.to_owned(),
        source,
    }
}

fn create_new(path: &Path, contents: &[u8], mode: u32) -> Result<(), KeyError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            KeyError::AlreadyExists(path.to_owned())
        } else {
            io_error(path)(source)
        }
    })?;
    file.write_all(contents).map_err(io_error(path))?;
    file.sync_all().map_err(io_error(path))
}

#[cfg(unix)]
fn check_private_mode(path: &Path) -> Result<(), KeyError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = fs::metadata(path)
        .map_err(io_error(path))?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::InsecurePermissions {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private_mode(_path: &Path) -> Result<(), KeyError> {
    Ok(())
}

/// Reads a one-line key file: base64 of exactly 32 bytes, optionally followed by a newline.
fn read_32(path: &Path) -> Result<[u8; 32], KeyError> {
    let bad = |reason: String| KeyError::BadEncoding {
        path: path.to_owned(),
        reason,
    };
    let metadata = fs::metadata(path).map_err(io_error(path))?;
    if metadata.len() > 256 {
        return Err(bad(format!("{} bytes is too long", metadata.len())));
    }
    let mut text = fs::read_to_string(path).map_err(io_error(path))?;
    let line = text
        .strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(&text);
    let decoded = STANDARD
        .decode(line)
        .map_err(|e| bad(format!("not base64: {e}")));
    text.clear();
    let mut decoded = decoded?;
    let result = <[u8; 32]>::try_from(decoded.as_slice())
        .map_err(|_| bad(format!("decodes to {} bytes, expected 32", decoded.len())));
    decoded.fill(0);
    result
}
