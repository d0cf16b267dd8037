//! `BANCO_<SERVICE>_<KEY>` environment variables.

use clap::Command;

/// `BANCO_<SERVICE>_<KEY>` on every setting of `service` that has no variable of its
/// own (`BANCO_LOG_FORMAT` is shared by every service). `BANCO_<SERVICE>_CONFIG` names the
/// file.
#[must_use]
pub fn with_env(service: Command) -> Command {
    let prefix = format!("BANCO_{}_", service.get_name().to_ascii_uppercase());
    service.mut_args(|arg| {
        let Some(long) = arg.get_long() else {
            return arg;
        };
        if arg.get_env().is_some() || ["help", "version", "print-config"].contains(&long) {
            return arg;
        }
        let name = format!("{prefix}{}", long.replace('-', "_").to_ascii_uppercase());
        arg.env(name)
    })
}
