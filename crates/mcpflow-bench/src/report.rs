//! Medians over rounds, ratios, the Markdown table, and the targets.

use std::fmt::Write as _;

use crate::cell::Measurement;
use crate::layout::Layout;

/// One line on stderr per finished cell.
pub fn progress_line(m: &Measurement) -> String {
    let mut line = format!(
        "round {} {:<6} {:<4} {:<14} {:<7}",
        m.round, m.transport, m.workload, m.system, m.layout
    );
    if let Some(e) = &m.error {
        let _ = write!(line, " ERROR: {e}");
        return line;
    }
    if let Some(v) = m.calls_per_s {
        let _ = write!(line, " {v:.0} calls/s");
    }
    if let Some(v) = m.p50_us {
        let _ = write!(line, " p50 {v:.1} µs");
    }
    if let Some(v) = m.p99_us {
        let _ = write!(line, " p99 {v:.1} µs");
    }
    if m.workload == "w3"
        && let Some(v) = m.time_ms
    {
        let _ = write!(line, " {v:.1} ms");
    }
    if let Some(v) = m.delivered_before_return {
        let _ = write!(line, " delivered {v}");
    }
    if let Some(v) = m.in_order {
        let _ = write!(line, " in_order {v}");
    }
    if let Some(v) = m.peak_rss_kib {
        let _ = write!(line, " peak {v} KiB");
    }
    if let Some(v) = m.rss_kib {
        let _ = write!(line, " rss {v} KiB");
    }
    if let Some(v) = m.rss_anon_kib {
        let _ = write!(line, " anon {v} KiB");
    }
    line
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Medians of one system's successful rounds in one (transport, workload).
#[derive(Debug, Default, Clone)]
struct Summary {
    calls_per_s: Option<f64>,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    time_ms: Option<f64>,
    delivered: Option<f64>,
    all_in_order: Option<bool>,
    /// Successful runs with every notification handled in order before return (W3).
    in_order_runs: usize,
    peak_rss_kib: Option<f64>,
    rss_kib: Option<f64>,
    rss_anon_kib: Option<f64>,
    ok: usize,
    errors: Vec<String>,
}

impl Summary {
    fn of(ms: &[&Measurement]) -> Summary {
        let ok: Vec<&&Measurement> = ms.iter().filter(|m| m.error.is_none()).collect();
        let pick =
            |f: fn(&Measurement) -> Option<f64>| median(ok.iter().filter_map(|m| f(m)).collect());
        let orders: Vec<bool> = ok.iter().filter_map(|m| m.in_order).collect();
        Summary {
            calls_per_s: pick(|m| m.calls_per_s),
            p50_us: pick(|m| m.p50_us),
            p99_us: pick(|m| m.p99_us),
            time_ms: pick(|m| m.time_ms),
            delivered: pick(|m| m.delivered_before_return.map(|v| v as f64)),
            all_in_order: (!orders.is_empty()).then(|| orders.iter().all(|&b| b)),
            in_order_runs: orders.iter().filter(|&&b| b).count(),
            peak_rss_kib: pick(|m| m.peak_rss_kib.map(|v| v as f64)),
            rss_kib: pick(|m| m.rss_kib.map(|v| v as f64)),
            rss_anon_kib: pick(|m| m.rss_anon_kib.map(|v| v as f64)),
            ok: ok.len(),
            errors: ms.iter().filter_map(|m| m.error.clone()).collect(),
        }
    }

    /// What the workload costs: lower is better (seconds per call, ms, KiB).
    fn cost(&self, workload: &str) -> Option<f64> {
        match workload {
            "w1" | "w2" | "w4" => self.calls_per_s.filter(|&v| v > 0.0).map(|v| 1.0 / v),
            "w3" => self.time_ms,
            "rest" => self.rss_anon_kib.or(self.rss_kib),
            _ => None,
        }
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".to_owned(),
    }
}

/// The measurements of one run, looked up by cell.
struct Cells<'a>(&'a [Measurement]);

impl Cells<'_> {
    /// The summary of one cell's rounds, and how many rounds ran.
    fn get(
        &self,
        system: &str,
        layout: &str,
        transport: &str,
        workload: &str,
    ) -> Option<(Summary, usize)> {
        let ms: Vec<&Measurement> = self
            .0
            .iter()
            .filter(|m| {
                m.system == system
                    && m.layout == layout
                    && m.transport == transport
                    && m.workload == workload
            })
            .collect();
        (!ms.is_empty()).then(|| (Summary::of(&ms), ms.len()))
    }

    /// `system`'s cost over `other`'s in one cell (both in `layout`).
    fn cost_ratio(
        &self,
        (system, other): (&str, &str),
        layout: &str,
        transport: &str,
        workload: &str,
    ) -> Option<f64> {
        let cost = |system| {
            self.get(system, layout, transport, workload)?
                .0
                .cost(workload)
        };
        Some(cost(system)? / cost(other).filter(|&c| c > 0.0)?)
    }

    /// mcpflow's cost in `layout` over its cost in `other`, in one cell.
    fn layout_ratio(
        &self,
        system: &str,
        (layout, other): (&str, &str),
        transport: &str,
        workload: &str,
    ) -> Option<f64> {
        let cost = |layout| {
            self.get(system, layout, transport, workload)?
                .0
                .cost(workload)
        };
        Some(cost(layout)? / cost(other).filter(|&c| c > 0.0)?)
    }
}

