//! Key files: round trip, permissions, refusal to overwrite, bad contents.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, UNIX_EPOCH};

use banco_auth::keys::{
    generate_signing_key, load_signing_key, load_verifying_key, save_signing_key,
    save_verifying_key,
};
use banco_auth::{Issuer, KeyError, Role, Verifier};

#[test]
fn generated_keys_round_trip_through_files_and_verify_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("signing.key");
    let public = dir.path().join("signing.pub");
    let key = generate_signing_key().unwrap();
    save_signing_key(&secret, &key).unwrap();
    save_verifying_key(&public, &key.verifying_key()).unwrap();

    let loaded = load_signing_key(&secret).unwrap();
    assert_eq!(loaded.to_bytes(), key.to_bytes());
    let loaded_public = load_verifying_key(&public).unwrap();
    assert_eq!(loaded_public, key.verifying_key());

    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let token = Issuer::new(loaded, "banco")
        .unwrap()
        .issue("svc", Role::Service, Duration::from_secs(60), now)
        .unwrap();
    let verifier = Verifier::new("banco")
        .unwrap()
        .with_public_key(loaded_public);
    assert_eq!(verifier.verify(&token, now).unwrap().sub, "svc");

    let text = std::fs::read_to_string(&secret).unwrap();
    assert_eq!(text.len(), 45, "44 base64 characters and a newline");
    assert!(text.ends_with('\n'));
}

#[test]
fn two_generated_keys_differ() {
    assert_ne!(
        generate_signing_key().unwrap().to_bytes(),
        generate_signing_key().unwrap().to_bytes()
    );
}

#[cfg(unix)]
#[test]
fn the_signing_key_file_is_private_and_a_readable_one_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("signing.key");
    save_signing_key(&secret, &generate_signing_key().unwrap()).unwrap();
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = load_signing_key(&secret).unwrap_err();
    assert!(
        matches!(err, KeyError::InsecurePermissions { mode: 0o644, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("chmod 600"), "{err}");
}

#[test]
fn existing_files_are_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("signing.key");
    let first = generate_signing_key().unwrap();
    save_signing_key(&secret, &first).unwrap();
    let err = save_signing_key(&secret, &generate_signing_key().unwrap()).unwrap_err();
    assert!(matches!(err, KeyError::AlreadyExists(_)), "{err}");
    assert_eq!(
        load_signing_key(&secret).unwrap().to_bytes(),
        first.to_bytes()
    );
}

#[test]
fn bad_key_files_are_refused_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("not-base64", "this is not base64!\n"),
        ("short", "AAAA\n"),
        (
            "two-lines",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n",
        ),
        ("spaces", " AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"),
    ];
    for (name, contents) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        let err = load_verifying_key(&path).unwrap_err();
        assert!(matches!(err, KeyError::BadEncoding { .. }), "{name}: {err}");
        assert!(err.to_string().contains(name), "{name}: {err}");
    }
    let long = dir.path().join("long");
    std::fs::write(&long, "A".repeat(300)).unwrap();
    let err = load_verifying_key(&long).unwrap_err();
    assert!(err.to_string().contains("300 bytes is too long"), "{err}");
    let missing = load_verifying_key(&dir.path().join("absent")).unwrap_err();
    assert!(matches!(missing, KeyError::Io { .. }), "{missing}");
}
