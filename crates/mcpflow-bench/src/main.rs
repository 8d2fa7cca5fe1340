//! `mcpflow-bench`: mcpflow, rmcp and a hand-written JSON-RPC baseline, side by side.
//!
//! Every measurement ("cell": one system, one transport, one workload, one request
//! layout, one round) runs in a fresh process of this binary (`cell`, hidden); over stdio
//! and http that process starts a fresh server, again this binary (`serve`, hidden).
//! Systems run interleaved within each round, and the table reports medians over rounds,
//! then the targets.
//!
//! ```sh
//! cargo run --release -p mcpflow-bench -- --rounds 3
//! cargo run --release -p mcpflow-bench -- --quick --workload w1,w3 --transport stdio --json
//! cargo run --release -p mcpflow-bench -- --quick --system mcpflow --layout mcpflow,ts
//! ```

mod baseline;
mod baseline_http;
mod cell;
mod common;
mod hostile;
mod http;
mod layout;
mod mcpflow_sys;
mod report;
mod rmcp_sys;

use std::process::Stdio;
use std::time::Duration;

use clap::{Parser, Subcommand};
use rmcp::ServiceExt;
use tokio::io::AsyncReadExt;

use crate::cell::{Measurement, Sizes};
use crate::layout::Layout;

/// Every system, in table order.
const SYSTEMS: [&str; 6] = [
    "baseline",
    "baseline-pipes",
    "mcpflow",
    "mcpflow-2026",
    "rmcp",
    "rmcp-pipes",
];
/// Systems run only when named with `--system`.
const ON_REQUEST: [&str; 1] = ["baseline-pipes"];
/// Systems whose server answers the no-SDK client's layouts only when named with
/// `--system`: those layouts are there to test mcpflow's server, and the baseline's
/// gives each its floor.
const RAW_ON_REQUEST: [&str; 2] = ["rmcp", "rmcp-pipes"];
/// Systems that differ from another only in their client (`mcpflow-2026`: mcpflow's
/// server, its client in the per-request era): they run with their own client only.
const SDK_ONLY: [&str; 1] = ["mcpflow-2026"];
/// Every transport.
const TRANSPORTS: [&str; 3] = ["memory", "stdio", "http"];
/// Every workload.
const WORKLOADS: [&str; 5] = ["w1", "w2", "w3", "w4", "rest"];

/// Benchmark mcpflow against rmcp and a no-SDK JSON-RPC baseline.
#[derive(Debug, Parser)]
#[command(name = "mcpflow-bench", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Rounds; each round runs every selected cell once, systems interleaved.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Divide workload sizes by about 20.
    #[arg(long)]
    quick: bool,
    /// Print one JSON line per measurement (the table then goes to stderr).
    #[arg(long)]
    json: bool,
    /// Only these systems (comma-separated: baseline, mcpflow, mcpflow-2026 (mcpflow's
    /// client in the per-request era), rmcp, rmcp-pipes; and baseline-pipes, the
    /// baseline's server on non-blocking stdio pipes, which runs only when named).
    #[arg(long, value_delimiter = ',')]
    system: Vec<String>,
    /// Only these transports (memory, stdio, http).
    #[arg(long, value_delimiter = ',')]
    transport: Vec<String>,
    /// Only these workloads (w1, w2, w3, w4, rest).
    #[arg(long, value_delimiter = ',')]
    workload: Vec<String>,
    /// Only these request layouts: sdk (each system's own client), mcpflow and ts (the
    /// no-SDK client writing requests as mcpflow's client and as the TypeScript SDK lay
    /// them out, to the system's server; not for `rest`, and for rmcp only when named
    /// with --system).
    #[arg(long, value_delimiter = ',')]
    layout: Vec<String>,
    /// Seconds one cell may run before it is killed and reported as an error.
    #[arg(long, default_value_t = 120)]
    cell_timeout: u64,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the benchmark tools over stdio as `system` (used by the stdio cells), or
    /// with `--http` over streamable HTTP on 127.0.0.1, printing the URL first.
    #[command(hide = true)]
    Serve {
        /// baseline, mcpflow (or mcpflow-2026, the same server), rmcp, or (stdio only)
        /// baseline-pipes or rmcp-pipes.
        system: String,
        /// Serve over HTTP until stdin closes.
        #[arg(long)]
        http: bool,
    },
    /// Run one cell in this process and print its measurement as JSON.
    #[command(hide = true)]
    Cell {
        /// The system.
        #[arg(long)]
        system: String,
        /// The transport.
        #[arg(long)]
        transport: String,
        /// The workload.
        #[arg(long)]
        workload: String,
        /// Who writes the requests: sdk, mcpflow or ts.
        #[arg(long, default_value = "sdk")]
        layout: String,
        /// The round number to report.
        #[arg(long, default_value_t = 1)]
        round: u32,
        /// Quick sizes.
        #[arg(long)]
        quick: bool,
        /// W1 and W2 calls instead of the workload's (scripts/bench-callgrind.sh runs a
        /// cell at two counts, so that the difference leaves out startup).
        #[arg(long)]
        calls: Option<u64>,
    },
    /// Hostile traffic against a streamable HTTP server this command starts: stalled
    /// uploads, slowloris, abandoned sessions, never-read answers. Prints one markdown table.
    Hostile(hostile::HostileArgs),
    /// One `mcpflow serve --http` instance against several behind round robin, sharing a
    /// redis-server: calls/s, latency, errors and Redis commands per call.
    Fleet(hostile::fleet::FleetArgs),
}

