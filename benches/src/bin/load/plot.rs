//! The report's plot (`--plot <file.png>`): for each algorithm, decisions per second and p99 latency against
//! the number of tasks, for the annotated fn, the plain API and the baseline (medians over the rounds).
//!
//! Text is drawn with DejaVu Sans, read from where Debian installs it (package `fonts-dejavu-core`): without
//! it the plot is skipped, and the report says so.

use std::collections::BTreeMap;
use std::path::Path;

use limiter_runtime::Algorithm;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::contender::Contender;
use crate::report::Report;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// The contenders drawn, and their colours.
const LINES: [(Contender, RGBColor); 3] = [
    (Contender::Annotated, RGBColor(0xd6, 0x27, 0x28)),
    (Contender::Plain, RGBColor(0x1f, 0x77, 0xb4)),
    (Contender::Baseline, RGBColor(0x55, 0x55, 0x55)),
];

/// Draws `report` into `path` (PNG).
pub(crate) fn draw(report: &Report, path: &Path) -> Result<(), String> {
    let font = std::fs::read(FONT)
        .map_err(|e| format!("no font at {FONT} ({e}): install fonts-dejavu-core"))?;
    register_font(
        "sans-serif",
        FontStyle::Normal,
        Box::leak(font.into_boxed_slice()),
    )
    .map_err(|_| "the font does not load".to_owned())?;
    let algorithms: Vec<Algorithm> = report.options.algorithms.clone();
    let root =
        BitMapBackend::new(path, (340 * algorithms.len() as u32 + 40, 660)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let title = format!(
        "limiter on Redis: decisions/s and p99 against tasks ({})",
        report.machine.summary()
    );
    let root = root
        .titled(&title, ("sans-serif", 18))
        .map_err(|e| e.to_string())?;
    let panels = root.split_evenly((2, algorithms.len()));
    for (column, algorithm) in algorithms.iter().enumerate() {
        let series = |metric: fn(f64, f64) -> f64| -> Vec<(Contender, Vec<(f64, f64)>)> {
            LINES
                .iter()
                .map(|&(contender, _)| (contender, report.medians(contender, *algorithm, metric)))
                .collect()
        };
        let throughput = series(|rps, _| rps / 1_000.0);
        let latency = series(|_, p99| p99);
        chart(
            &panels[column],
            &format!("{} — thousand decisions/s", algorithm.name()),
            &throughput,
        )?;
        chart(
            &panels[algorithms.len() + column],
            &format!("{} — p99, µs", algorithm.name()),
            &latency,
        )?;
    }
    root.present().map_err(|e| e.to_string())
}

/// One panel: a line per contender, tasks (log scale) across.
fn chart(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    series: &[(Contender, Vec<(f64, f64)>)],
) -> Result<(), String> {
    let points = series.iter().flat_map(|(_, points)| points);
    let (x_max, y_max) = points.fold((1.0f64, 0.0f64), |(x, y), &(px, py)| (x.max(px), y.max(py)));
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(44)
        .build_cartesian_2d((1.0f64..x_max * 1.2).log_scale(), 0.0f64..y_max * 1.15)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("tasks")
        .x_labels(6)
        .x_label_formatter(&|tasks| format!("{tasks:.0}"))
        .y_labels(6)
        .y_label_formatter(&|value| format!("{value:.0}"))
        .label_style(("sans-serif", 11))
        .draw()
        .map_err(|e| e.to_string())?;
    for (contender, points) in series {
        let colour = LINES
            .iter()
            .find(|(c, _)| c == contender)
            .map_or(BLACK, |(_, colour)| *colour);
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(contender.label())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2)));
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&point| Circle::new(point, 3, colour.filled())),
            )
            .map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 11))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| e.to_string())
}

/// Medians over rounds, by number of tasks.
pub(crate) fn medians(values: impl Iterator<Item = (usize, f64)>) -> Vec<(f64, f64)> {
    let mut by_tasks: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for (tasks, value) in values {
        by_tasks.entry(tasks).or_default().push(value);
    }
    by_tasks
        .into_iter()
        .map(|(tasks, mut values)| {
            values.sort_by(f64::total_cmp);
            (tasks as f64, values[values.len() / 2])
        })
        .collect()
}
