use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub(crate) struct OddsArgs {}

pub(crate) fn run(_args: &OddsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not built yet")
}
