//! # banco-config
//!
//! The settings of banco's services (`banco validator`, `broadcaster`, `archive`,
//! `stream`) from four places, each overriding the one before: the flags' defaults < a
//! TOML file (`--config`) < `BANCO_<SERVICE>_<KEY>` environment variables < flags.
//! `--print-config` prints the result as TOML that `--config` reads back.
//!
//! A key is a flag's long name with `_` for `-` (`--public-key` is `public_key`, and
//! `BANCO_BROADCASTER_PUBLIC_KEY`). The file's values become the flags' defaults, so clap
//! itself applies the order above and reports where each value came from.
//!
//! Everything here is pure: [`read`] takes the file's text and the service's clap
//! [`Command`], so that a fuzz target can drive it; the `banco` binary only finds the file,
//! reads it and reports the errors.
//!
//! - [`read`]: the file's text into [`Setting`]s, each key known and each value accepted by
//!   its flag's own parser, or a [`ConfigError`] naming the key.
//! - [`with_settings`]: a service's command with those settings as its flags' defaults.
//! - [`with_env`]: a `BANCO_<SERVICE>_<KEY>` variable on every setting.
//! - [`check_conflicts`]: a key refused when a flag it conflicts with is also in effect
//!   (clap never checks defaults).
//! - [`print`]: the effective settings of parsed arguments, as TOML.

use clap::{Arg, ArgAction, Command};

mod conflicts;
mod env;
mod error;
mod print;
mod read;

pub use conflicts::check_conflicts;
pub use env::with_env;
pub use error::{ConfigError, PrintError};
pub use print::print;
pub use read::{Setting, read};

/// Flags that are not settings.
const NOT_SETTINGS: [&str; 4] = ["help", "version", "config", "print_config"];

/// How a flag takes its value, which decides what a key may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One value.
    One,
    /// A repeatable flag: a list (or one value).
    Many,
    /// A flag without a value: `true` or `false`.
    Switch,
}

fn shape(arg: &Arg) -> Option<Shape> {
    match arg.get_action() {
        ArgAction::Set => Some(Shape::One),
        ArgAction::Append => Some(Shape::Many),
        ArgAction::SetTrue | ArgAction::SetFalse => Some(Shape::Switch),
        _ => None,
    }
}

/// The TOML key of a flag, if it is a setting.
fn key_of(arg: &Arg) -> Option<String> {
    let long = arg.get_long()?;
    let id = arg.get_id().as_str();
    shape(arg)?;
    (!NOT_SETTINGS.contains(&id)).then(|| long.replace('-', "_"))
}

/// `service` with `settings` (from [`read`] on the same command) as its flags' defaults:
/// the environment and the command line still override them, and a flag the file gives is
/// no longer required.
#[must_use]
pub fn with_settings(mut service: Command, settings: &[Setting]) -> Command {
    for setting in settings {
        service = service.mut_arg(&setting.id, |arg| {
            arg.default_values(&setting.values).required(false)
        });
    }
    service
}