fn main() {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcpflow-bench: cannot start the runtime: {e}");
            std::process::exit(2);
        }
    };
    let code = runtime.block_on(async move {
        match cli.command {
            Some(Command::Serve { ref system, http }) => {
                if http {
                    http::serve(system).await
                } else {
                    serve(system).await
                }
            }
            Some(Command::Cell {
                ref system,
                ref transport,
                ref workload,
                ref layout,
                round,
                quick,
                calls,
            }) => {
                let Some(layout) = Layout::parse(layout) else {
                    eprintln!("mcpflow-bench: unknown layout {layout}");
                    return 2;
                };
                let mut sizes = Sizes::new(quick);
                if let Some(calls) = calls {
                    sizes.w1_calls = calls;
                    sizes.w2_calls = calls;
                }
                let m = cell::run_cell(system, transport, workload, layout, round, sizes).await;
                match serde_json::to_string(&m) {
                    Ok(line) => {
                        println!("{line}");
                        0
                    }
                    Err(e) => {
                        eprintln!("mcpflow-bench: {e}");
                        1
                    }
                }
            }
            Some(Command::Hostile(args)) => hostile::run(args).await,
            Some(Command::Fleet(ref args)) => match hostile::fleet::run(args).await {
                Ok(rows) => {
                    println!("{}", rows.markdown());
                    0
                }
                Err(e) => {
                    eprintln!("mcpflow-bench fleet: {e}");
                    1
                }
            },
            None => orchestrate(&cli).await,
        }
    });
    // Leave at once: a stdin reader on the blocking pool must not hold the exit.
    std::process::exit(code);
}

async fn serve(system: &str) -> i32 {
    match system {
        "baseline" => baseline::serve(tokio::io::stdin(), tokio::io::stdout()).await,
        "baseline-pipes" => match baseline::stdio_pipes() {
            Ok((stdin, stdout)) => baseline::serve(stdin, stdout).await,
            Err(e) => {
                eprintln!("mcpflow-bench serve {system}: {e}");
                return 1;
            }
        },
        "mcpflow" | "mcpflow-2026" => {
            mcpflow_sys::server()
                .serve(mcpflow::transport::stdio::stdio())
                .wait()
                .await;
        }
        "rmcp" | "rmcp-pipes" => {
            let server = rmcp_sys::RmcpServer::default();
            let running = if system == "rmcp" {
                server.serve(rmcp::transport::stdio()).await
            } else {
                server.serve(rmcp::transport::stdio_pipes()).await
            };
            match running {
                Ok(service) => {
                    let _ = service.waiting().await;
                }
                Err(e) => {
                    eprintln!("mcpflow-bench serve {system}: {e}");
                    return 1;
                }
            }
        }
        other => {
            eprintln!("mcpflow-bench: unknown system {other}");
            return 2;
        }
    }
    0
}

