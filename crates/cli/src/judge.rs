use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub(crate) struct JudgeArgs {}

pub(crate) fn run(_args: &JudgeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not built yet")
}
