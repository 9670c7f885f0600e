//! How numbers read in the report: medians, thousands, ratios, verdicts.

/// The median of the finite `values` (NaN when there are none).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// `value` with `decimals` decimals; whole numbers with their thousands apart; "—" when not measured.
pub(crate) fn num(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return "—".to_owned();
    }
    if decimals == 0 {
        // Thousands separated by a thin space, for readability.
        let digits = format!("{:.0}", value);
        let (sign, digits) = digits
            .strip_prefix('-')
            .map_or(("", digits.as_str()), |d| ("-", d));
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push('\u{202f}');
            }
            out.push(c);
        }
        return format!("{sign}{out}");
    }
    format!("{value:.decimals$}")
}

/// A ratio: `0.97×`.
pub(crate) fn times(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.2}×")
    } else {
        "—".to_owned()
    }
}

/// A share as a percentage: `4.2%`.
pub(crate) fn percent(share: f64) -> String {
    if share.is_finite() {
        format!("{:.1}%", share * 100.0)
    } else {
        "—".to_owned()
    }
}

/// Whether a target was met; `None`: not measured.
pub(crate) fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**not met**",
        None => "not measured",
    }
}

/// `measured` with its verdict, for a cell of a targets table.
pub(crate) fn judged(measured: String, met: Option<bool>) -> String {
    match met {
        Some(_) => format!("{measured} {}", verdict(met)),
        None => verdict(None).to_owned(),
    }
}
