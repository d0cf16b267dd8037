//! The book's command-line reference is what the clap command of `banco` says: a flag
//! added, renamed or re-documented without the page regenerated fails here.

use std::path::Path;

#[test]
fn the_committed_cli_reference_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(banco::docs::CLI_REFERENCE_PATH);
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "{} could not be read ({err}): run `cargo xtask docs` to write it",
            banco::docs::CLI_REFERENCE_PATH
        )
    });
    let generated = banco::docs::cli_reference();
    if committed == generated {
        return;
    }
    let differs = committed
        .lines()
        .zip(generated.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
    let line = |text: &str| {
        text.lines()
            .nth(differs)
            .unwrap_or("(end of page)")
            .to_owned()
    };
    panic!(
        "{} is out of date: run `cargo xtask docs` and commit it.\n\
         first difference at line {}:\n  committed: {}\n  generated: {}",
        banco::docs::CLI_REFERENCE_PATH,
        differs + 1,
        line(&committed),
        line(&generated),
    );
}
