//! Medians over rounds, ratios, and the Markdown table.

use std::fmt::Write as _;

use crate::cell::Measurement;

/// One line on stderr per finished cell.
pub fn progress_line(m: &Measurement) -> String {
    let mut line = format!(
        "round {} {:<6} {:<4} {:<10}",
        m.round, m.transport, m.workload, m.system
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

/// The Markdown table of medians. `×baseline` and `×rmcp` are cost ratios (time per
/// call, W3 time, anonymous RSS at rest): 1.50× means 1.5 times the cost, below 1 means cheaper.
pub fn table(
    results: &[Measurement],
    systems: &[&str],
    transports: &[&str],
    workloads: &[&str],
) -> String {
    let mut out = String::new();
    out.push_str(
        "| transport | workload | system | calls/s | p50 µs | p99 µs | time ms | delivered before return | in order | peak RSS KiB | RSS KiB | anon KiB | cost ×baseline | cost ×rmcp | peak RSS ×baseline | ok/runs |\n",
    );
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|\n");
    for &transport in transports {
        for &workload in workloads {
            let summary_of = |system: &str| {
                let ms: Vec<&Measurement> = results
                    .iter()
                    .filter(|m| {
                        m.system == system && m.transport == transport && m.workload == workload
                    })
                    .collect();
                (!ms.is_empty()).then(|| (Summary::of(&ms), ms.len()))
            };
            let base = summary_of("baseline").map(|(s, _)| s);
            let rmcp = summary_of("rmcp").map(|(s, _)| s);
            for &system in systems {
                let Some((s, runs)) = summary_of(system) else {
                    continue;
                };
                let cost = s.cost(workload);
                let base_cost = base.as_ref().and_then(|b| b.cost(workload));
                let rmcp_cost = rmcp.as_ref().and_then(|r| r.cost(workload));
                let _ = writeln!(
                    out,
                    "| {transport} | {workload} | {system} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}/{}{} |",
                    opt(s.calls_per_s, 0),
                    opt(s.p50_us, 1),
                    opt(s.p99_us, 1),
                    opt(s.time_ms, 1),
                    opt(s.delivered, 0),
                    s.all_in_order.map_or("–", |b| if b { "yes" } else { "no" }),
                    opt(s.peak_rss_kib, 0),
                    opt(s.rss_kib, 0),
                    opt(s.rss_anon_kib, 0),
                    ratio(cost, base_cost),
                    ratio(cost, rmcp_cost),
                    ratio(s.peak_rss_kib, base.as_ref().and_then(|b| b.peak_rss_kib)),
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
    out
}
