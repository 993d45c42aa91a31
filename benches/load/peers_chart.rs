//! The chart of the side-by-side comparison (issue 60): `target/peers.svg`, one group of bars per
//! request phase, one bar per peer, its height the requests per second on a logarithmic axis.

use plotters::prelude::*;
use std::error::Error;
use std::path::Path;

/// The colours of the peers, in the order of their columns.
const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(152, 223, 138),
    RGBColor(148, 103, 189),
];

/// Draws `rates[peer][phase]` (requests per second) as grouped bars into `path`.
pub fn draw(path: &Path, phases: &[&str], peers: &[&str], rates: &[Vec<f64>]) -> Result<(), Box<dyn Error>> {
    let root = SVGBackend::new(path, (1100, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = rates.iter().flatten().fold(1.0f64, |a, b| a.max(*b)) * 2.0;
    let mut chart = ChartBuilder::on(&root)
        .caption("requests per second, side by side (one run, 2 cores)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        // Group i centred on x = i, where its label is.
        .build_cartesian_2d(-0.5f64..phases.len() as f64 - 0.5, (1f64..top).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(phases.len() + 1)
        .x_label_formatter(&|x| {
            let centred = (x - x.round()).abs() < 0.01 && *x >= 0.0;
            let phase = centred.then(|| phases.get(x.round() as usize)).flatten();
            phase.map(|p| p.to_string()).unwrap_or_default()
        })
        .y_desc("requests/s")
        .draw()?;
    let width = 0.8 / peers.len() as f64;
    for (p, (name, color)) in peers.iter().zip(COLORS.iter().cycle()).enumerate() {
        let bars = rates[p].iter().enumerate().map(|(phase, rate)| {
            let left = phase as f64 - 0.4 + p as f64 * width;
            Rectangle::new([(left, 1.0), (left + width * 0.9, rate.max(1.0))], color.filled())
        });
        chart
            .draw_series(bars)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}
