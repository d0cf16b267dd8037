//! Key generation, key ids, and the two key files.
//!
//! - Signing key file: base64 (standard alphabet, padded) of the 32-byte ed25519 seed and a
//!   newline, created with mode 0600; loading refuses a file readable by group or others.
//! - Public key file: base64 of the 32-byte public key and a newline (mode 0644).
//!
//! Both are created, never overwritten: replacing a key silently would invalidate every
//! token in circulation, so the caller must remove the old file on purpose.
//!
//! Every buffer that holds a seed, raw or encoded, is a [`Zeroizing`] one, so it is wiped
//! when dropped (a plain `clear` or `fill(0)` before a free may be optimised away).

use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Digest as _, Sha512, SigningKey, VerifyingKey};
use zeroize::Zeroizing;

/// Longest key file read, in bytes: a key line is 45.
const MAX_KEY_FILE_LEN: usize = 256;

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
    let mut seed = Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut *seed).map_err(|e| KeyError::Random(e.to_string()))?;
    Ok(SigningKey::from_bytes(&seed))
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
    // Sized up front so that no growth leaves an unwiped copy behind.
    let mut text = Zeroizing::new(String::with_capacity(45));
    STANDARD.encode_string(key.as_bytes(), &mut text);
    text.push('\n');
    create_new(path, text.as_bytes(), 0o600)
}

/// Writes `key` to a new public key file at `path` with mode 0644.
pub fn save_verifying_key(path: &Path, key: &VerifyingKey) -> Result<(), KeyError> {
    let mut text = STANDARD.encode(key.as_bytes());
    text.push('\n');
    create_new(path, text.as_bytes(), 0o644)
}

/// Reads a signing key file; refuses one readable by group or others.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    let seed = read_key_file(path, check_private_mode)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Reads a public key file.
pub fn load_verifying_key(path: &Path) -> Result<VerifyingKey, KeyError> {
    let bytes = read_key_file(path, |_, _| Ok(()))?;
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

/// Refuses a signing key file that group or others may read.
#[cfg(unix)]
fn check_private_mode(path: &Path, metadata: &Metadata) -> Result<(), KeyError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::InsecurePermissions {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private_mode(_path: &Path, _metadata: &Metadata) -> Result<(), KeyError> {
    Ok(())
}

/// Reads a one-line key file: base64 of exactly 32 bytes, optionally followed by a newline.
/// The file is opened once, so `check` (the permission check of a signing key) and the size
/// check look at the very file that is read.
fn read_key_file(
    path: &Path,
    check: impl FnOnce(&Path, &Metadata) -> Result<(), KeyError>,
) -> Result<Zeroizing<[u8; 32]>, KeyError> {
    let bad = |reason: String| KeyError::BadEncoding {
        path: path.to_owned(),
        reason,
    };
    let file = File::open(path).map_err(io_error(path))?;
    let metadata = file.metadata().map_err(io_error(path))?;
    check(path, &metadata)?;
    let too_long = |len: u64| bad(format!("{len} bytes is too long"));
    if metadata.len() > MAX_KEY_FILE_LEN as u64 {
        return Err(too_long(metadata.len()));
    }
    // One byte of room past the limit, so a file that grew since is seen, never a realloc.
    let mut text = Zeroizing::new(Vec::with_capacity(MAX_KEY_FILE_LEN + 1));
    file.take(MAX_KEY_FILE_LEN as u64 + 1)
        .read_to_end(&mut text)
        .map_err(io_error(path))?;
    if text.len() > MAX_KEY_FILE_LEN {
        return Err(too_long(text.len() as u64));
    }
    let line = text
        .strip_suffix(b"\n")
        .map_or(&text[..], |l| l.strip_suffix(b"\r").unwrap_or(l));
    // Large enough for any line within the limit, as `decode_slice` requires.
    let mut decoded = Zeroizing::new([0u8; MAX_KEY_FILE_LEN / 4 * 3]);
    let len = STANDARD
        .decode_slice(line, &mut decoded[..])
        .map_err(|e| bad(format!("not base64: {e}")))?;
    if len != 32 {
        return Err(bad(format!("decodes to {len} bytes, expected 32")));
    }
    let mut key = Zeroizing::new([0u8; 32]);
    key.copy_from_slice(&decoded[..32]);
    Ok(key)
}
