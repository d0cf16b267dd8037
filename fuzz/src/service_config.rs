//! The services' `--config` files, read against the real flags of `banco validator`,
//! `broadcaster`, `archive` and `stream`. Never a panic; every refusal names a key of the
//! file (or says the text is not TOML), conflicts included; each key of an accepted file
//! becomes one setting; an accepted file printed back by `--print-config`'s printer reads
//! again to the same settings, without a conflict, and prints again to the same text.

use std::sync::OnceLock;

use banco_config::{ConfigError, Setting, check_conflicts, print, read, with_settings};
use clap::Command;
use clap::error::ErrorKind;

/// The `service_config` target: the text against every service.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for service in services() {
        check_service(&text, service);
    }
}

/// The services whose flags accept the text as a config file.
pub fn accepted_by(data: &[u8]) -> Vec<&'static str> {
    let text = String::from_utf8_lossy(data);
    services()
        .iter()
        .filter(|service| read(&text, service).is_ok())
        .map(Command::get_name)
        .collect()
}

/// Building banco's whole command for each input would cost more than reading the file.
fn services() -> &'static [Command] {
    static SERVICES: OnceLock<Vec<Command>> = OnceLock::new();
    SERVICES.get_or_init(|| {
        banco::SERVICES
            .iter()
            .map(|name| {
                banco::service_command(name)
                    .unwrap_or_else(|| panic!("`{name}` is listed as a service but has no command"))
            })
            .collect()
    })
}

pub fn check_service(text: &str, service: &Command) {
    let name = service.get_name();
    match read(text, service) {
        Err(error) => check_refusal(text, name, &error),
        Ok(settings) => {
            let table: toml::Table = text.parse().unwrap_or_else(|e| {
                panic!("{name}: accepted text that is not TOML ({e}): {text:?}")
            });
            let mut keys: Vec<&str> = settings.iter().map(|s| s.key.as_str()).collect();
            keys.sort_unstable();
            let written: Vec<&str> = table.keys().map(String::as_str).collect();
            assert_eq!(keys, written, "{name}: one setting per key of {text:?}");
            round_trip(text, service, &settings);
        }
    }
}

fn check_refusal(text: &str, name: &str, error: &ConfigError) {
    let message = error.to_string();
    let Some(key) = error.key() else {
        assert!(message.starts_with("not valid TOML: "), "{name}: {message}");
        assert!(
            text.parse::<toml::Table>().is_err(),
            "{name}: valid TOML refused as not TOML: {text:?}"
        );
        return;
    };
    assert!(
        message.contains(&format!("`{}`", key.escape_debug())),
        "{name}: the refusal does not name `{key}`: {message}"
    );
    let table: toml::Table = text
        .parse()
        .unwrap_or_else(|e| panic!("{name}: refused by key, but not TOML ({e}): {message}"));
    assert!(
        table.contains_key(key),
        "{name}: refused `{key}`, which the file does not have: {message}"
    );
}

/// The settings of `text` as the service sees them (no flags given), printed; `None` when
/// the file leaves out a flag the service requires (the command line may give it), or
/// gives two that conflict (a refusal checked as any other).
fn printed(text: &str, service: &Command, settings: &[Setting]) -> Option<String> {
    let name = service.get_name();
    let command = with_settings(service.clone(), settings);
    let matches = match command.clone().try_get_matches_from([name]) {
        Ok(matches) => matches,
        Err(error) if error.kind() == ErrorKind::MissingRequiredArgument => return None,
        // Any other error would reach the operator from clap, without the file's name.
        Err(error) => panic!("{name}: accepted settings {settings:?} are refused by clap: {error}"),
    };
    if let Err(error) = check_conflicts(&command, settings, &matches) {
        assert!(error.key().is_some(), "{name}: {error} names no key");
        check_refusal(text, name, &error);
        return None;
    }
    Some(print(service, &matches).unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn round_trip(text: &str, service: &Command, settings: &[Setting]) {
    let name = service.get_name();
    let Some(printed) = printed(text, service, settings) else {
        return;
    };
    let again = read(&printed, service)
        .unwrap_or_else(|e| panic!("{name}: the printed config is refused: {e}\n{printed}"));
    for setting in settings {
        let back = again.iter().find(|s| s.key == setting.key);
        assert_eq!(
            back.map(|s| &s.values),
            Some(&setting.values),
            "{name}: `{}` of {text:?} printed as\n{printed}",
            setting.key
        );
    }
    assert_eq!(
        self::printed(&printed, service, &again).as_deref(),
        Some(printed.as_str()),
        "{name}: printed twice differently"
    );
}
