//! A config file read against a service's flags: what is accepted, what is refused and
//! how it is named, and the round trip through `--print-config`'s printer.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::PathBuf;

use banco_config::{ConfigError, Setting, print, read, with_env, with_settings};
use clap::{Arg, ArgAction, Command, value_parser};

/// A service shaped like banco's: values of several types, a repeatable flag, a switch,
/// a required flag and flags that depend on each other.
fn service() -> Command {
    Command::new("sample")
        .arg(
            Arg::new("listen")
                .long("listen")
                .value_parser(value_parser!(SocketAddr))
                .default_value("127.0.0.1:7101"),
        )
        .arg(
            Arg::new("queue")
                .long("subscriber-queue")
                .value_parser(value_parser!(u32).range(1..))
                .default_value("1024"),
        )
        .arg(
            Arg::new("tables")
                .long("table")
                .action(ArgAction::Append)
                .default_value("T01"),
        )
        .arg(
            Arg::new("seven_tiers")
                .long("seven-tiers")
                .action(ArgAction::SetTrue)
                .conflicts_with("tables"),
        )
        .arg(
            Arg::new("token_file")
                .long("token-file")
                .value_parser(value_parser!(PathBuf))
                .required(true),
        )
        .arg(Arg::new("tls_cert").long("tls-cert").requires("tls_key"))
        .arg(Arg::new("tls_key").long("tls-key").requires("tls_cert"))
        .arg(
            Arg::new("log_format")
                .long("log-format")
                .value_parser(["text", "json"])
                .default_value("text"),
        )
        .arg(Arg::new("config").long("config"))
}

fn refusal(text: &str) -> ConfigError {
    read(text, &service()).expect_err(text)
}

fn values(settings: &[Setting], key: &str) -> Vec<String> {
    settings
        .iter()
        .find(|s| s.key == key)
        .map(|s| s.values.clone())
        .unwrap_or_default()
}

#[test]
fn each_key_becomes_its_flags_values() {
    let settings = read(
        "listen = \"127.0.0.1:9\"\nsubscriber_queue = 8\ntable = [\"T01=5-300\", \"T02\"]\nseven_tiers = false\n",
        &service(),
    )
    .unwrap();
    assert_eq!(values(&settings, "listen"), ["127.0.0.1:9"]);
    assert_eq!(values(&settings, "subscriber_queue"), ["8"]);
    assert_eq!(values(&settings, "table"), ["T01=5-300", "T02"]);
    assert_eq!(values(&settings, "seven_tiers"), ["false"]);
    let queue = settings
        .iter()
        .find(|s| s.key == "subscriber_queue")
        .unwrap();
    assert_eq!(queue.id, "queue", "the clap id, not the key");
    // One value for a repeatable flag is a list of one.
    let one = read("table = \"T03\"", &service()).unwrap();
    assert_eq!(values(&one, "table"), ["T03"]);
}

#[test]
fn refusals_name_the_key_and_the_fault() {
    for (text, key, fault) in [
        ("listne = \"x\"", "listne", "unknown key `listne`"),
        ("config = \"other.toml\"", "config", "unknown key `config`"),
        (
            "listen = \"not an address\"",
            "listen",
            "invalid value 'not an address'",
        ),
        (
            "subscriber_queue = 0",
            "subscriber_queue",
            "0 is not in 1..",
        ),
        (
            "subscriber_queue = -1",
            "subscriber_queue",
            "invalid value '-1'",
        ),
        ("log_format = \"xml\"", "log_format", "'xml'"),
        (
            "listen = [\"127.0.0.1:1\"]",
            "listen",
            "takes one value, not a list",
        ),
        ("table = []", "table", "an empty list"),
        (
            "table = [\"T01\", [\"T02\"]]",
            "table",
            "array is not a setting's value",
        ),
        (
            "listen = { port = 1 }",
            "listen",
            "table is not a setting's value",
        ),
        (
            "seven_tiers = \"yes\"",
            "seven_tiers",
            "takes true or false",
        ),
        ("seven_tiers = 1", "seven_tiers", "takes true or false"),
        ("\"odd\\nkey\" = 1", "odd\nkey", "unknown key `odd\\nkey`"),
    ] {
        let error = refusal(text);
        assert_eq!(error.key(), Some(key), "{text}: {error}");
        let message = error.to_string();
        assert!(message.contains(fault), "{text}: {message}");
    }
    // The first bad key of several good ones.
    let error = refusal("listen = \"127.0.0.1:1\"\nlog_format = \"xml\"\ntable = \"T02\"");
    assert_eq!(error.key(), Some("log_format"));

    let error = refusal("listen = ");
    assert_eq!(error.key(), None);
    assert!(error.to_string().starts_with("not valid TOML: "), "{error}");
    assert!(matches!(refusal("a = 1\na = 2"), ConfigError::NotToml(_)));
}