fn selected<'a>(all: &[&'a str], filter: &[String]) -> Vec<&'a str> {
    all.iter()
        .copied()
        .filter(|name| filter.is_empty() || filter.iter().any(|f| f == name))
        .collect()
}

async fn orchestrate(cli: &Cli) -> i32 {
    let mut systems = selected(&SYSTEMS, &cli.system);
    if cli.system.is_empty() {
        systems.retain(|s| !ON_REQUEST.contains(s));
    }
    let transports = selected(&TRANSPORTS, &cli.transport);
    let workloads = selected(&WORKLOADS, &cli.workload);
    let names = Layout::ALL.map(Layout::name);
    let layouts: Vec<Layout> = selected(&names, &cli.layout)
        .into_iter()
        .filter_map(Layout::parse)
        .collect();
    if systems.is_empty() || transports.is_empty() || workloads.is_empty() || layouts.is_empty() {
        eprintln!("mcpflow-bench: the filters select nothing");
        return 2;
    }
    let runs = |system: &str, transport: &str, workload: &str, layout: Layout| {
        (transport == "stdio" || !system.ends_with("-pipes"))
            && (layout == Layout::Sdk
                || (workload != "rest"
                    && !SDK_ONLY.contains(&system)
                    && (!RAW_ON_REQUEST.contains(&system)
                        || cli.system.iter().any(|s| s == system))))
    };
    let mut results = Vec::new();
    for round in 1..=cli.rounds {
        for &transport in &transports {
            for &workload in &workloads {
                let mut order: Vec<(&str, Layout)> = layouts
                    .iter()
                    .flat_map(|&layout| systems.iter().map(move |&system| (system, layout)))
                    .filter(|&(system, layout)| runs(system, transport, workload, layout))
                    .collect();
                if !order.is_empty() {
                    let shift = (round as usize - 1) % order.len();
                    order.rotate_left(shift);
                }
                for (system, layout) in order {
                    let m = run_cell_process(cli, system, transport, workload, layout, round).await;
                    if cli.json {
                        match serde_json::to_string(&m) {
                            Ok(line) => println!("{line}"),
                            Err(e) => eprintln!("mcpflow-bench: {e}"),
                        }
                    }
                    eprintln!("{}", report::progress_line(&m));
                    results.push(m);
                }
            }
        }
    }
    let mut report = report::table(&results, &systems, &transports, &workloads, &layouts);
    report.push('\n');
    report.push_str(&report::targets(&results));
    if cli.json {
        eprintln!("{report}");
    } else {
        println!("{report}");
    }
    0
}

async fn run_cell_process(
    cli: &Cli,
    system: &str,
    transport: &str,
    workload: &str,
    layout: Layout,
    round: u32,
) -> Measurement {
    let failed = |error: String| Measurement {
        system: system.to_owned(),
        transport: transport.to_owned(),
        workload: workload.to_owned(),
        layout: layout.name().to_owned(),
        round,
        error: Some(error),
        ..Measurement::default()
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return failed(format!("cannot find this executable: {e}")),
    };
    let mut command = tokio::process::Command::new(exe);
    command
        .args(["cell", "--system", system, "--transport", transport])
        .args(["--workload", workload, "--layout", layout.name()])
        .args(["--round", &round.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if cli.quick {
        command.arg("--quick");
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return failed(format!("cannot start the cell: {e}")),
    };
    let Some(mut stdout) = child.stdout.take() else {
        return failed("the cell's stdout is missing".to_owned());
    };
    let run = async {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out).await;
        let status = child.wait().await;
        (out, status)
    };
    match tokio::time::timeout(Duration::from_secs(cli.cell_timeout), run).await {
        Ok((out, status)) => {
            let line = out.lines().rev().find(|l| l.starts_with('{'));
            match line.map(serde_json::from_str::<Measurement>) {
                Some(Ok(m)) => m,
                Some(Err(e)) => failed(format!("unreadable cell output: {e}")),
                None => failed(format!("the cell printed nothing ({status:?})")),
            }
        }
        Err(_) => failed(format!(
            "the cell did not finish within {} s and was killed",
            cli.cell_timeout
        )),
    }
}
