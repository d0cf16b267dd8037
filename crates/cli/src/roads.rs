use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub(crate) struct RoadsArgs {}

pub(crate) fn run(_args: &RoadsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not built yet")
}
