//! `make demo`: start the bridge, print what it is; with CURSOR_API_KEY, the account and models.
//!
//! Usage: demo [--model ID] [PROMPT]

use std::io::Write;
use std::process::ExitCode;

use cursor_sdk::{Client, ClientOptions, RunStatus};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut model = "composer-2".to_string();
    let mut prompt: Option<String> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--model" => model = args.next().unwrap_or(model),
            _ => prompt = Some(a),
        }
    }
    match run(&model, prompt.as_deref()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(model: &str, prompt: Option<&str>) -> cursor_sdk::Result<ExitCode> {
    let client = Client::new(ClientOptions {
        eager: true,
        ..ClientOptions::default()
    })?;
    let v = client.version()?;
    println!(
        "bridge    {} (pid {})",
        v.bridge_version,
        client.bridge_pid().unwrap_or(0)
    );
    println!("protocol  {}", v.protocol_version);
    println!("features  {}", v.capabilities.join(", "));

    if client.api_key().is_none() {
        println!();
        println!("No CURSOR_API_KEY set, so nothing more to show.");
        println!("Create a key at https://cursor.com/dashboard (Integrations → API keys), then:");
        println!("    CURSOR_API_KEY=... make demo PROMPT=\"Say hi\"");
        return Ok(ExitCode::SUCCESS);
    }

    // Offline (or with a dummy key) the catalog is unreachable: say so and still try the run.
    let mut catalog_ok = true;
    match client.me(None) {
        Ok(me) => println!("account   {} <{}>", me.api_key_name, me.user_email),
        Err(e) => {
            catalog_ok = false;
            println!("account   unavailable: {e}");
        }
    }
    match client.models(None) {
        Ok(models) => println!(
            "models    {}",
            models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>().join(", ")
        ),
        Err(e) => {
            catalog_ok = false;
            println!("models    unavailable: {e}");
        }
    }
    let Some(prompt) = prompt else {
        return Ok(if catalog_ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    };
    println!("\n> {prompt}   (model {model})\n");
    let agent = client.create_agent_json(Some(&serde_json::json!({ "model": model }).to_string()))?;
    let run = agent.send_text(prompt)?;
    for chunk in run.text_chunks() {
        print!("{}", chunk?);
        let _ = std::io::stdout().flush();
    }
    let result = run.wait()?;
    let _ = agent.close();
    println!();
    match result.status {
        RunStatus::Finished => Ok(ExitCode::SUCCESS),
        status => {
            let why = result.error_message.unwrap_or_else(|| "no reason given".into());
            eprintln!("run {}: {why}", status.name());
            Ok(ExitCode::FAILURE)
        }
    }
}
