//! `banco-bench validator`: RulesService in this process on `127.0.0.1:0`, with a fresh
//! key and a service token, then `--requests` CheckCard calls from `--concurrency` clients.

use std::time::Instant;

use anyhow::{bail, ensure};
use banco_auth::Role;
use banco_wire::pb;
use banco_wire::pb::rules_service_client::RulesServiceClient;
use tokio::task::JoinSet;

use super::common::{connect, keys, percentiles, start_validator, token};

pub(super) async fn bench_validator(requests: usize, concurrency: usize) -> anyhow::Result<()> {
    ensure!(requests > 0, "--requests must be at least 1");
    ensure!(concurrency > 0, "--concurrency must be at least 1");
    let issuer = keys()?;
    let (addr, stop) = start_validator(&issuer).await?;
    let channel = connect(addr).await?;
    let service = token(&issuer, Role::Service, "bench")?;
    // A shoe with a burn and two hands out, and a hand of two cards: a realistic question.
    let request = pb::CheckCardRequest {
        shoe: Some(pb::check_card_request::Shoe::Seen(pb::SeenCards {
            decks: 8,
            cards: ["7C", "KD", "2H", "9S", "QS", "4D", "AH", "8C", "TC", "3S"]
                .map(String::from)
                .to_vec(),
        })),
        hand: vec!["5H".into(), "6D".into()],
        card: "9H".into(),
    };
    let mut client = RulesServiceClient::with_interceptor(channel.clone(), service.clone());
    for _ in 0..200 {
        client.check_card(request.clone()).await?;
    }

    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for worker in 0..concurrency {
        let share = requests / concurrency + usize::from(worker < requests % concurrency);
        let mut client = RulesServiceClient::with_interceptor(channel.clone(), service.clone());
        let request = request.clone();
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(share);
            for _ in 0..share {
                let sent = Instant::now();
                let answer = client.check_card(request.clone()).await?.into_inner();
                latencies.push(sent.elapsed());
                // Player 5 H + Banker 6 D, then 9H to Player: Banker's card is due next.
                if !answer.accepted || answer.due() != pb::Due::BankerCard {
                    bail!("unexpected answer: {answer:?}");
                }
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies = Vec::with_capacity(requests);
    while let Some(done) = tasks.join_next().await {
        latencies.extend(done??);
    }
    let elapsed = started.elapsed();
    let _ = stop.send(());
    ensure!(
        latencies.len() == requests,
        "{} answers to {requests} calls",
        latencies.len()
    );
    println!(
        "banco-bench validator: {requests} CheckCard calls, concurrency {concurrency}, in {:.3} s: \
         {:.0} calls/s; latency {}",
        elapsed.as_secs_f64(),
        requests as f64 / elapsed.as_secs_f64(),
        percentiles(&mut latencies)
    );
    Ok(())
}
