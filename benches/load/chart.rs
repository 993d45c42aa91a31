//! The chart of how costs grow (issue 36): `target/scale.svg`, drawn with plotters from the
//! figures the scale and watcher benches write beside it (`scale-memory.csv`, `scale-etcd.csv`,
//! `watchers.csv`), whichever are there. One panel a cost, the size on a logarithmic axis:
//! 1k → 10k → 100k → 1M llamas (memory and etcd storage), 100 → 1,000 → 10,000 watchers
//! (HTTP/2 and HTTP/1.1).

use plotters::prelude::*;
use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};

/// One CSV file: its rows, each a map from column to value.
type Table = Vec<BTreeMap<String, String>>;

/// A line of a panel: its name, colour and points.
struct Line {
    name: String,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

/// A panel: its title, the x axis's name, whether y is logarithmic, its lines, and where its
/// legend goes (where the lines leave room).
struct Panel {
    title: &'static str,
    x: &'static str,
    log_y: bool,
    lines: Vec<Line>,
    legend: SeriesLabelPosition,
}

const MEMORY: RGBColor = RGBColor(31, 119, 180);
const ETCD: RGBColor = RGBColor(214, 39, 40);
const HTTP2: RGBColor = RGBColor(44, 160, 44);
const HTTP1: RGBColor = RGBColor(148, 103, 189);

fn read(folder: &Path, name: &str) -> Table {
    let Ok(text) = std::fs::read_to_string(folder.join(name)) else { return Vec::new() };
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    lines.map(|line| header.iter().map(|h| h.to_string()).zip(line.split(',').map(str::to_string)).collect()).collect()
}

/// The points (`x`, `y`) of `table`'s rows that `keep` keeps.
fn points(table: &Table, x: &str, y: &str, keep: impl Fn(&BTreeMap<String, String>) -> bool) -> Vec<(f64, f64)> {
    let number = |row: &BTreeMap<String, String>, column: &str| row.get(column)?.parse::<f64>().ok();
    table.iter().filter(|r| keep(r)).filter_map(|r| Some((number(r, x)?, number(r, y)?))).collect()
}

/// The panels of the scale figures: one line per storage that has figures.
fn scale_panels(folder: &Path) -> Vec<Panel> {
    let storages = [("memory", MEMORY), ("etcd", ETCD)].map(|(s, c)| (s, c, read(folder, &format!("scale-{s}.csv"))));
    let panel = |title, column: &'static str, log_y, legend| Panel {
        title,
        x: "llamas stored",
        log_y,
        legend,
        lines: storages
            .iter()
            .map(|(storage, color, table)| Line {
                name: storage.to_string(),
                color: *color,
                points: points(table, "llamas", column, |_| true),
            })
            .collect(),
    };
    use SeriesLabelPosition::{LowerRight, MiddleLeft, UpperLeft, UpperRight};
    vec![
        panel("RSS per llama (bytes)", "rss_bytes_per_llama", true, UpperRight),
        panel("creates per second", "create_per_s", false, MiddleLeft),
        panel("GETs of one llama per second", "get_per_s", false, MiddleLeft),
        panel("continued limit=500 page, p50 (ms)", "page_p50_ms", false, LowerRight),
        panel("whole list, paged by 500 (s)", "paged_list_s", true, UpperLeft),
        panel("LIST with a selector per second", "selector_list_per_s", true, UpperRight),
    ]
}

/// The panels of the watcher figures: one line per transport.
fn watcher_panels(folder: &Path) -> Vec<Panel> {
    let table = read(folder, "watchers.csv");
    let panel = |title, column: &'static str, legend| Panel {
        title,
        x: "watchers",
        log_y: false,
        legend,
        lines: [("HTTP/2", HTTP2), ("HTTP/1.1", HTTP1)]
            .into_iter()
            .map(|(transport, color)| Line {
                name: transport.to_string(),
                color,
                points: points(&table, "watchers", column, |r| r.get("transport").is_some_and(|t| t == transport)),
            })
            .collect(),
    };
    vec![
        panel("watch fan-out p99 (ms)", "p99_ms", SeriesLabelPosition::UpperLeft),
        panel("memory in use per idle watcher (bytes)", "heap_bytes_per_watcher", SeriesLabelPosition::MiddleRight),
    ]
}

/// The range of `values` on an axis, with room around it.
fn range(values: impl Iterator<Item = f64> + Clone, log: bool) -> std::ops::Range<f64> {
    let min = values.clone().fold(f64::INFINITY, f64::min);
    let max = values.fold(f64::NEG_INFINITY, f64::max);
    if log { min / 1.5..max * 1.5 } else { 0.0..max * 1.15 }
}

fn draw_panel(area: &DrawingArea<SVGBackend, plotters::coord::Shift>, panel: &Panel) -> Result<(), Box<dyn Error>> {
    let all = || panel.lines.iter().flat_map(|l| l.points.iter());
    let x = range(all().map(|p| p.0), true);
    let y = range(all().map(|p| p.1), panel.log_y);
    let mut builder = ChartBuilder::on(area);
    builder.caption(panel.title, ("sans-serif", 16)).margin(12).x_label_area_size(32).y_label_area_size(56);
    let label = |v: &f64| human(*v);
    macro_rules! plot {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart.configure_mesh().x_desc(panel.x).x_label_formatter(&label).y_label_formatter(&label).draw()?;
            for line in panel.lines.iter().filter(|l| !l.points.is_empty()) {
                let color = line.color;
                chart.draw_series(LineSeries::new(line.points.clone(), color.stroke_width(2)))?;
                chart
                    .draw_series(line.points.iter().map(|p| Circle::new(*p, 3, color.filled())))?
                    .label(line.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            }
            chart
                .configure_series_labels()
                .position(panel.legend.clone())
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }};
    }
    if panel.log_y {
        plot!(builder.build_cartesian_2d(x.log_scale(), y.log_scale())?);
    } else {
        plot!(builder.build_cartesian_2d(x.log_scale(), y)?);
    }
    Ok(())
}

/// `value` as an axis label: 1k, 10k, 1M, or the number.
fn human(value: f64) -> String {
    match value.abs() {
        v if v >= 1e6 && (value / 1e6).fract() == 0.0 => format!("{}M", value / 1e6),
        v if v >= 1e3 && (value / 1e3).fract() == 0.0 => format!("{}k", value / 1e3),
        v if v >= 100.0 => format!("{value:.0}"),
        _ => format!("{value:.3}").trim_end_matches('0').trim_end_matches('.').to_string(),
    }
}

/// Draws `folder/scale.svg` from the figures in `folder`; an error when there are none.
pub fn draw(folder: &Path) -> Result<PathBuf, Box<dyn Error>> {
    let panels: Vec<Panel> = scale_panels(folder)
        .into_iter()
        .chain(watcher_panels(folder))
        .filter(|p| p.lines.iter().any(|l| !l.points.is_empty()))
        .collect();
    if panels.is_empty() {
        return Err("no figures yet (run BENCH_ONLY=scale or BENCH_ONLY=watchers)".into());
    }
    let path = folder.join("scale.svg");
    let columns = 4;
    let rows = panels.len().div_ceil(columns);
    {
        let root = SVGBackend::new(&path, (1600, 400 * rows as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        for (area, panel) in root.split_evenly((rows, columns)).iter().zip(&panels) {
            draw_panel(area, panel)?;
        }
        root.present()?;
    }
    Ok(path)
}