#[test]
fn values_that_look_like_flags_are_values() {
    let settings = read("tls_cert = \"--tls-key\"\ntls_key = \"-x\"", &service()).unwrap();
    assert_eq!(values(&settings, "tls_cert"), ["--tls-key"]);
    assert_eq!(values(&settings, "tls_key"), ["-x"]);
}

#[test]
fn how_flags_go_together_is_left_to_the_command_line() {
    // tls_cert needs tls_key, which a flag may still give; the required token_file too.
    read("tls_cert = \"cert.pem\"", &service()).unwrap();
    // Conflicts between defaults are not checked by clap either.
    read("seven_tiers = true\ntable = [\"T02\"]", &service()).unwrap();
}

#[test]
fn the_environment_plays_no_part_in_reading_the_file() {
    // PATH is always set, and is no number: were it read, the queue would be refused.
    let reads_path = service().mut_arg("queue", |arg| arg.env("PATH"));
    assert!(std::env::var_os("PATH").is_some());
    assert!(read("listen = \"127.0.0.1:9\"", &reads_path).is_ok());
    // with_env names each setting's variable after the service.
    let named = with_env(service());
    let listen = named
        .get_arguments()
        .find(|arg| arg.get_id() == "listen")
        .unwrap();
    assert_eq!(
        listen.get_env().and_then(|e| e.to_str()),
        Some("BANCO_SAMPLE_LISTEN")
    );
}

#[test]
fn the_file_gives_defaults_that_flags_override_and_prints_back_the_same() {
    let text = "listen = \"127.0.0.1:9\"\ntable = [\"T01\", \"T02\"]\ntoken_file = \"keys/t\"\nseven_tiers = false\n";
    let settings = read(text, &service()).unwrap();
    let configured = with_settings(service(), &settings);
    let matches = configured
        .clone()
        .try_get_matches_from(["sample", "--listen", "127.0.0.1:10"])
        .unwrap();
    assert_eq!(
        matches.get_one::<SocketAddr>("listen").unwrap().to_string(),
        "127.0.0.1:10"
    );
    let matches = configured.try_get_matches_from(["sample"]).unwrap();
    let printed = print(&service(), &matches).unwrap();
    assert!(printed.contains("listen = \"127.0.0.1:9\""), "{printed}");
    assert!(printed.contains("subscriber_queue = 1024"), "{printed}");
    assert!(printed.contains("token_file = \"keys/t\""), "{printed}");
    assert!(!printed.contains("config"), "not a setting: {printed}");
    assert!(
        !printed.contains("tls_cert"),
        "no value, not printed: {printed}"
    );

    let again = read(&printed, &service()).unwrap();
    for setting in &settings {
        assert_eq!(values(&again, &setting.key), setting.values, "{printed}");
    }
    let matches = with_settings(service(), &again)
        .try_get_matches_from(["sample"])
        .unwrap();
    assert_eq!(print(&service(), &matches).unwrap(), printed);
}