/// The Markdown table of medians. `×baseline` and `×rmcp` are cost ratios (time per
/// call, W3 time, anonymous RSS at rest) to that system's server answering the same
/// client layout: 1.50× means 1.5 times the cost, below 1 means cheaper. `×mcpflow
/// layout`, on `ts` rows, is the cost over the same server's with the same client
/// writing mcpflow's layout.
pub fn table(
    results: &[Measurement],
    systems: &[&str],
    transports: &[&str],
    workloads: &[&str],
    layouts: &[Layout],
) -> String {
    let cells = Cells(results);
    let mut out = String::new();
    out.push_str(
        "| transport | workload | system | layout | calls/s | p50 µs | p99 µs | time ms | delivered before return | in order | peak RSS KiB | RSS KiB | anon KiB | cost ×baseline | cost ×rmcp | peak RSS ×baseline | cost ×mcpflow layout | ok/runs |\n",
    );
    out.push_str(
        "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for &transport in transports {
        for &workload in workloads {
            for layout in layouts.iter().map(|l| l.name()) {
                let base = cells
                    .get("baseline", layout, transport, workload)
                    .map(|(s, _)| s);
                for &system in systems {
                    let Some((s, runs)) = cells.get(system, layout, transport, workload) else {
                        continue;
                    };
                    let vs = |other| cells.cost_ratio((system, other), layout, transport, workload);
                    let vs_layout = (layout == Layout::Ts.name())
                        .then(|| {
                            let names = (layout, Layout::Mcpflow.name());
                            cells.layout_ratio(system, names, transport, workload)
                        })
                        .flatten();
                    let _ = writeln!(
                        out,
                        "| {transport} | {workload} | {system} | {layout} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}/{}{} |",
                        opt(s.calls_per_s, 0),
                        opt(s.p50_us, 1),
                        opt(s.p99_us, 1),
                        opt(s.time_ms, 1),
                        opt(s.delivered, 0),
                        s.all_in_order.map_or("–", |b| if b { "yes" } else { "no" }),
                        opt(s.peak_rss_kib, 0),
                        opt(s.rss_kib, 0),
                        opt(s.rss_anon_kib, 0),
                        times(vs("baseline")),
                        times(vs("rmcp")),
                        ratio(s.peak_rss_kib, base.as_ref().and_then(|b| b.peak_rss_kib)),
                        times(vs_layout),
                        s.ok,
                        runs,
                        s.errors
                            .first()
                            .map(|e| format!(" ({})", e.replace('|', "/")))
                            .unwrap_or_default(),
                    );
                }
            }
        }
    }
    out
}

fn times(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}×"))
}

/// Time targets: mcpflow's cost at most this many times the baseline's.
const COST_TARGETS: [(&str, &str, f64); 10] = [
    ("w1", "memory", 1.2),
    ("w1", "stdio", 1.3),
    ("w1", "http", 1.3),
    ("w2", "memory", 1.5),
    ("w2", "stdio", 1.5),
    ("w2", "http", 1.5),
    ("w3", "memory", 2.0),
    ("w3", "stdio", 2.0),
    ("w4", "memory", 1.2),
    ("w4", "stdio", 1.2),
];
/// mcpflow's per-request era (`mcpflow-2026`) over this transport in these workloads:
/// at least this fraction of the handshake path's (`mcpflow`'s) calls per second.
const PER_REQUEST_TARGET: (&str, [&str; 2], f64) = ("http", ["w1", "w2"], 0.8);
/// W4 peak RSS: mcpflow's at most this many times the baseline's.
const PEAK_RSS_TARGET: (&str, [&str; 2], f64) = ("w4", ["memory", "stdio"], 1.2);
/// Anonymous RSS at rest, at most (MiB).
const REST_MIB: f64 = 5.0;
/// mcpflow's server answering the TypeScript SDK's layout, at most this many times its
/// cost answering its own, from the same client.
const LAYOUT_TARGET: f64 = 1.1;
/// Every transport and workload the targets look at.
const TRANSPORTS: [&str; 3] = ["memory", "stdio", "http"];
const WORKLOADS: [&str; 5] = ["w1", "w2", "w3", "w4", "rest"];

/// One row of the targets table; `met` is `None` when a cell it needs did not run.
fn target_row(out: &mut String, target: &str, transport: &str, figure: &str, met: Option<bool>) {
    let met = match met {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "–",
    };
    let _ = writeln!(out, "| {target} | {transport} | {figure} | {met} |");
}

/// The highest of some ratios and the cell it is from, as `1.04× (w2)`.
fn worst(ratios: &[(String, f64)]) -> Option<(String, f64)> {
    let (cell, v) = ratios.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some((format!("{v:.2}× ({cell})"), *v))
}

