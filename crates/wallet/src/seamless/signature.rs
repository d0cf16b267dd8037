//! The shared secret and the `X-Banco-Signature` header: HMAC-SHA256 of the raw HTTP body,
//! on every request banco sends and on every answer the operator gives.

use std::fmt;
use std::path::Path;

use ring::hmac;

/// The header that carries a body's signature, on requests and answers alike.
pub const SIGNATURE_HEADER: &str = "x-banco-signature";

/// What the header's value starts with; the lower-case hex of the 32-byte HMAC follows.
const SCHEME: &str = "sha256=";

/// The shortest secret accepted: 32 bytes, as many as the HMAC's output.
pub const MIN_SECRET_LEN: usize = 32;

/// Why a secret cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("could not read the shared secret file {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error(
        "the shared secret file {path} has mode {mode:o}; it must not be readable by group or \
         others (chmod 600)"
    )]
    Readable { path: String, mode: u32 },
    #[error(
        "the shared secret in {origin} is {len} bytes; it must be at least {MIN_SECRET_LEN} \
         (e.g. `openssl rand -hex 32`)"
    )]
    TooShort { origin: String, len: usize },
}

/// Why a body's signature was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no {SIGNATURE_HEADER} header")]
    Missing,
    #[error("the {SIGNATURE_HEADER} header is not `sha256=` and 64 hex digits")]
    Malformed,
    #[error(
        "the {SIGNATURE_HEADER} header does not match the body (another secret, or an altered body)"
    )]
    Mismatch,
}

/// The secret banco and the operator share. Debug output names where it came from, never
/// the secret.
#[derive(Clone)]
pub struct SeamlessSecret {
    key: hmac::Key,
    origin: String,
}

impl SeamlessSecret {
    /// The secret in `path`: the file's bytes without surrounding whitespace (a final
    /// newline), at least [`MIN_SECRET_LEN`] of them. On Unix the file must not be readable
    /// by group or others.
    pub fn from_file(path: &Path) -> Result<SeamlessSecret, SecretError> {
        let name = path.display().to_string();
        let read = |error| SecretError::Read {
            path: name.clone(),
            error,
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(path).map_err(read)?.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(SecretError::Readable { path: name, mode });
            }
        }
        let bytes = std::fs::read(path).map_err(read)?;
        SeamlessSecret::checked(bytes.trim_ascii(), name)
    }

    /// A secret already in memory (tests, a secret from a vault).
    pub fn new(secret: &[u8]) -> Result<SeamlessSecret, SecretError> {
        SeamlessSecret::checked(secret, "<in memory>".to_owned())
    }

    fn checked(secret: &[u8], origin: String) -> Result<SeamlessSecret, SecretError> {
        if secret.len() < MIN_SECRET_LEN {
            return Err(SecretError::TooShort {
                origin,
                len: secret.len(),
            });
        }
        Ok(SeamlessSecret {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            origin,
        })
    }

    /// The header value that signs `body`: `sha256=<hex>`.
    pub fn sign(&self, body: &[u8]) -> String {
        format!("{SCHEME}{}", hex::encode(hmac::sign(&self.key, body)))
    }

    /// Checks the header value `signature` (absent: `None`) against `body`, in constant
    /// time. Hex digits are accepted in either case.
    pub fn verify(&self, body: &[u8], signature: Option<&[u8]>) -> Result<(), SignatureError> {
        let signature = signature.ok_or(SignatureError::Missing)?;
        let hex_digits = signature
            .strip_prefix(SCHEME.as_bytes())
            .ok_or(SignatureError::Malformed)?;
        let mac = hex::decode(hex_digits).map_err(|_| SignatureError::Malformed)?;
        if mac.len() != 32 {
            return Err(SignatureError::Malformed);
        }
        hmac::verify(&self.key, body, &mac).map_err(|_| SignatureError::Mismatch)
    }
}

impl fmt::Debug for SeamlessSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeamlessSecret")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_signature_is_the_hmac_of_the_raw_body() {
        let secret = SeamlessSecret::new(SECRET).unwrap();
        let body = br#"{"operation":"balance"}"#;
        let header = secret.sign(body);
        // The same HMAC computed independently, so an operator's value can be compared.
        let expected = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, SECRET), body);
        assert_eq!(header, format!("sha256={}", hex::encode(expected)));
        assert_eq!(secret.verify(body, Some(header.as_bytes())), Ok(()));
        let upper = format!("sha256={}", hex::encode_upper(expected));
        assert_eq!(secret.verify(body, Some(upper.as_bytes())), Ok(()));
    }

    #[test]
    fn altered_bodies_other_secrets_and_bad_headers_are_refused() {
        let secret = SeamlessSecret::new(SECRET).unwrap();
        let other = SeamlessSecret::new(b"another secret of thirty-two bytes!").unwrap();
        let body = br#"{"amount_minor":100}"#;
        let header = secret.sign(body);
        assert_eq!(
            secret.verify(br#"{"amount_minor":900}"#, Some(header.as_bytes())),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            other.verify(body, Some(header.as_bytes())),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(secret.verify(body, None), Err(SignatureError::Missing));
        for bad in ["", "sha1=00", "sha256=zz", "sha256=abcd", &header[7..]] {
            assert_eq!(
                secret.verify(body, Some(bad.as_bytes())),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn short_or_exposed_secrets_are_refused_naming_the_file() {
        let err = SeamlessSecret::new(b"short").unwrap_err();
        assert!(err.to_string().contains("5 bytes"), "{err}");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wallet.secret");
        std::fs::write(&path, [SECRET, b"\n"].concat()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = SeamlessSecret::from_file(&path).unwrap_err();
            assert!(err.to_string().contains("chmod 600"), "{err}");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        // The final newline is not part of the secret.
        let from_file = SeamlessSecret::from_file(&path).unwrap();
        let body = b"{}";
        let in_memory = SeamlessSecret::new(SECRET).unwrap();
        assert_eq!(
            in_memory.verify(body, Some(from_file.sign(body).as_bytes())),
            Ok(())
        );
        assert!(format!("{from_file:?}").contains("wallet.secret"));
        assert!(!format!("{from_file:?}").contains("0123456789"));

        let missing = SeamlessSecret::from_file(&dir.path().join("nope")).unwrap_err();
        assert!(missing.to_string().contains("nope"), "{missing}");
    }
}
