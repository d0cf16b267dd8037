//! Writes the book's command-line reference (`cargo xtask docs` runs this): to the path
//! given, or to standard output without one.

use std::process::ExitCode;

fn main() -> ExitCode {
    let page = banco::docs::cli_reference();
    match std::env::args_os().nth(1) {
        None => {
            print!("{page}");
            ExitCode::SUCCESS
        }
        Some(path) => match std::fs::write(&path, page) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!(
                    "cli_reference: could not write {}: {err}",
                    path.to_string_lossy()
                );
                ExitCode::FAILURE
            }
        },
    }
}
