//! Loading TLS files: the server's identity and a client's CA; good files load, each bad one is
//! named in the error.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use banco_auth::{ClientTls, ServerTls, TlsError};

struct Files {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
    key_pem: String,
}

fn files() -> Files {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("server.crt");
    let key = dir.path().join("server.key");
    let key_pem = made.signing_key.serialize_pem();
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, &key_pem).unwrap();
    Files {
        _dir: dir,
        cert,
        key,
        key_pem,
    }
}

fn names(err: &TlsError, path: &Path) {
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "{text} does not name {}",
        path.display()
    );
}

#[test]
fn a_certificate_and_its_key_load() {
    let f = files();
    let tls = ServerTls::from_pem_files(&f.cert, &f.key).unwrap();
    let shown = format!("{tls:?}");
    assert!(shown.contains("server.crt"), "{shown}");
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    let secret = f.key_pem.lines().nth(1).unwrap();
    assert!(!shown.contains(secret), "Debug shows the key: {shown}");
}

#[test]
fn missing_files_are_named() {
    let f = files();
    let gone = f.cert.with_file_name("absent.crt");
    let err = ServerTls::from_pem_files(&gone, &f.key).unwrap_err();
    assert!(matches!(err, TlsError::Read { .. }), "{err:?}");
    names(&err, &gone);

    let gone = f.key.with_file_name("absent.key");
    let err = ServerTls::from_pem_files(&f.cert, &gone).unwrap_err();
    assert!(matches!(err, TlsError::Read { .. }), "{err:?}");
    names(&err, &gone);
}

#[test]
fn files_that_are_not_pem_are_named() {
    let f = files();
    std::fs::write(&f.cert, "not a certificate").unwrap();
    let err = ServerTls::from_pem_files(&f.cert, &f.key).unwrap_err();
    assert!(matches!(err, TlsError::NotPem { .. }), "{err:?}");
    names(&err, &f.cert);

    let f = files();
    // A certificate where the key should be: PEM, but no private key in it.
    std::fs::copy(&f.cert, &f.key).unwrap();
    let err = ServerTls::from_pem_files(&f.cert, &f.key).unwrap_err();
    assert!(matches!(err, TlsError::NotPem { .. }), "{err:?}");
    names(&err, &f.key);
}

#[test]
fn a_corrupt_key_is_rejected_naming_both_files() {
    let f = files();
    std::fs::write(
        &f.key,
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let err = ServerTls::from_pem_files(&f.cert, &f.key).unwrap_err();
    assert!(matches!(err, TlsError::Rejected { .. }), "{err:?}");
    names(&err, &f.cert);
    names(&err, &f.key);
}

#[test]
fn in_memory_pem_loads() {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    ServerTls::from_pem(
        made.cert.pem().as_bytes(),
        made.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let err = ServerTls::from_pem(b"", b"").unwrap_err();
    assert!(err.to_string().contains("<in memory>"), "{err}");
}

#[test]
fn a_key_that_is_not_the_certificates_is_rejected() {
    let f = files();
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(&f.key, other.signing_key.serialize_pem()).unwrap();
    let err = ServerTls::from_pem_files(&f.cert, &f.key).unwrap_err();
    assert!(matches!(err, TlsError::Rejected { .. }), "{err:?}");
    names(&err, &f.key);
}

#[test]
fn a_ca_file_loads_with_or_without_a_domain() {
    let f = files();
    let tls = ClientTls::from_ca_pem_file(&f.cert).unwrap();
    assert_eq!(tls.domain(), None);
    let shown = format!("{tls:?}");
    assert!(shown.contains("server.crt"), "{shown}");
    let tls = tls.with_domain("validator.casino.lan");
    assert_eq!(tls.domain(), Some("validator.casino.lan"));
    let _config = tls.config();
}

#[test]
fn bad_ca_files_are_named() {
    let f = files();
    let gone = f.cert.with_file_name("absent-ca.crt");
    let err = ClientTls::from_ca_pem_file(&gone).unwrap_err();
    assert!(matches!(err, TlsError::Read { .. }), "{err:?}");
    names(&err, &gone);
    assert!(err.to_string().contains("CA certificate"), "{err}");

    // A private key where the CA should be: PEM, but no certificate in it.
    let err = ClientTls::from_ca_pem_file(&f.key).unwrap_err();
    assert!(matches!(err, TlsError::NotPem { .. }), "{err:?}");
    names(&err, &f.key);

    std::fs::write(
        &f.cert,
        "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let err = ClientTls::from_ca_pem_file(&f.cert).unwrap_err();
    assert!(matches!(err, TlsError::CaRejected { .. }), "{err:?}");
    names(&err, &f.cert);
}

#[test]
fn in_memory_ca_pem_loads() {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    ClientTls::from_ca_pem(made.cert.pem().as_bytes()).unwrap();
    let err = ClientTls::from_ca_pem(b"").unwrap_err();
    assert!(err.to_string().contains("<in memory>"), "{err}");
}
