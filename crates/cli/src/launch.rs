//! `banco launch`: a one-time link to the player page for one player, as an operator's
//! lobby makes one: the player's token goes to the broadcaster's `POST /launch` with the
//! operator's `service` token, and the broadcaster answers a code good once, for a few
//! minutes; the page exchanges it for the token.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

#[derive(Debug, clap::Args)]
pub(crate) struct LaunchArgs {
    /// The broadcaster that serves the page.
    #[arg(long, default_value = "http://127.0.0.1:7102")]
    server: String,
    /// The operator's token (role service).
    #[arg(long, value_name = "FILE")]
    service_token_file: PathBuf,
    /// The player's token (role player, `banco token issue --role player`).
    #[arg(long, value_name = "FILE")]
    player_token_file: PathBuf,
}

pub(crate) fn run(args: &LaunchArgs) -> anyhow::Result<ExitCode> {
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path)
            .with_context(|| format!("could not read {}", path.display()))
            .map(|t| t.trim().to_owned())
    };
    let service = read(&args.service_token_file)?;
    let player = read(&args.player_token_file)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    let url = runtime.block_on(launch_url(&args.server, &service, &player))?;
    println!("{url}");
    Ok(ExitCode::SUCCESS)
}

/// Asks `server` for a launch code for `player_token`; the page's address with it.
pub async fn launch_url(
    server: &str,
    service_token: &str,
    player_token: &str,
) -> anyhow::Result<String> {
    let Some(authority) = server.strip_prefix("http://") else {
        bail!(
            "--server {server}: give http://HOST:PORT (a launch link over https is made by the \
             operator's own back end with POST /launch)"
        );
    };
    let authority = authority.trim_end_matches('/');
    let body = serde_json::json!({ "player_token": player_token }).to_string();
    let request = format!(
        "POST /launch HTTP/1.1\r\nhost: {authority}\r\nauthorization: Bearer {service_token}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(authority)
        .await
        .with_context(|| format!("could not reach the broadcaster at {authority}"))?;
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .context("the broadcaster's answer is not HTTP")?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    let json: serde_json::Value = serde_json::from_str(body.trim())
        .with_context(|| format!("the broadcaster answered {status}, not JSON: {body}"))?;
    if status != "201" {
        bail!(
            "the broadcaster refused the launch ({status}): {}",
            json["error"].as_str().unwrap_or(body)
        );
    }
    let path = json["path"]
        .as_str()
        .context("the broadcaster's answer has no `path`")?;
    Ok(format!("http://{authority}{path}"))
}