/// The targets, each with mcpflow's figure in this run (medians over rounds) and
/// whether it is met. Cells that did not run leave their target unmarked.
pub fn targets(results: &[Measurement]) -> String {
    let cells = Cells(results);
    let sdk = Layout::Sdk.name();
    let mut out = String::from("| target | transport | figure | met |\n|---|---|---|---|\n");
    for (workload, transport, limit) in COST_TARGETS {
        let target = if workload == "w3" {
            format!("{workload} ≤ {limit}× baseline, every notification in order before return")
        } else {
            format!("{workload} ≤ {limit}× baseline")
        };
        let ratio = cells.cost_ratio(("mcpflow", "baseline"), sdk, transport, workload);
        let Some(ratio) = ratio else {
            target_row(&mut out, &target, transport, "not run", None);
            continue;
        };
        let mut figure = format!("{ratio:.2}×");
        let mut met = ratio <= limit;
        if workload == "w3"
            && let Some((s, runs)) = cells.get("mcpflow", sdk, transport, workload)
        {
            let _ = write!(figure, ", in order in {} of {runs} runs", s.in_order_runs);
            met &= s.in_order_runs == runs;
        }
        target_row(&mut out, &target, transport, &figure, Some(met));
    }
    let (transport, workloads, floor) = PER_REQUEST_TARGET;
    for workload in workloads {
        let target =
            format!("{workload}: 2026 per-request calls at ≥ {floor}× the handshake path's rate");
        // Calls per second over the handshake path's: its time per call over ours.
        match cells.cost_ratio(("mcpflow", "mcpflow-2026"), sdk, transport, workload) {
            Some(r) => {
                let figure = format!("{r:.2}×");
                target_row(&mut out, &target, transport, &figure, Some(r >= floor));
            }
            None => target_row(&mut out, &target, transport, "not run", None),
        }
    }
    let (workload, transports, limit) = PEAK_RSS_TARGET;
    for transport in transports {
        let peak = |system| cells.get(system, sdk, transport, workload)?.0.peak_rss_kib;
        let target = format!("{workload} peak RSS ≤ {limit}× baseline");
        match (peak("mcpflow"), peak("baseline")) {
            (Some(a), Some(b)) if b > 0.0 => {
                let figure = format!("{:.2}× ({:.1} MiB)", a / b, a / 1024.0);
                target_row(&mut out, &target, transport, &figure, Some(a / b <= limit));
            }
            _ => target_row(&mut out, &target, transport, "not run", None),
        }
    }
    for transport in TRANSPORTS {
        let target = format!("anonymous RSS at rest ≤ {REST_MIB} MiB");
        match cells
            .get("mcpflow", sdk, transport, "rest")
            .and_then(|(s, _)| s.rss_anon_kib)
        {
            Some(kib) => {
                let mib = kib / 1024.0;
                let figure = format!("{mib:.2} MiB");
                target_row(&mut out, &target, transport, &figure, Some(mib <= REST_MIB));
            }
            None => target_row(&mut out, &target, transport, "not run", None),
        }
    }
    for transport in TRANSPORTS {
        let mut ratios = Vec::new();
        for rmcp in ["rmcp", "rmcp-pipes"] {
            for workload in WORKLOADS {
                if let Some(r) = cells.cost_ratio(("mcpflow", rmcp), sdk, transport, workload) {
                    ratios.push((format!("{workload} against {rmcp}"), r));
                }
            }
            let peak = |system| cells.get(system, sdk, transport, "w4")?.0.peak_rss_kib;
            if let (Some(a), Some(b)) = (peak("mcpflow"), peak(rmcp))
                && b > 0.0
            {
                ratios.push((format!("w4 peak RSS against {rmcp}"), a / b));
            }
        }
        let target = "ahead of rmcp: cost < 1× rmcp's on every cell";
        match worst(&ratios) {
            Some((figure, v)) => {
                let figure = format!("worst {figure}");
                target_row(&mut out, target, transport, &figure, Some(v < 1.0));
            }
            None => target_row(&mut out, target, transport, "not run", None),
        }
    }
    let layouts = (Layout::Ts.name(), Layout::Mcpflow.name());
    for transport in TRANSPORTS {
        let ratios = |system| {
            let mut ratios = Vec::new();
            for workload in ["w1", "w2", "w3", "w4"] {
                if let Some(r) = cells.layout_ratio(system, layouts, transport, workload) {
                    ratios.push((workload.to_owned(), r));
                }
            }
            worst(&ratios)
        };
        let target = format!(
            "server answering the TypeScript SDK's layout ≤ {LAYOUT_TARGET}× its cost answering mcpflow's (same client)"
        );
        match ratios("mcpflow") {
            Some((figure, v)) => {
                let mut figure = format!("worst {figure}");
                if let Some((base, _)) = ratios("baseline") {
                    let _ = write!(figure, "; the baseline's server: worst {base}");
                }
                let met = v <= LAYOUT_TARGET;
                target_row(&mut out, &target, transport, &figure, Some(met));
            }
            None => target_row(&mut out, &target, transport, "not run", None),
        }
    }
    out
}
